// Round 14: behaviours docs/concepts.md and docs/runbook.md promise, each held to a test of the whole runner.

import {
  type AdapterV1,
  ConflictError,
  type Duration,
  fact,
  LeaseExpiredError,
  type RetrySafetyCard,
} from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock, type LogEntry, pruneLedger } from '@retrysafe/core';
import {
  createSandboxAdapter,
  createSandboxProvider,
  REPLAYING_BEHAVIOUR,
  sandboxCreateCard,
} from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { pauseAfter, setup } from './helpers.js';

const OP = 'records.create';

/** The sandbox adapter with its card's storedResult.includesErrors set to `value`. */
function storingErrors(adapter: AdapterV1, value: boolean | 'unknown'): AdapterV1 {
  const spec = adapter.operations[OP]!;
  const includesErrors = { value, source: 'test: what the provider stores under a key' };
  const unverified =
    value === 'unknown'
      ? [...spec.card.unverified, { field: 'storedResult.includesErrors', condition: 'not documented', source: 'test' }]
      : spec.card.unverified;
  const storedResult = { ...spec.card.storedResult, includesErrors };
  const card = { ...spec.card, storedResult, unverified } as RetrySafetyCard;
  return { ...adapter, operations: { ...adapter.operations, [OP]: { ...spec, card } } } as AdapterV1;
}

describe('runbook, paused workers: no send with less than a tenth of the lease (at most 2 s) left', () => {
  const cases: ReadonlyArray<readonly [string, number, number, boolean]> = [
    ['30 s lease, 1.5 s left (under the 2 s cap)', 30_000, 28_500, false],
    ['30 s lease, 2.5 s left', 30_000, 27_500, true],
    ['1 s lease, 50 ms left (under a tenth)', 1000, 950, false],
    ['1 s lease, 150 ms left', 1000, 850, true],
  ];
  for (const [name, leaseMs, pauseMs, sends] of cases) {
    it(`${name}: ${sends ? 'sends' : 'LeaseExpiredError, nothing sent, lease-expired-before-send logged'}`, async () => {
      const clock = createVirtualClock();
      const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now, sleep: clock.sleep });
      const logs: LogEntry[] = [];
      const runner = createRunner({
        ledger: pauseAfter(createMemoryLedger(), 'claim', clock, pauseMs),
        clock,
        random: () => 0.5,
        logger: (e) => void logs.push(e),
        policy: { leaseMs },
      });
      const r = await runner
        .run(createSandboxAdapter({ provider }), OP, { params: { ref: `pause-${leaseMs}-${pauseMs}` } })
        .catch((e: unknown) => e);
      if (sends) {
        expect(r).toMatchObject({ status: 'done' });
        expect(provider.count()).toBe(1);
      } else {
        expect(LeaseExpiredError.isInstance(r)).toBe(true);
        expect(provider.calls()).toBe(0);
        expect(logs.map((l) => l.event)).toContain('lease-expired-before-send');
      }
    });
  }
});

describe('concepts, the 5xx row: a 5xx the card says is stored', () => {
  it("hands off without a same-key re-send, and the packet's resume says why it is not safe", async () => {
    const { provider, adapter, runner } = setup({ lookup: 'none' });
    const a = storingErrors(adapter, true);
    provider.failNext({ kind: 'unknown-after-commit' });
    const r = await runner.run(a, OP, { params: { ref: 'stored-500' } });
    expect(provider.calls()).toBe(1);
    expect(r.status).toBe('handed-off');
    const resume = r.status === 'handed-off' ? r.packet.safeNextActions.find((x) => x.action === 'resume') : null;
    expect(resume?.safe).toBe(false);
    expect(resume?.why).toMatch(/would only replay that error/);
  });
});

