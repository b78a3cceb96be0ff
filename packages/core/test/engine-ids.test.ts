import { InvalidIdError } from '@retrysafe/contract';
import { RunnerConfigurationError } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

// A durable-execution engine (DBOS, Temporal, …) names its runs and steps itself: the runner must be
// able to write those names as the run and attempt ids of its receipts, and nothing else.
const OP = 'records.create';

/** A runner whose first run of `params` was rejected and handed off, with that run's id. */
async function handedOff(params: Record<string, unknown>) {
  const env = setup();
  env.provider.failNext({ kind: 'rejected' });
  const first = await env.runner.run(env.adapter, OP, { params });
  expect(first.status).toBe('handed-off');
  return { ...env, id: first.businessOperationId };
}

describe('run and attempt ids supplied by the caller (engine step ids)', () => {
  it('every receipt carries the given run id and the next id from attemptIds, in order', async () => {
    const { provider, adapter, runner } = setup();
    provider.failNext({ kind: 'unknown-after-commit' });
    let n = 0;
    const r = await runner.run(adapter, OP, {
      params: { ref: 'order-1' },
      runId: 'wf-1',
      attemptIds: () => `wf-1:step-3:${++n}`,
    });
    expect(r.status).toBe('done');
    if (r.status !== 'done') return;
    expect(r.receipts.map((x) => [x.runId, x.attemptId])).toEqual([
      ['wf-1', 'wf-1:step-3:1'],
      ['wf-1', 'wf-1:step-3:2'],
    ]);
    expect(provider.count()).toBe(1);
  });

  it.each([
    ['an attempt id the contract refuses is a typed error', 'order-2', 'has spaces'],
    ['an attempt id repeated within the run is refused', 'order-6', 'wf-5:step-1'],
  ])('%s before anything is written or sent', async (_, ref, attemptId) => {
    const { provider, adapter, runner, ledger } = setup();
    await expect(runner.run(adapter, OP, { params: { ref }, attemptIds: () => attemptId })).rejects.toSatisfy(
      InvalidIdError.isInstance,
    );
    expect(provider.calls()).toBe(0);
    expect(await ledger.list()).toEqual([]);
  });

  it('resolve writes the given run id and attempt ids on the resolution and on the resumed attempt', async () => {
    const { provider, adapter, runner, id } = await handedOff({ ref: 'order-3' });
    let n = 0;
    // resume after a rejection is unsafe by the packet: forced, as a person who fixed the cause would
    const resumed = await runner.resolve(
      id,
      { action: 'resume', force: true },
      { adapters: [adapter], runId: 'wf-2', attemptIds: () => `wf-2:step-5:${++n}` },
    );
    expect(resumed.status).toBe('done');
    if (resumed.status !== 'done') return;
    const mine = resumed.receipts.filter((x) => x.runId === 'wf-2').map((x) => [x.kind, x.attemptId]);
    expect(mine).toEqual([
      ['resolve', 'wf-2:step-5:1'],
      ['resend', 'wf-2:step-5:2'],
    ]);
    expect(provider.count()).toBe(1);
  });

  it('a corrected request (a new revision) writes the given ids on its supersede receipt too, not a random one', async () => {
    const { provider, adapter, runner, ledger, id } = await handedOff({ ref: 'order-4', note: 'bad' });
    let n = 0;
    const fixed = await runner.run(adapter, OP, {
      params: { ref: 'order-4', note: 'good' },
      runId: 'wf-3',
      attemptIds: () => `wf-3:step-7:${++n}`,
    });
    expect(fixed.status).toBe('done');
    const mine = (await ledger.receipts(id)).slice(1);
    expect(mine.map((x) => [x.kind, x.decision.action === 'supersede', x.runId, x.attemptId])).toEqual([
      ['resolve', true, 'wf-3', 'wf-3:step-7:1'],
      ['dispatch', false, 'wf-3', 'wf-3:step-7:2'],
    ]);
    expect(provider.count()).toBe(1);
  });

  it("resolve's resend-with writes the given run id and attempt ids, and refuses a bad one before anything is written", async () => {
    const { provider, adapter, runner, ledger, id } = await handedOff({ ref: 'order-5', note: 'bad' });
    const resendWith = { action: 'resend-with', params: { ref: 'order-5', note: 'good' } } as const;
    await expect(
      runner.resolve(id, resendWith, { adapters: [adapter], attemptIds: () => 'has spaces' }),
    ).rejects.toSatisfy(InvalidIdError.isInstance);
    expect(await ledger.receipts(id)).toHaveLength(1);
    expect(provider.calls()).toBe(1);
    let n = 0;
    const r = await runner.resolve(id, resendWith, {
      adapters: [adapter],
      runId: 'wf-4',
      attemptIds: () => `wf-4:step-2:${++n}`,
    });
    expect(r.status).toBe('done');
    const mine = (await ledger.receipts(id)).slice(1);
    expect(mine.map((x) => [x.kind, x.runId, x.attemptId])).toEqual([
      ['resolve', 'wf-4', 'wf-4:step-2:1'],
      ['dispatch', 'wf-4', 'wf-4:step-2:2'],
    ]);
    expect(provider.count()).toBe(1);
  });

  it('a corrected request whose first send would get a bad id is refused before its new revision is written', async () => {
    const { provider, adapter, runner, ledger, id } = await handedOff({ ref: 'order-7', note: 'bad' });
    const before = [await ledger.get(id as never), await ledger.receipts(id)];
    let n = 0;
    const ids = () => (++n === 1 ? 'wf-6:step-1:1' : 'has spaces');
    await expect(
      runner.run(adapter, OP, { params: { ref: 'order-7', note: 'good' }, attemptIds: ids }),
    ).rejects.toSatisfy(InvalidIdError.isInstance);
    expect([await ledger.get(id as never), await ledger.receipts(id)]).toEqual(before);
    expect(provider.calls()).toBe(1);
  });

  it('a bad id later in the run stops it at rest, lease freed, with an error that does not say nothing was sent', async () => {
    const { provider, adapter, runner, ledger } = setup();
    provider.failNext({ kind: 'not-applied' });
    provider.failNext({ kind: 'not-applied' });
    let n = 0;
    const ids = () => (++n <= 2 ? `wf-7:step-1:${n}` : 'has spaces');
    const err = await runner.run(adapter, OP, { params: { ref: 'order-8' }, attemptIds: ids }).catch((e) => e);
    expect(RunnerConfigurationError.isInstance(err) && !InvalidIdError.isInstance(err)).toBe(true);
    expect((err as Error).message).toMatch(/may have reached the provider/);
    expect(provider.calls()).toBe(2);
    const [rec] = await ledger.list();
    expect(rec).toMatchObject({ state: 'claimed', leaseOwner: null });
    const again = await runner.run(adapter, OP, { params: { ref: 'order-8' } });
    expect(again.status).toBe('done');
    expect(provider.count()).toBe(1);
  });
});
