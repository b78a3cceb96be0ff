// An engine waiting on one operation (DBOS's awaitResolution) drives that one as stored: recover() of one id. An
// operation run with the caller's own intent has no intent its params would derive: it is driven by its stored id
// and intent, never re-derived from its params (which would meet a conflict and never be driven).

import { LedgerError } from '@retrysafe/contract';
import { identityFields } from '@retrysafe/contract/ledger';
import { createRunner } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { setup, stoppedBeforeSend } from './helpers.js';

const OP = 'records.create';

/** `params` claimed by a worker that stopped before sending anything: `claimed`, nothing at the provider. */
async function leftClaimed(env: ReturnType<typeof setup>, params: { ref: string }, intent?: Record<string, unknown>) {
  const { ledger, clock } = env;
  const stopped = createRunner({ ledger, clock, random: () => 0.5 });
  const signal = stoppedBeforeSend();
  await expect(stopped.run(env.adapter, OP, { params, signal, ...(intent ? { intent } : {}) })).rejects.toSatisfy(
    LedgerError.isInstance,
  );
  const rec = (await ledger.list({})).find((r) => (r.params as { ref?: string }).ref === params.ref);
  return rec!.businessOperationId;
}

describe('recover({ businessOperationId }): one stored operation, as stored', () => {
  it('drives only that one, run with the caller’s own intent, with the caller’s run and attempt ids: one record', async () => {
    const env = setup();
    const { provider, adapter, ledger, clock, runner } = env;
    const mine = await leftClaimed(env, { ref: 'ro-1' }, { order: 'ro-1', kind: 'own' });
    const other = await leftClaimed(env, { ref: 'ro-2' });
    clock.advance(120_000);
    let n = 0;
    const reports = await runner.recover({
      adapters: [adapter],
      businessOperationId: mine,
      runId: 'wf-7',
      attemptIds: () => `wf-7:s2.${++n}`,
    });
    expect(reports).toMatchObject([{ businessOperationId: mine, action: 'completed', to: 'succeeded' }]);
    expect(provider.count()).toBe(1);
    expect((await ledger.receipts(mine)).map((r) => [r.runId, r.attemptId])).toEqual([['wf-7', 'wf-7:s2.1']]);
    expect((await ledger.get(other))!.state).toBe('claimed');
  });

  it('one whose holder is alive is left to it (skipped-busy, nothing sent); a closed or absent one is not listed', async () => {
    const env = setup();
    const { provider, adapter, ledger, clock, runner } = env;
    const id = await leftClaimed(env, { ref: 'ro-3' }, { order: 'ro-3' });
    // Another worker holds it now, its lease running.
    const rec = (await ledger.get(id))!;
    const held = await ledger.claim({
      ...identityFields(rec),
      owner: 'live-worker',
      leaseMs: 60_000,
      now: clock.now(),
    });
    expect(held.kind).toBe('claimed');
    const busy = await runner.recover({ adapters: [adapter], businessOperationId: id });
    expect(busy).toMatchObject([{ businessOperationId: id, action: 'skipped-busy' }]);
    expect(provider.calls()).toBe(0);
    clock.advance(120_000);
    expect(await runner.recover({ adapters: [adapter], businessOperationId: id })).toMatchObject([
      { action: 'completed' },
    ]);
    expect(await runner.recover({ adapters: [adapter], businessOperationId: id })).toEqual([]);
    expect(await runner.recover({ adapters: [adapter], businessOperationId: 'no-such-op' })).toEqual([]);
    expect(provider.count()).toBe(1);
  });
});
