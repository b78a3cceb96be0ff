// The drill reads its own fresh ledger at the end of a scenario: a row it cannot read there is a broken run,
// and must fail the scenario, not leave it `passed` with no runner receipts to check.

import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { asBusinessOperationId, fingerprint, type Ledger, type ProviderKey } from '@retrysafe/contract';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { expect, it } from 'vitest';
import { type Drive, driveScenario } from '../src/drill-drive.js';
import { tempDir } from './fixtures/temp-dir.js';

it('a drill whose own ledger holds a row it cannot read fails the scenario (the outcome alone would pass it)', async () => {
  const path = join(tempDir('rs-drill-cut-'), 'ledger.db');
  const ledgers: Ledger[] = [];
  const makeLedger = () => {
    const l = createSqliteLedger({ path });
    ledgers.push(l);
    return l;
  };
  const id = asBusinessOperationId('sandbox.records.create:cut');
  const claimed = await makeLedger().claim({
    businessOperationId: id,
    provider: 'sandbox',
    operation: 'sandbox.records.create',
    intentFingerprint: fingerprint({ ref: 'cut' }),
    paramsFingerprint: fingerprint({ ref: 'cut' }),
    params: { ref: 'cut' },
    providerKey: 'k-cut' as ProviderKey,
    owner: 'drill',
    leaseMs: 1000,
    now: Date.now(),
  });
  expect(claimed.kind).toBe('claimed');
  const raw = new DatabaseSync(path);
  raw.prepare('UPDATE retrysafe_operations SET record = substr(record, 1, 40) WHERE id = ?').run(id);
  raw.close();
  // A harness whose runner answers `done`: only the drill's closing read of its ledger meets the cut row.
  const h = { ledgers, makeLedger, makeRunner: () => ({ run: async () => ({ status: 'done' }) }) };
  const d: Drive = { outcomes: [], errors: [], failures: [], notes: [], runnerReceipts: [] };
  try {
    await driveScenario(
      h as never,
      { scenario: 'permanent-error', operation: 'op', params: {}, label: 'L' } as never,
      d,
    );
    expect(d.outcomes).toEqual(['done']);
    expect(d.failures).toEqual([
      expect.stringMatching(/^L: the drill could not finish: LedgerError: .*cut or corrupt/),
    ]);
  } finally {
    for (const l of ledgers) await l.close();
  }
});
