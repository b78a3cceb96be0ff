import { notFoundIsAuthoritative } from '@retrysafe/contract/rules';
import { describe, expect, it } from 'vitest';
import { adapter, lookup, rig, sb, ticket } from './helpers.js';

// Whether a miss proves absence is the card's rule (the contract's notFoundIsAuthoritative, which the runner
// applies too): the last dispatch + lookup.lateApplyBound + lookup.consistencyDelay, never when one is unknown.

describe("tickets.create search miss: judged by the card's bounds", () => {
  it('searchSettleMs alone leaves the late-apply bound unknown: a miss an hour later is still cannot-tell', async () => {
    const { a } = await rig({}, { searchSettleMs: 2000 });
    const now = Date.now();
    const times = { now, firstDispatchedAt: now - 3_600_000 };
    expect(notFoundIsAuthoritative(a.operations['tickets.create'].card, times)).toBe(false);
    expect(await lookup(a, 'tickets.create', ticket('ca-1'), times)).toMatchObject({ kind: 'cannot-tell' });
  });

  it('with lateApplyMs too, a miss is not-found only past late apply + settle time from the last dispatch', async () => {
    const { a } = await rig({}, { searchSettleMs: 2000, lateApplyMs: 1000 });
    const now = Date.now();
    const ago = (ms: number) => ({ now, firstDispatchedAt: now - 60_000, lastDispatchedAt: now - ms });
    expect(await lookup(a, 'tickets.create', ticket('ca-2'), ago(2500))).toMatchObject({
      kind: 'cannot-tell',
      retryAfterMs: 500,
    });
    expect(await lookup(a, 'tickets.create', ticket('ca-2'), ago(3000))).toMatchObject({ kind: 'not-found' });
  });
});

describe('contacts.update: values that differ are a miss, judged by the card', () => {
  it('GET by id has no documented delay bound (lookup.consistencyDelay unknown): cannot-tell, never not-found', async () => {
    const s = await sb();
    const c = s.seed('contacts', { email: 'ada@example.test', contract_date: '2025-01-01' });
    const a = adapter(s.url, { lateApplyMs: 0 });
    const params = { contactId: c.id, properties: { contract_date: '2026-08-05' } };
    const times = { now: Date.now(), firstDispatchedAt: 0 };
    expect(notFoundIsAuthoritative(a.operations['contacts.update'].card, times)).toBe(false);
    const r = await lookup(a, 'contacts.update', params, times);
    expect(r).toMatchObject({ kind: 'cannot-tell' });
    expect(r.kind === 'cannot-tell' && r.reason).toMatch(/contract_date/);
  });
});
