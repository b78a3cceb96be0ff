import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { asBusinessOperationId, LedgerError, type ProviderKey } from '@retrysafe/contract';
import { createSqliteLedger, RunnerConfigurationError } from '@retrysafe/core';
import { ledgerSuite } from '@retrysafe/core/ledger-suite';

const dir = mkdtempSync(join(tmpdir(), 'retrysafe-sqlite-'));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

ledgerSuite({ name: 'sqlite', create: () => createSqliteLedger({ path: join(dir, `suite-${++n}.db`) }) });

describe('sqlite ledger specifics', () => {
  it('keeps records and receipts across close and reopen (durable file, WAL)', async () => {
    const path = join(dir, 'reopen.db');
    const a = createSqliteLedger({ path });
    const id = asBusinessOperationId('reopen-1');
    const c = await a.claim({ businessOperationId: id, provider: 'p', operation: 'p.op', intentFingerprint: 'i', paramsFingerprint: 'f', params: { x: 1 }, providerKey: 'k' as ProviderKey, owner: 'w', leaseMs: 1000, now: 1 });
    if (c.kind !== 'claimed') throw new Error('claim failed');
    await a.markDispatched({ businessOperationId: id, fence: 1 }, 2);
    await a.close();
    const b = createSqliteLedger({ path });
    expect(await b.get(id)).toMatchObject({ state: 'dispatched', attemptCount: 1, firstDispatchedAt: 2, params: { x: 1 } });
    expect((await b.recoverCandidates(5000)).map((r) => r.businessOperationId)).toEqual([id]);
    await b.close();
  });

  it('bad options and unopenable files are typed errors', () => {
    expect(() => createSqliteLedger({ path: '' })).toThrow(RunnerConfigurationError);
    expect(() => createSqliteLedger({ path: join(dir, 'x.db'), synchronous: 'OFF' as 'FULL' })).toThrow(RunnerConfigurationError);
    expect(() => createSqliteLedger({ path: join(dir, 'no', 'such', 'dir', 'x.db') })).toThrow(LedgerError);
  });
});
