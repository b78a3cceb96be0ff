import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { adapter, order, sb } from './helpers.js';

// objects.upsert sets the values of the record the caller's ref names: each change is the next revision of the ref's
// operation, and every operation of one ref writes the one record its unique value (derived from objectType and ref) names.

async function rig() {
  const clock = createVirtualClock(Date.now());
  const s = await sb({ clock });
  const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
  return { s, a: adapter(s.url), runner };
}

const priced = (amount: string, ref = 'up-1') => ({ ...order(ref), properties: { ...order(ref).properties, amount } });
const amounts = (s: Awaited<ReturnType<typeof rig>>['s']) =>
  s.records('objects.upsert').map((r) => r.properties.amount);

describe('objects.upsert: one ref, one record', () => {
  it('done, then a later change of the same ref ⇒ applied to the one record, not refused', async () => {
    const { s, a, runner } = await rig();
    expect(await runner.run(a, 'objects.upsert', { params: priced('1250') })).toMatchObject({ status: 'done' });
    expect(await runner.run(a, 'objects.upsert', { params: priced('990') })).toMatchObject({ status: 'done' });
    expect(amounts(s)).toEqual(['990']);
  });

  it('the caller’s own id per change ⇒ still the one record of the ref', async () => {
    const { s, a, runner } = await rig();
    await runner.run(a, 'objects.upsert', { businessOperationId: 'deal-7-v1', params: priced('1250') });
    expect(
      await runner.run(a, 'objects.upsert', { businessOperationId: 'deal-7-v2', params: priced('990') }),
    ).toMatchObject({
      status: 'done',
    });
    expect(amounts(s)).toEqual(['990']);
  });

  it('two refs ⇒ two records, whatever their properties', async () => {
    const { s, a, runner } = await rig();
    await runner.run(a, 'objects.upsert', { params: priced('1250', 'up-1') });
    await runner.run(a, 'objects.upsert', { params: priced('1250', 'up-2') });
    expect(amounts(s)).toEqual(['1250', '1250']);
  });

  it('throttled until handed off, then resend-with the corrected amount ⇒ the same operation writes the one record', async () => {
    const { s, a, runner } = await rig();
    s.throttle(4);
    const first = await runner.run(a, 'objects.upsert', { params: priced('1250') });
    expect(first).toMatchObject({ status: 'handed-off' });
    const fixed = { action: 'resend-with', params: priced('990') } as const;
    const again = await runner.resolve(first.businessOperationId, fixed, { adapters: [a] });
    expect(again).toMatchObject({ status: 'done', businessOperationId: first.businessOperationId });
    expect(amounts(s)).toEqual(['990']);
  });
});
