import { tmpdir } from 'node:os';
import { LedgerError } from '@retrysafe/contract';
import { expect, it, vi } from 'vitest';
import { openLedger } from './index.js';

// A real lock answers only after the ledger's busy timeout; the SQLite ledger's own tests hold one. Here the ledger
// refuses at once, as it does when that timeout runs out.
vi.mock('@retrysafe/ledger-sqlite', () => ({
  createSqliteLedger: () => {
    throw new LedgerError('cannot open SQLite ledger at x: database is locked', { reason: 'busy' });
  },
}));

it('a SQLite ledger another process holds locked is busy (a LedgerError, as the CLI answers it), not bad config', async () => {
  const refused = await openLedger('ledger.db', tmpdir()).catch((e: unknown) => e);
  expect(LedgerError.isInstance(refused) && refused.reason).toBe('busy');
});
