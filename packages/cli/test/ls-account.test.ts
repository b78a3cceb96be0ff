import { join } from 'node:path';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { claimOf, packetOf } from '@retrysafe/testkit/ledger';
import { expect, it } from 'vitest';
import { cli, cliJson, tempDir } from './helpers.js';

// `ledger show` names an operation's account; the listings an operator scans first must name it too.
it('ledger ls and handoffs name the account an operation was claimed for (text and JSON); none is said for one without', async () => {
  const dir = tempDir('ls-account');
  const db = join(dir, 'retrysafe.db');
  const ledger = createSqliteLedger({ path: db });
  const c = await ledger.claim(claimOf('acct-1', { account: 'portal-eu' }));
  if (c.kind !== 'claimed') throw new Error(c.kind);
  await ledger.handOff(
    { businessOperationId: c.record.businessOperationId, fence: c.record.fence },
    packetOf('acct-1', { explanation: 'test', lastKnown: { outcome: 'unknown' }, safeNextActions: [] }),
    c.record.createdAt,
  );
  await ledger.claim(claimOf('acct-2'));
  await ledger.close();
  const plain = { cwd: dir, env: { NO_COLOR: '1' } };
  const ls = await cli(['ledger', 'ls', '--db', db], plain);
  expect(ls.code, ls.stderr).toBe(0);
  expect(ls.stdout).toMatch(/^business-operation id\s+account\s+state/m);
  expect(ls.stdout).toMatch(/^acct-1\s+portal-eu\s+handed-off/m);
  expect(ls.stdout).toMatch(/^acct-2\s+—\s+/m);
  const rows = (await cliJson(['ledger', 'ls', '--db', db], dir)).body as { businessOperationId: string }[];
  expect(rows.find((r) => r.businessOperationId === 'acct-1')).toMatchObject({ account: 'portal-eu' });
  expect(rows.find((r) => r.businessOperationId === 'acct-2')).not.toHaveProperty('account');
  const handoffs = await cli(['ledger', 'handoffs', '--db', db], plain);
  expect(handoffs.stdout).toMatch(/acct-1 .*\(account portal-eu\)/);
  const held = (await cliJson(['ledger', 'handoffs', '--db', db], dir)).body as unknown[];
  expect(held[0]).toMatchObject({ account: 'portal-eu' });
});

it('ledger ls of a ledger without accounts has no account column', async () => {
  const dir = tempDir('ls-no-account');
  const db = join(dir, 'retrysafe.db');
  const ledger = createSqliteLedger({ path: db });
  await ledger.claim(claimOf('plain-1'));
  await ledger.close();
  const ls = await cli(['ledger', 'ls', '--db', db], { cwd: dir, env: { NO_COLOR: '1' } });
  expect(ls.stdout).toMatch(/^business-operation id\s+state\s+attempts/m);
  expect(ls.stdout).not.toMatch(/account/);
});
