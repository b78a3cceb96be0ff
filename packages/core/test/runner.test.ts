import {
  type AdapterV1,
  ConflictError,
  InvalidIdError,
  InvalidIntentError,
  InvalidParamsError,
  UnknownOperationError,
  UnsupportedSpecificationVersionError,
} from '@retrysafe/contract';
import { type RunnerOptions, type RunResult, verifyReceiptChain } from '@retrysafe/core';
import type { SandboxBehaviour, SandboxFault } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

const OP = 'records.create';
const params = (ref = 'order-1', extra: Record<string, unknown> = {}) => ({ ref, amount: 100, ...extra });

/** Asserts the run ended in `status` and narrows `r` to that branch (a mismatch fails the test here). */
function expectStatus<S extends RunResult['status']>(
  r: RunResult,
  status: S,
): asserts r is Extract<RunResult, { status: S }> {
  expect(r.status).toBe(status);
}

/** A runner on a sandbox with `behaviour`, `faults` queued, and one run of the order. */
async function runOnce(
  behaviour: Partial<SandboxBehaviour> = {},
  options: Partial<RunnerOptions> = {},
  faults: readonly SandboxFault[] = [],
) {
  const s = setup(behaviour, options);
  for (const f of faults) s.provider.failNext(f);
  return { ...s, r: await s.runner.run(s.adapter, OP, { params: params() }) };
}

type Sandbox = ReturnType<typeof setup>['provider'];
const counts = (provider: Sandbox, r: { attempts: number }) => ({
  records: provider.count(),
  calls: provider.calls(),
  attempts: r.attempts,
});

