// Issue 15 item 4: nothing is claimed that cannot be sent. Every check that can refuse an operation
// (limits every ledger can store and patch, canonical JSON, the redacted copy) runs before the claim:
// a refusal is a typed error with 0 rows written and 0 provider calls, on every ledger.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Ledger, PayloadLimitError, RetrysafeError } from '@retrysafe/contract';
import { PAYLOAD_LIMITS } from '@retrysafe/contract/ledger';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'retrysafe-preclaim-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

/** `{ ref, deep: { a: { a: … } } }` with `levels` nested objects under `deep` (params depth = levels + 1). */
export function nested(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = { leaf: true };
  for (let i = 1; i < levels; i++) v = { a: v };
  return v;
}

const ledgers: Array<[string, () => Ledger]> = [
  ['memory', () => createMemoryLedger()],
  ['sqlite', () => createSqliteLedger({ path: join(dir, `preclaim-${++n}.db`) })],
];

describe.each(ledgers)('pre-claim refusals on the %s ledger', (_name, create) => {
  function setup() {
    const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
    const adapter = createSandboxAdapter({ provider });
    const ledger = create();
    const runner = createRunner({ ledger, random: () => 0.5 });
    return { provider, adapter, ledger, runner };
  }
  const outcome = (p: Promise<unknown>) =>
    p.then(
      (v) => ({ ok: true as const, v }),
      (e: unknown) => ({ ok: false as const, e }),
    );

  for (const depth of [PAYLOAD_LIMITS.maxDepth + 1, 1001, 1500, 100_000]) {
    it(`params nested ${depth} deep: PayloadLimitError, 0 rows, 0 provider calls, and the same again on a second run`, async () => {
      const { provider, adapter, ledger, runner } = setup();
      const params = { ref: `deep-${depth}`, deep: nested(depth - 1) };
      for (let i = 0; i < 2; i++) {
        const r = await outcome(runner.run(adapter, 'records.create', { params }));
        expect(r.ok).toBe(false);
        if (r.ok) return;
        expect(PayloadLimitError.isInstance(r.e)).toBe(true);
        expect(r.e).toMatchObject({
          code: 'RETRYSAFE_PAYLOAD_LIMIT',
          part: 'params',
          limit: 'depth',
          max: PAYLOAD_LIMITS.maxDepth,
        });
      }
      expect(await ledger.list()).toEqual([]);
      expect(provider.calls()).toBe(0);
      expect(await runner.recover({ adapters: [adapter] })).toEqual([]);
    });
  }

  it(`params exactly ${PAYLOAD_LIMITS.maxDepth} deep are stored, patched and finished`, async () => {
    const { provider, adapter, ledger, runner } = setup();
    const r = await runner.run(adapter, 'records.create', {
      params: { ref: 'at-limit', deep: nested(PAYLOAD_LIMITS.maxDepth - 1) },
    });
    expect(r.status).toBe('done');
    expect(provider.count()).toBe(1);
    expect((await ledger.list()).map((x) => x.state)).toEqual(['succeeded']);
  });

  it('an intent nested past the limit (caller-given) is refused the same way', async () => {
    const { provider, adapter, ledger, runner } = setup();
    const r = await outcome(
      runner.run(adapter, 'records.create', { params: { ref: 'deep-intent' }, intent: { deep: nested(5000) } }),
    );
    expect(!r.ok && PayloadLimitError.isInstance(r.e) && r.e.part === 'intent').toBe(true);
    expect(await ledger.list()).toEqual([]);
    expect(provider.calls()).toBe(0);
  });

  it('params over the size limit: PayloadLimitError (bytes), 0 rows, 0 calls', async () => {
    const { provider, adapter, ledger, runner } = setup();
    const r = await outcome(
      runner.run(adapter, 'records.create', { params: { ref: 'big', blob: 'x'.repeat(PAYLOAD_LIMITS.maxBytes) } }),
    );
    expect(!r.ok && PayloadLimitError.isInstance(r.e) && r.e.limit === 'bytes').toBe(true);
    expect(await ledger.list()).toEqual([]);
    expect(provider.calls()).toBe(0);
  });

  it('params with an own __proto__ key (what JSON.parse gives) never leave a row that cannot finish', async () => {
    const { provider, adapter, ledger, runner } = setup();
    const params = JSON.parse('{"ref":"proto-1","meta":{"__proto__":{"polluted":true},"x":1}}') as Record<
      string,
      unknown
    >;
    const first = await outcome(runner.run(adapter, 'records.create', { params }));
    if (first.ok) {
      // The redactor keeps own __proto__ keys as data: the operation simply runs, once.
      expect(first.v).toMatchObject({ status: 'done' });
      expect(provider.count()).toBe(1);
      expect((await ledger.list()).map((x) => x.state)).toEqual(['succeeded']);
    } else {
      // Or it is refused before the claim: typed, nothing written, nothing sent.
      expect(RetrysafeError.isInstance(first.e)).toBe(true);
      expect(await ledger.list()).toEqual([]);
      expect(provider.calls()).toBe(0);
    }
    const again = await outcome(runner.run(adapter, 'records.create', { params }));
    expect(again.ok).toBe(first.ok);
    expect(await runner.recover({ adapters: [adapter] })).toEqual([]);
    expect(provider.count()).toBe(first.ok ? 1 : 0);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
