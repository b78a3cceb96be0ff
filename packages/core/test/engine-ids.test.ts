import { InvalidIdError } from '@retrysafe/contract';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

// A durable-execution engine (DBOS, Temporal, …) names its runs and steps itself: the runner must be
// able to write those names as the run and attempt ids of its receipts, and nothing else.
const OP = 'records.create';

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

  it('an attempt id the contract refuses is a typed error before anything is written or sent', async () => {
    const { provider, adapter, runner, ledger } = setup();
    await expect(
      runner.run(adapter, OP, { params: { ref: 'order-2' }, attemptIds: () => 'has spaces' }),
    ).rejects.toSatisfy(InvalidIdError.isInstance);
    expect(provider.calls()).toBe(0);
    expect(await ledger.list({})).toEqual([]);
  });

  it('resolve writes the given run id and attempt ids on the resolution and on the resumed attempt', async () => {
    const { provider, adapter, runner } = setup();
    provider.failNext({ kind: 'rejected' });
    const r = await runner.run(adapter, OP, { params: { ref: 'order-3' } });
    expect(r.status).toBe('handed-off');
    let n = 0;
    // resume after a rejection is unsafe by the packet: forced, as a person who fixed the cause would
    const resumed = await runner.resolve(
      r.businessOperationId,
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
});