describe('runner.run with the sandbox: every outcome path, counted exactly', () => {
  it('clean success: 1 record, 1 attempt, not adopted', async () => {
    const { provider, r } = await runOnce();
    expectStatus(r, 'done');
    expect(counts(provider, r)).toEqual({ records: 1, calls: 1, attempts: 1 });
    expect(r.adopted).toBe(false);
    expect(r.providerRef).toBe(provider.records()[0]!.id);
    expect(r.receipts.map((x) => x.kind)).toEqual(['dispatch']);
    expect(verifyReceiptChain(r.receipts)).toEqual({ ok: true });
  });

  it('lost response + replaying provider: 1 record, 2 attempts, result adopted', async () => {
    const { provider, r } = await runOnce({}, {}, [{ kind: 'unknown-after-commit' }]);
    expectStatus(r, 'done');
    expect(counts(provider, r)).toEqual({ records: 1, calls: 2, attempts: 2 });
    expect(r.adopted).toBe(true);
    expect(r.providerRef).toBe(provider.records()[0]!.id);
    expect(r.receipts.map((x) => [x.kind, x.outcome])).toEqual([
      ['dispatch', 'unknown'],
      ['resend', 'replayed'],
    ]);
    expect(new Set(r.receipts.map((x) => x.providerKey)).size).toBe(1);
  });

  it('lost response + provider without replay but with lookup: 1 record, 1 attempt, adopted through the lookup', async () => {
    const { provider, r } = await runOnce({ replays: false, retentionMs: null }, {}, [
      { kind: 'unknown-after-commit' },
    ]);
    expectStatus(r, 'done');
    expect(r.adopted).toBe(true);
    expect(counts(provider, r)).toEqual({ records: 1, calls: 1, attempts: 1 });
    expect(provider.lookups()).toBe(1);
    expect(r.receipts.map((x) => [x.kind, x.outcome])).toEqual([
      ['dispatch', 'unknown'],
      ['lookup', 'found'],
    ]);
  });

  it('unknown before commit + no replay + lookup: lookup says not found, then one bounded retry: 1 record, 2 attempts', async () => {
    const { provider, r } = await runOnce({ replays: false, retentionMs: null, lateApplyMs: 0 }, {}, [
      { kind: 'unknown-before-commit' },
    ]);
    expectStatus(r, 'done');
    expect(r.adopted).toBe(false);
    expect(counts(provider, r)).toEqual({ records: 1, calls: 2, attempts: 2 });
    expect(r.receipts.map((x) => x.outcome)).toEqual(['unknown', 'not-found', 'succeeded']);
  });

  it('lost response + no replay + no lookup: 1 record, 1 attempt, handoff unknown-no-safe-resend (never a blind resend)', async () => {
    const { provider, r, packets } = await runOnce({ replays: false, retentionMs: null, lookup: 'none' }, {}, [
      { kind: 'unknown-after-commit' },
    ]);
    expectStatus(r, 'handed-off');
    expect(counts(provider, r)).toEqual({ records: 1, calls: 1, attempts: 1 });
    expect(r.packet.reason).toBe('unknown-no-safe-resend');
    expect(r.packet.safeNextActions.find((a) => a.action === 'resume')?.safe).toBe(false);
    expect(packets).toEqual([r.packet]);
  });

  it('permanent error: 1 attempt, 0 records, handoff rejected', async () => {
    const { provider, r, ledger } = await runOnce({}, {}, [{ kind: 'rejected', message: 'amount must be positive' }]);
    expectStatus(r, 'handed-off');
    expect(counts(provider, r)).toEqual({ records: 0, calls: 1, attempts: 1 });
    expect(r.packet.reason).toBe('rejected');
    expect(r.packet.lastKnown).toMatchObject({ outcome: 'rejected', status: 400 });
    expect((await ledger.get(r.businessOperationId))!.state).toBe('handed-off');
  });

  it('5 transient failures with max 4: exactly 4 attempts, then handoff retry-exhausted', async () => {
    const transient: SandboxFault = { kind: 'not-applied', retryAfterMs: 1000 };
    const { provider, r } = await runOnce({}, { policy: { maxAttempts: 4 } }, Array(5).fill(transient));
    expectStatus(r, 'handed-off');
    expect(counts(provider, r)).toEqual({ records: 0, calls: 4, attempts: 4 });
    expect(r.packet.reason).toBe('retry-exhausted');
    expect(r.error?.name).toBe('RetryExhaustedError');
    expect(r.error?.attempts).toHaveLength(4);
  });

  it('3 transient failures with max 4: succeeds on the 4th, 1 record, and every wait honoured Retry-After', async () => {
    const transient: SandboxFault = { kind: 'not-applied', retryAfterMs: 2000 };
    const { provider, r, clock } = await runOnce({}, { policy: { maxAttempts: 4 } }, Array(3).fill(transient));
    expectStatus(r, 'done');
    expect(counts(provider, r)).toEqual({ records: 1, calls: 4, attempts: 4 });
    const waits = r.receipts.slice(0, 3).map((x) => x.decision.delayMs);
    expect(waits).toHaveLength(3);
    for (const w of waits) expect(w).toBeGreaterThanOrEqual(2000);
    expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(6000);
  });

  it('lost response, then a 429 on the same-key re-send: the operation stays unknown (not claimed), and still ends with 1 record', async () => {
    const { provider, r, ledger } = await runOnce({}, {}, [
      { kind: 'unknown-after-commit' },
      { kind: 'not-applied', retryAfterMs: 1000 },
    ]);
    expectStatus(r, 'done');
    expect(r.receipts.map((x) => x.outcome)).toEqual(['unknown', 'not-applied', 'replayed']);
    expect(provider.count()).toBe(1);
    expect((await ledger.get(r.businessOperationId))!.state).toBe('succeeded');
  });

  it('Retry-After beyond its cap: stops rather than calling sooner than asked', async () => {
    const { provider, r } = await runOnce({}, { policy: { retryAfterCapMs: 5000 } }, [
      { kind: 'not-applied', retryAfterMs: 60_000 },
    ]);
    expect(r.status === 'handed-off' && r.packet.reason).toBe('retry-exhausted');
    expect(provider.calls()).toBe(1);
  });

  it('in-progress (202 + processing): polls the lookup, never a second work item: 1 record, 1 attempt', async () => {
    const { provider, r } = await runOnce({ processingMs: 3000 });
    expectStatus(r, 'done');
    expect(counts(provider, r)).toEqual({ records: 1, calls: 1, attempts: 1 });
    expect(r.adopted).toBe(true);
    expect(r.receipts[0]!.outcome).toBe('in-progress');
    expect(r.receipts.slice(1).every((x) => x.kind === 'poll')).toBe(true);
    expect(r.receipts.at(-1)!.outcome).toBe('found');
  });

  it('in-progress past the lookup window: handoff in-progress-window-exhausted, still 1 record', async () => {
    const { provider, r } = await runOnce({ processingMs: 600_000 }, { policy: { lookupWindowMs: 10_000 } });
    expect(r.status === 'handed-off' && r.packet.reason).toBe('in-progress-window-exhausted');
    expect({ records: provider.count(), calls: provider.calls() }).toEqual({ records: 1, calls: 1 });
  });

  it('in-progress without lookup, replaying provider: polls by re-sending the same key (409 then replay): 1 record', async () => {
    const { provider, r } = await runOnce({ processingMs: 1500, lookup: 'none' });
    expectStatus(r, 'done');
    expect(provider.count()).toBe(1);
    expect(r.receipts[0]!.outcome).toBe('in-progress');
    expect(r.receipts.at(-1)!.outcome).toBe('replayed');
    expect(r.attempts).toBe(provider.calls());
  });

  it('key past retention, no lookup: handoff key-past-retention, no resend', async () => {
    const { provider, adapter, runner, clock } = setup(
      { retentionMs: 60_000, lookup: 'none' },
      { policy: { maxElapsedMs: 3_600_000, baseMs: 120_000, capMs: 120_000 } },
    );
    // The first send is lost; the clock then moves past the retention before the runner could resend.
    loseFirstAndAge(provider, clock, 61_000);
    const r = await runner.run(adapter, OP, { params: params() });
    expect(r.status === 'handed-off' && r.packet.reason).toBe('key-past-retention');
    expect(provider.count()).toBe(1);
  });

  it('key past retention with lookup: reconciles by lookup, no resend: 1 record, 1 attempt, adopted', async () => {
    const { provider, adapter, runner, clock } = setup({ retentionMs: 60_000 });
    loseFirstAndAge(provider, clock, 61_000);
    const r = await runner.run(adapter, OP, { params: params() });
    expectStatus(r, 'done');
    expect(r.adopted).toBe(true);
    expect(r.attempts).toBe(1);
    expect(provider.count()).toBe(1);
  });

  it('lookup inside the consistency delay: cannot tell, keeps polling, then finds it: 1 record', async () => {
    const { provider, r } = await runOnce({ replays: false, retentionMs: null, lookupDelayMs: 5000 }, {}, [
      { kind: 'unknown-after-commit' },
    ]);
    expectStatus(r, 'done');
    expect(r.adopted).toBe(true);
    expect(provider.count()).toBe(1);
    expect(r.receipts.some((x) => x.outcome === 'cannot-tell')).toBe(true);
  });

  it('a second run of a finished operation adopts the stored result, nothing sent', async () => {
    const { provider, adapter, runner, r: a } = await runOnce();
    const b = await runner.run(adapter, OP, { params: params() });
    expect(provider.calls()).toBe(1);
    expect(b.status === 'done' && b.adopted).toBe(true);
    expect(b.status === 'done' && a.status === 'done' && b.providerRef === a.providerRef).toBe(true);
  });

  it('concurrent runs in one process: one dispatch, both get the same result', async () => {
    const { provider, adapter, runner } = setup();
    const results = await Promise.all([1, 2, 3].map(() => runner.run(adapter, OP, { params: params() })));
    expect({ records: provider.count(), calls: provider.calls() }).toEqual({ records: 1, calls: 1 });
    const refs = new Set(results.map((r) => (r.status === 'done' ? r.providerRef : r.status)));
    expect(refs.size).toBe(1);
    expect(results.filter((r) => r.status === 'done' && !r.adopted)).toHaveLength(1);
  });
});

