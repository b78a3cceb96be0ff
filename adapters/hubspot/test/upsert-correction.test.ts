import { ConflictError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { adapter, order, sb } from './helpers.js';

// objects.upsert writes the record the caller's ref names: other properties under that ref are a correction of the
// record (a new revision under its key, so the upsert updates it) or a conflict once a write may have applied, never
// a second record.

async function rig() {
  const clock = createVirtualClock(Date.now());
  const s = await sb({ clock });
  const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
  return { s, a: adapter(s.url), runner };
}

const priced = (amount: string) => ({ ...order('up-1'), properties: { ...order('up-1').properties, amount } });

describe('objects.upsert: one ref, one record', () => {
  it('done, then the same ref with another amount ⇒ a params conflict naming it, nothing sent, one record', async () => {
    const { s, a, runner } = await rig();
    expect(await runner.run(a, 'objects.upsert', { params: priced('1250') })).toMatchObject({ status: 'done' });
    const err = await runner.run(a, 'objects.upsert', { params: priced('990') }).catch((e: unknown) => e);
    expect(ConflictError.isInstance(err) && err.field === 'params' && err.paths).toEqual(['properties.amount']);
    expect(s.count('objects.upsert')).toBe(1);
  });

  it('throttled until handed off, then resend-with another amount ⇒ the same operation updates its one record', async () => {
    const { s, a, runner } = await rig();
    s.throttle(4);
    const first = await runner.run(a, 'objects.upsert', { params: priced('1250') });
    expect(first).toMatchObject({ status: 'handed-off' });
    const fixed = { action: 'resend-with', params: priced('990') } as const;
    expect(await runner.resolve(first.businessOperationId, fixed, { adapters: [a] })).toMatchObject({ status: 'done' });
    expect(s.count('objects.upsert')).toBe(1);
    expect(s.records('objects.upsert')[0]!.properties.amount).toBe('990');
  });
});
