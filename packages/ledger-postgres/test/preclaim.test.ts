// Issue 15 item 4 on PostgreSQL: a refusal before the claim writes no row and calls no provider.

import { PayloadLimitError, RetrysafeError } from '@retrysafe/contract';
import { PAYLOAD_LIMITS } from '@retrysafe/contract/ledger';
import { createRunner } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { fileLedger } from './pg-test-db.js';

const ledger = fileLedger('preclaim');

function nested(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = { leaf: true };
  for (let i = 1; i < levels; i++) v = { a: v };
  return v;
}
const outcome = (p: Promise<unknown>) =>
  p.then(
    (v) => ({ ok: true as const, v }),
    (e: unknown) => ({ ok: false as const, e }),
  );

describe('pre-claim refusals on the PostgreSQL ledger', () => {
  it.each([PAYLOAD_LIMITS.maxDepth + 1, 1001, 100_000])(
    'params nested %i deep: PayloadLimitError, 0 rows, 0 provider calls',
    async (depth) => {
      const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
      const adapter = createSandboxAdapter({ provider });
      const runner = createRunner({ ledger: ledger(), owner: 'w-pre' });
      const ref = `pg-deep-${depth}`;
      const r = await outcome(runner.run(adapter, 'records.create', { params: { ref, deep: nested(depth - 1) } }));
      expect(!r.ok && PayloadLimitError.isInstance(r.e)).toBe(true);
      expect((await ledger().list()).filter((x) => JSON.stringify(x.params).includes(ref))).toEqual([]);
      expect(provider.calls()).toBe(0);
    },
  );

  it('params with an own __proto__ key: done once, or refused with nothing written', async () => {
    const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
    const adapter = createSandboxAdapter({ provider });
    const runner = createRunner({ ledger: ledger(), owner: 'w-proto' });
    const params = JSON.parse('{"ref":"pg-proto","meta":{"__proto__":{"polluted":true}}}') as Record<string, unknown>;
    const first = await outcome(runner.run(adapter, 'records.create', { params }));
    const rows = (await ledger().list()).filter((x) => (x.params as { ref?: string } | null)?.ref === 'pg-proto');
    if (first.ok) {
      expect(first.v).toMatchObject({ status: 'done' });
      expect(rows.map((x) => x.state)).toEqual(['succeeded']);
      expect(provider.count()).toBe(1);
    } else {
      expect(RetrysafeError.isInstance(first.e)).toBe(true);
      expect(rows).toEqual([]);
      expect(provider.calls()).toBe(0);
    }
    expect((await runner.recover({ adapters: [adapter] })).length).toBe(0);
  });
});