describe('runner.run: typed errors, nothing sent', () => {
  it('same business-operation id with a different intent: ConflictError(intent)', async () => {
    const { provider, adapter, runner } = setup();
    await runner.run(adapter, OP, { params: params('a'), businessOperationId: 'op-1' });
    const err = await runner.run(adapter, OP, { params: params('b'), businessOperationId: 'op-1' }).catch((e) => e);
    expect(ConflictError.isInstance(err) && err.field).toBe('intent');
    expect(provider.calls()).toBe(1);
  });

  it('same intent, other params: a new revision after a rejection, ConflictError(params) after success; the same params adopt the stored result', async () => {
    const { provider, adapter, runner } = setup();
    provider.failNext({ kind: 'rejected' });
    await runner.run(adapter, OP, { params: params('a', { note: 'x' }) });
    // Rejected = definitely not applied: the corrected request supersedes it (issue 16) instead of a conflict forever.
    const corrected = await runner.run(adapter, OP, { params: params('a', { note: 'y' }) });
    expect(corrected.status).toBe('done');
    expect(provider.calls()).toBe(2);
    const drift = await runner.run(adapter, OP, { params: params('a', { note: 'z' }) }).catch((e) => e);
    expect(ConflictError.isInstance(drift) && drift.field).toBe('params');
    expect(ConflictError.isInstance(drift) && drift.paths).toEqual(['note']);
    const ok = await runner.run(adapter, OP, { params: params('c', { note: 'x' }) });
    // adopting here would tell the caller that their other request had been performed
    const changed = await runner.run(adapter, OP, { params: params('c', { note: 'y' }) }).catch((e) => e);
    expect(ConflictError.isInstance(changed) && changed.field).toBe('params');
    const again = await runner.run(adapter, OP, { params: params('c', { note: 'x' }) });
    expect(
      again.status === 'done' && ok.status === 'done' && again.adopted && again.providerRef === ok.providerRef,
    ).toBe(true);
    expect(provider.calls()).toBe(3);
  });

  it('a rejection that says it created something is never superseded: the corrected request is a conflict naming the object, the packet names it too', async () => {
    const { provider, adapter, runner, packets } = setup();
    // Any adapter's rejection may say what the provider kept (Stripe: a declined create+confirm leaves its PaymentIntent).
    const leaving: AdapterV1 = {
      ...adapter,
      doExecute: async (op, p, ctx) => ({
        ...(await adapter.doExecute(op, p, ctx)),
        kind: 'rejected',
        reason: 'card-declined',
        message: 'declined',
        created: 'obj_left',
      }),
    };
    const first = await runner.run(leaving, OP, { params: params('a', { note: 'x' }) });
    expectStatus(first, 'handed-off');
    expect(first.packet.lastKnown.created).toBe('obj_left');
    expect(first.packet.safeNextActions.map((a) => a.action)).not.toContain('resend-with');
    expect(first.receipts.at(-1)?.created).toBe('obj_left');
    expect(verifyReceiptChain(first.receipts).ok).toBe(true); // `created` is sealed into the receipt's hash
    const corrected = await runner.run(adapter, OP, { params: params('a', { note: 'y' }) }).catch((e) => e);
    expect(ConflictError.isInstance(corrected) && corrected.message).toMatch(/obj_left/);
    expect(provider.calls()).toBe(1);
    expect(packets).toHaveLength(1);
  });

  it('bad input: unknown operation, bad id, missing intent field, unknown spec version', async () => {
    const { provider, adapter, runner } = setup();
    await expect(runner.run(adapter, 'records.delete' as string as typeof OP, { params: params() })).rejects.toSatisfy(
      UnknownOperationError.isInstance,
    );
    await expect(runner.run(adapter, OP, { params: params(), businessOperationId: 'bad id!' })).rejects.toSatisfy(
      InvalidIdError.isInstance,
    );
    // the declared intent field is also required by the params schema: refused before the claim, naming it
    await expect(runner.run(adapter, OP, { params: { amount: 1 } })).rejects.toSatisfy(
      (e) => InvalidParamsError.isInstance(e) && e.fields.some((f) => f.path === 'ref'),
    );
    await expect(runner.run(adapter, OP, { params: { ref: 'x', f: () => 1 } })).rejects.toSatisfy(
      InvalidIntentError.isInstance,
    );
    const v2 = { ...adapter, specificationVersion: 'v2' } as unknown as AdapterV1;
    await expect(runner.run(v2, OP, { params: params() })).rejects.toSatisfy(
      UnsupportedSpecificationVersionError.isInstance,
    );
    expect(provider.calls()).toBe(0);
  });
});

/** The provider commits the first request but its answer is a 500, and `ms` pass before the runner sees it. */
function loseFirstAndAge(
  provider: { execute: (req: never) => Promise<unknown> },
  clock: { advance(ms: number): void },
  ms: number,
): void {
  const original = provider.execute;
  let first = true;
  provider.execute = async (req: never) => {
    const res = await original(req);
    if (!first) return res;
    first = false;
    clock.advance(ms);
    return { type: 'server-error', status: 500, committed: true };
  };
}
