import { join } from 'node:path';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { claimOf } from '@retrysafe/testkit/ledger';
import { expect, it } from 'vitest';
import { cli, cliJson, tempDir } from './helpers.js';

// With adapters of several accounts on one ledger, the operator resolving by hand must see whose operation it is.
it('ledger show names the account an operation was claimed for, and says nothing of one without', async () => {
  const dir = tempDir('show-account');
  const db = join(dir, 'retrysafe.db');
  const ledger = createSqliteLedger({ path: db });
  await ledger.claim(claimOf('acct-1', { account: 'portal-eu' }));
  await ledger.claim(claimOf('acct-2'));
  await ledger.close();
  const text = await cli(['ledger', 'show', 'acct-1', '--db', db], { cwd: dir, env: { NO_COLOR: '1' } });
  expect(text.stdout).toMatch(/^account\s+portal-eu$/m);
  expect((await cliJson(['ledger', 'show', 'acct-1', '--db', db], dir)).body.record.account).toBe('portal-eu');
  const none = await cli(['ledger', 'show', 'acct-2', '--db', db], { cwd: dir, env: { NO_COLOR: '1' } });
  expect(none.stdout).not.toMatch(/^account/m);
});
