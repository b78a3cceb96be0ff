import type { AdapterV1, Outcome } from '@retrysafe/contract';
import type { SandboxBehaviour } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

// An adapter built without the frame that ignores its AbortSignal and never answers: the runner must stop waiting
// once the run's budget (maxElapsed) is over, as for any unknown outcome, and free the operation.
const OP = 'records.create';
const NEVER = () => new Promise<never>(() => {});
const policy = { maxElapsedMs: 300 };

const env = (behaviour: Partial<SandboxBehaviour>) => {
  const { adapter: inner, ...rest } = setup(behaviour, { policy });
  return { inner, ...rest };
};

/** The request reaches the provider (it commits), then the answer never comes, whatever the signal says. */
function hangsAfterSending(inner: AdapterV1, late?: { answer: (o: Outcome) => void }): AdapterV1 {
  let calls = 0;
  return {
    ...inner,
    doExecute: async (op, params, ctx) => {
      const { signal: _ignored, ...rest } = ctx;
      const answer = await inner.doExecute(op, params, rest);
      if (++calls > 1) return answer;
      if (late) return new Promise<Outcome>((resolve) => (late.answer = resolve));
      return NEVER();
    },
  };
}

describe('a provider call that never settles', () => {
  it('the runner stops waiting after the budget, records unknown, looks it up and adopts the one record', async () => {
    const { provider, inner, ledger, runner } = env({ replays: false, retentionMs: null });
    const r = await runner.run(hangsAfterSending(inner), OP, { params: { ref: 'hang-1' } });
    expect(r).toMatchObject({ status: 'done', adopted: true });
    expect(provider.count()).toBe(1);
    const [rec] = await ledger.list();
    expect(rec).toMatchObject({ state: 'succeeded', leaseOwner: null });
    const receipts = await ledger.receipts(r.businessOperationId);
    expect(receipts.map((x) => [x.kind, x.outcome, x.code])).toEqual([
      ['dispatch', 'unknown', 'RETRYSAFE_CALL_DEADLINE'],
      ['lookup', 'found', undefined],
    ]);
  }, 5000);

  it('without a lookup it is handed to a person as unknown, the lease given back', async () => {
    const { provider, inner, ledger, runner } = env({ lookup: 'none', replays: false, retentionMs: null });
    const r = await runner.run(hangsAfterSending(inner), OP, { params: { ref: 'hang-2' } });
    expect(r).toMatchObject({ status: 'handed-off', packet: { reason: 'unknown-no-safe-resend' } });
    expect(provider.count()).toBe(1);
    const [rec] = await ledger.list();
    expect(rec).toMatchObject({ state: 'handed-off', leaseOwner: null });
  }, 5000);

  it('an answer that comes after the runner stopped waiting changes nothing in the ledger', async () => {
    const { inner, ledger, runner } = env({ lookup: 'none', replays: false, retentionMs: null });
    const late = { answer: (_: Outcome) => {} };
    const r = await runner.run(hangsAfterSending(inner, late), OP, { params: { ref: 'hang-3' } });
    expect(r.status).toBe('handed-off');
    const before = [await ledger.list(), await ledger.receipts(r.businessOperationId)];
    late.answer({ kind: 'succeeded', result: { id: 'late' }, providerRef: 'late' });
    await new Promise((done) => setTimeout(done, 20));
    expect([await ledger.list(), await ledger.receipts(r.businessOperationId)]).toEqual(before);
  }, 5000);

  it('a lookup that never settles is cannot-tell: the run ends in a handoff instead of waiting for ever', async () => {
    const { provider, inner, ledger, runner } = env({ replays: false, retentionMs: null });
    provider.failNext({ kind: 'unknown-after-commit' });
    const adapter: AdapterV1 = { ...inner, doLookup: () => NEVER() };
    const r = await runner.run(adapter, OP, { params: { ref: 'hang-4' } });
    expect(r).toMatchObject({ status: 'handed-off' });
    expect(provider.count()).toBe(1);
    const [rec] = await ledger.list();
    expect(rec).toMatchObject({ state: 'handed-off', leaseOwner: null });
  }, 5000);

  it("the adapter's signal aborts when the runner stops waiting", async () => {
    const { inner, runner } = env({ lookup: 'none', replays: false, retentionMs: null });
    const signals: AbortSignal[] = [];
    const adapter: AdapterV1 = { ...inner, doExecute: (_op, _params, ctx) => (signals.push(ctx.signal!), NEVER()) };
    const r = await runner.run(adapter, OP, { params: { ref: 'hang-5' } });
    expect(r.status).toBe('handed-off');
    expect(signals.map((x) => x.aborted)).toEqual([true]);
  }, 5000);

  it("the caller's abort ends the wait at once, long before the budget: the call is unknown, handed off", async () => {
    const behaviour = { lookup: 'none', replays: false, retentionMs: null } as const;
    const { adapter: inner, ledger, runner } = setup(behaviour, { policy: { maxElapsedMs: 600_000 } });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('the caller gave up')), 20);
    const r = await runner.run(hangsAfterSending(inner), OP, { params: { ref: 'hang-6' }, signal: controller.signal });
    expect(r).toMatchObject({ status: 'handed-off', packet: { reason: 'unknown-no-safe-resend' } });
    const receipts = await ledger.receipts(r.businessOperationId);
    expect(receipts.map((x) => [x.kind, x.outcome, x.code])).toEqual([['dispatch', 'unknown', 'ABORTED']]);
  }, 5000);
});