describe('concepts, supersede: a revision gets a key of its own where the card says errors are stored', () => {
  it('includesErrors unknown counts as stored: the revision is sent under a new provider key', async () => {
    const { provider, adapter, ledger, runner } = setup();
    const a = storingErrors(adapter, 'unknown');
    provider.failNext({ kind: 'rejected' });
    const first = await runner.run(a, OP, { params: { ref: 'rev-unknown', note: 'bad' } });
    expect(first.status).toBe('handed-off');
    const fixed = await runner.run(a, OP, { params: { ref: 'rev-unknown', note: 'good' } });
    expect(fixed.status).toBe('done');
    const keys = (await ledger.receipts(first.businessOperationId))
      .filter((r) => r.kind === 'dispatch')
      .map((r) => r.providerKey);
    expect(keys).toHaveLength(2);
    expect(keys[1]).not.toBe(keys[0]);
    expect(provider.count()).toBe(1);
  });

  it('after calls that were all not-applied the key is kept; the adapter is told the revision its key was derived for', async () => {
    const { provider, adapter, ledger, runner } = setup({}, { policy: { maxAttempts: 1 } });
    const a = storingErrors(adapter, 'unknown');
    const seen: [string | null, number | undefined][] = [];
    const watched = {
      ...a,
      doExecute: (op, params, ctx) => (seen.push([ctx.providerKey, ctx.keyRevision]), a.doExecute(op, params, ctx)),
    } as AdapterV1;
    const call = (note: string) => runner.run(watched, OP, { params: { ref: 'rev-kept', note } });
    provider.failNext({ kind: 'rejected' });
    expect((await call('one')).status).toBe('handed-off'); // revision 1: rejected
    provider.failNext({ kind: 'not-applied' });
    expect((await call('two')).status).toBe('handed-off'); // revision 2: a key of its own, throttled
    provider.failNext({ kind: 'not-applied' });
    expect((await call('three')).status).toBe('handed-off'); // revision 3: revision 2's key, throttled
    const fourth = await call('four'); // revision 4: revision 2's key
    expect(fourth.status).toBe('done');
    const [k1, k2, k3, k4] = seen.map(([key]) => key);
    expect(k2).not.toBe(k1);
    expect(k3).toBe(k2);
    expect(k4).toBe(k2);
    expect(seen.map(([, revision]) => revision)).toEqual([undefined, 2, 2, 2]);
    const reasons = (await ledger.receipts(fourth.businessOperationId))
      .filter((r) => r.decision.action === 'supersede')
      .map((r) => r.decision.reason.replace(/^revision (\d).*; (\w+) provider key.*$/, '$1 $2'));
    expect(reasons).toEqual(['2 new', '3 same', '4 same']);
    expect(provider.count()).toBe(1);
  });

  it('a rejection after a not-applied call under the same key takes no key of its own: a person decides', async () => {
    // The not-applied call may have landed (a same-key re-send folds it); the rejection may come before the key store
    const { provider, adapter, runner } = setup({}, { policy: { maxAttempts: 1 } });
    const call = (note: string) =>
      runner.run(storingErrors(adapter, 'unknown'), OP, { params: { ref: 'rev-doubt', note } });
    provider.failNext({ kind: 'not-applied' });
    expect((await call('one')).status).toBe('handed-off');
    provider.failNext({ kind: 'rejected' });
    const second = await call('two');
    expect(second.status === 'handed-off' && second.packet.safeNextActions.map((x) => x.action)).toEqual([
      'resume',
      'mark-done',
      'abandon',
    ]);
    const third = await call('three').catch((e: unknown) => e);
    expect(ConflictError.isInstance(third) && third.needsPerson).toBe(true);
    expect(provider.calls()).toBe(2);
  });
});

describe('runbook, --abandon: later calls with the same business operation get the old handoff back', () => {
  it('and send nothing', async () => {
    const { provider, adapter, runner } = setup();
    provider.failNext({ kind: 'rejected' });
    const first = await runner.run(adapter, OP, { params: { ref: 'abandoned-1' } });
    expect(first.status).toBe('handed-off');
    await runner.resolve(first.businessOperationId, { action: 'abandon' }, { by: 'alice' });
    const again = await runner.run(adapter, OP, { params: { ref: 'abandoned-1' } });
    expect(again.status).toBe('handed-off');
    expect(again.status === 'handed-off' && again.packet.reason).toBe('rejected');
    expect(again.businessOperationId).toBe(first.businessOperationId);
    expect(provider.calls()).toBe(1);
  });
});

describe("retention.md: prune's floor is the longest key retention plus that card's clock-skew margin and late-apply allowance", () => {
  const card = (retention: Duration | null | 'unknown', operation: string, margin?: Duration): RetrySafetyCard => {
    const base = sandboxCreateCard(REPLAYING_BEHAVIOUR);
    const limits = margin ? { ...base.limits, clockSkewMargin: margin } : base.limits;
    return { ...base, operation, limits, retention: { minimum: fact(retention as Duration, 'test') } };
  };
  const H = 3_600_000;
  const cards = [
    card('24h', 'a.day'),
    card('48h', 'b.two-days', '10m'),
    card(null, 'c.none'),
    card('unknown', 'd.unknown'),
  ];

  it('refuses below it (naming the card), accepts at it; a null or unknown retention sets none', async () => {
    const ledger = createMemoryLedger();
    // The late-apply bound is unknown on these cards: it counts as one more margin.
    const floor = 48 * H + 2 * 10 * 60_000;
    await expect(pruneLedger(ledger, { olderThan: floor - 1, cards })).rejects.toThrow(/b\.two-days/);
    expect(await pruneLedger(ledger, { olderThan: floor, cards })).toMatchObject({
      floor: { ms: floor, card: 'b.two-days', forced: false },
    });
    expect((await pruneLedger(ledger, { olderThan: 0, cards: cards.slice(2) })).floor).toMatchObject({
      ms: 0,
      card: null,
    });
  });
});
