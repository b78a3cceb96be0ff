import { ConflictError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock, verifyReceiptChain } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { adapter, order, sb, seen, ticket } from './helpers.js';

// A set or upsert (idempotent by nature) names its target by its intent; its values are params. Other values once it is
// done are its next revision, sent; the same values again are a retry, answered from the ledger.

async function rig() {
  const clock = createVirtualClock(Date.now());
  const s = await sb({ clock });
  const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
  return { s, a: adapter(s.url), runner };
}

describe('set and upsert: A, then B, then A again ends at A', () => {
  it('contacts.update: each change of one contact is sent; the same values twice are one PATCH', async () => {
    const { s, a, runner } = await rig();
    const c = s.seed('contacts', { email: 'ada@example.test' });
    // followUp: an agent's call that was not told the end; its values too are the ones wanted now.
    const set = (jobtitle: string, followUp = false) =>
      runner.run(a, 'contacts.update', { params: { contactId: c.id, properties: { jobtitle } }, followUp });
    const first = await set('A');
    expect(await set('A')).toMatchObject({ status: 'done', adopted: true });
    expect(seen(s, 'update')).toBe(1);
    expect(await set('B', true)).toMatchObject({
      status: 'done',
      adopted: false,
      businessOperationId: first.businessOperationId,
    });
    const last = await set('A');
    expect(last).toMatchObject({ status: 'done', adopted: false });
    expect(seen(s, 'update')).toBe(3);
    // One chain: each revision's supersede receipt numbered on from the last.
    const receipts = last.status === 'done' ? last.receipts : [];
    expect(verifyReceiptChain(receipts)).toMatchObject({ ok: true });
    const revisions = receipts.filter((r) => r.decision.action === 'supersede').map((r) => r.decision.reason);
    expect(revisions.map((why) => /^revision (\d+)/.exec(why ?? '')?.[1])).toEqual(['2', '3']);
    expect(s.records('contacts')[0]!.properties.jobtitle).toBe('A');
  });

  it('contacts.update: one contact addressed by record id, then by email, then by id again ends at the third value', async () => {
    const { s, a, runner } = await rig();
    const c = s.seed('contacts', { email: 'ada@example.test' });
    const set = (jobtitle: string, by: { contactId: string; idProperty?: string }) =>
      runner.run(a, 'contacts.update', { params: { ...by, properties: { jobtitle } } });
    expect(await set('A', { contactId: c.id })).toMatchObject({ status: 'done' });
    expect(await set('B', { contactId: 'ada@example.test', idProperty: 'email' })).toMatchObject({ status: 'done' });
    expect(await set('A', { contactId: c.id })).toMatchObject({ status: 'done', adopted: false });
    expect(s.records('contacts')[0]!.properties.jobtitle).toBe('A');
  });

  it('objects.upsert: each change of one ref is sent to its one record; the same values twice are one upsert', async () => {
    const { s, a, runner } = await rig();
    const priced = (amount: string) => ({ ...order('rev-1'), properties: { ...order('rev-1').properties, amount } });
    const upsert = (amount: string) => runner.run(a, 'objects.upsert', { params: priced(amount) });
    expect(await upsert('1250')).toMatchObject({ status: 'done' });
    expect(await upsert('1250')).toMatchObject({ status: 'done', adopted: true });
    expect(seen(s, 'upsert')).toBe(1);
    expect(await upsert('990')).toMatchObject({ status: 'done', adopted: false });
    expect(await upsert('1250')).toMatchObject({ status: 'done', adopted: false });
    expect(s.records('objects.upsert').map((r) => r.properties.amount)).toEqual(['1250']);
  });

  it('tickets.create (a create) with changed params is still a conflict: nothing sent', async () => {
    const { s, a, runner } = await rig();
    expect(await runner.run(a, 'tickets.create', { params: ticket('t-1') })).toMatchObject({ status: 'done' });
    const other = runner.run(a, 'tickets.create', { params: ticket('t-1', { subject: 'other' }) });
    await expect(other).rejects.toSatisfy(ConflictError.isInstance);
    expect(s.count('tickets.create')).toBe(1);
  });
});
