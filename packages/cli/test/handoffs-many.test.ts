import { join } from 'node:path';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { claimOf, packetOf } from '@retrysafe/testkit/ledger';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli, cliJson, tempDir } from './helpers.js';

// More handoffs than one screen: the list must still be the whole list, and its count true.
const dir = tempDir('handoffs-many');
const db = join(dir, 'retrysafe.db');
const N = 1005;

beforeAll(async () => {
  const ledger = createSqliteLedger({ path: db, synchronous: 'NORMAL' });
  for (let i = 0; i < N; i++) {
    const id = `many-${String(i).padStart(4, '0')}`;
    const c = await ledger.claim(claimOf(id, { now: 1_000 + i }));
    if (c.kind !== 'claimed') throw new Error(c.kind);
    await ledger.handOff(
      { businessOperationId: c.record.businessOperationId, fence: c.record.fence },
      packetOf(id),
      2_000 + i,
    );
  }
  await ledger.close();
}, 120_000);

describe('ledger handoffs with more than a thousand waiting', () => {
  it('lists every one and counts them all', async () => {
    const j = await cliJson(['ledger', 'handoffs', '--db', db], dir);
    expect(j.code).toBe(0);
    expect(j.body).toHaveLength(N);
    const text = await cli(['ledger', 'handoffs', '--db', db], { cwd: dir });
    expect(text.stdout.split('\n')[0]).toBe(
      `${N} operations waiting for a person (the runbook: retrysafe help runbook):`,
    );
  }, 120_000);
});
