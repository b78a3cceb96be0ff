import { executeContext, operationIdFor } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ID_PROPERTY, defaultObjectTypes } from '../src/sandbox/index.js';
import { adapter, execute, lookup, order, rig, sb, ticket } from './helpers.js';

/** `n` spellings of `key` other than itself, each differing from it in the case of its letters only. */
function otherSpellings(key: string, n: number): string[] {
  const letters = [...key].flatMap((c, i) => (c.toLowerCase() === c.toUpperCase() ? [] : [i]));
  return Array.from({ length: n }, (_, k) => {
    const chars = [...key];
    // The bits of k + 1 (never 0) say which letters change case: each spelling differs from the key and the others.
    letters.forEach((at, bit) => {
      const c = chars[at]!;
      if (((k + 1) >> bit) & 1) chars[at] = c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase();
    });
    return chars.join('');
  });
}

/** The lookup of ticket `ref` on a sandbox whose EQ search folds case, seeded with a ticket per value `values(key)`
 * gives for the ticket's provider key. */
async function lookupAmong(ref: string, values: (key: string) => string[]) {
  const { s, a } = await rig({ searchEqFoldsCase: true, searchPerSecond: null }, { searchSettleMs: 0 });
  const params = ticket(ref);
  const key = executeContext(a, 'tickets.create', operationIdFor(a, 'tickets.create', params)).providerKey!;
  for (const value of values(key))
    s.seed('tickets', { subject: 'seeded', hs_pipeline_stage: '1', [DEFAULT_ID_PROPERTY]: value });
  return lookup(a, 'tickets.create', params);
}

// doLookup against the sandbox: CRM search with an indexing delay for tickets.create and
// objects.upsert, GET-and-compare for contacts.update. A miss is "absent" only when it can prove it.

describe('tickets.create lookup: CRM search on the id property', () => {
  it('finds the committed ticket once the index has it (found / succeeded, its id)', async () => {
    const { a } = await rig();
    const params = ticket('lk-1');
    const created = await execute(a, 'tickets.create', params);
    const r = await lookup(a, 'tickets.create', params);
    expect(r).toMatchObject({
      kind: 'found',
      outcome: {
        kind: 'succeeded',
        providerRef: created.providerRef,
        result: { properties: { subject: 'Parcel damaged (lk-1)' } },
      },
    });
  });

  // A portal whose id property is not unique (the README's setup step skipped) lets a re-send make a second ticket:
  // adopting one of the two would hide the other.
  it('two tickets hold the key (the id property is not unique in this portal): cannot-tell naming both', async () => {
    const objectTypes = defaultObjectTypes().map((t) => (t.label === 'Ticket' ? { ...t, unique: [] } : t));
    const { s, a } = await rig({ objectTypes });
    const params = ticket('lk-dup');
    const one = await execute(a, 'tickets.create', params);
    const two = await execute(a, 'tickets.create', params);
    expect(s.count('tickets')).toBe(2);
    const r = await lookup(a, 'tickets.create', params);
    expect(r.kind).toBe('cannot-tell');
    for (const id of [one.providerRef, two.providerRef]) expect(r.kind === 'cannot-tell' && r.reason).toContain(id);
    expect(r).toMatchObject({ duplicates: expect.arrayContaining([one.providerRef, two.providerRef]) });
  });

  it('inside the indexing delay a miss is cannot-tell (no settle time configured), then found after it', async () => {
    const { s, a } = await rig({ searchIndexingDelayMs: 5000 });
    const params = ticket('lk-2');
    await execute(a, 'tickets.create', params);
    expect(s.count('tickets')).toBe(1);
    const early = await lookup(a, 'tickets.create', params);
    expect(early).toMatchObject({ kind: 'cannot-tell', status: 200 });
    expect(early.kind === 'cannot-tell' && early.reason).toMatch(/never proves absence/);
    s.advance(5000);
    expect(await lookup(a, 'tickets.create', params)).toMatchObject({ kind: 'found' });
  });

  // Dispatch times in ms before now: 500 ms ago is inside the 2 s settle time, 2.5 s ago is past it.
  it.each([
    [
      'a miss inside it is cannot-tell with the remaining wait; after it, not-found',
      'lk-3',
      (ago: number) => ({ firstDispatchedAt: ago }),
    ],
    [
      'the settle time runs from the LAST dispatch (a later re-send may not be indexed yet)',
      'lk-3b',
      (ago: number) => ({ firstDispatchedAt: 60_000, lastDispatchedAt: ago }),
    ],
  ])('with searchSettleMs (and lateApplyMs 0): %s', async (_name, ref, dispatched) => {
    // Absence needs both card bounds; searchSettleMs alone leaves the late apply unknown (test/card-absence.test.ts).
    const { a } = await rig({}, { searchSettleMs: 2000, lateApplyMs: 0 });
    const now = Date.now();
    const at = (ago: number) => {
      const times = dispatched(ago) as { firstDispatchedAt: number; lastDispatchedAt?: number };
      return {
        now,
        firstDispatchedAt: now - times.firstDispatchedAt,
        ...(times.lastDispatchedAt !== undefined ? { lastDispatchedAt: now - times.lastDispatchedAt } : {}),
      };
    };
    expect(await lookup(a, 'tickets.create', ticket(ref), at(500))).toMatchObject({
      kind: 'cannot-tell',
      retryAfterMs: 1500,
    });
    expect(await lookup(a, 'tickets.create', ticket(ref), at(2500))).toMatchObject({ kind: 'not-found' });
    expect(a.operations['tickets.create'].card.lookup.consistencyDelay.value).toBe('2s');
  });

  it('never dispatched ⇒ not-found (nothing was sent)', async () => {
    const { a } = await rig();
    const params = ticket('lk-4');
    expect(await lookup(a, 'tickets.create', params, { firstDispatchedAt: null })).toMatchObject({
      kind: 'not-found',
      reason: 'never dispatched',
    });
  });

  it('another operation’s ticket is not a match', async () => {
    const { a } = await rig({}, { searchSettleMs: 0, lateApplyMs: 0 });
    const mine = ticket('lk-mine');
    const other = ticket('lk-other');
    await execute(a, 'tickets.create', other);
    expect(await lookup(a, 'tickets.create', mine)).toMatchObject({
      kind: 'not-found',
    });
  });

  it('a miss on a page whose paging.next is set is cannot-tell: only the whole answer may say not-found', async () => {
    // 201 other spellings of the key: the first page of the EQ search (200) is full of them and paging.next is set.
    const r = await lookupAmong('lk-paged', (key) => {
      const others = otherSpellings(key, 201);
      expect(new Set([key, ...others]).size).toBe(202);
      return others;
    });
    expect(r).toMatchObject({ kind: 'cannot-tell' });
    expect(r.kind === 'cannot-tell' && r.reason).toMatch(/more results/);
  });

  it('ours on a page whose paging.next is set is cannot-tell: a second record with the key may be on the next page', async () => {
    // Ours, then 200 other spellings of the key: the first page of the EQ search (200) is full, and paging.next is set.
    const r = await lookupAmong('lk-paged-hit', (key) => [key, ...otherSpellings(key, 200)]);
    expect(r).toMatchObject({ kind: 'cannot-tell' });
    expect(r.kind === 'cannot-tell' && r.reason).toMatch(/more results/);
  });

  it('ours after three other spellings of the key: found, as the search asks for a page of 200, the most HubSpot allows', async () => {
    // developers.hubspot.com/docs/api/crm/search: "The maximum number of supported objects per page is 200."
    const r = await lookupAmong('lk-spelled', (key) => [...otherSpellings(key, 3), key]);
    expect(r).toMatchObject({ kind: 'found' });
  });

  it('search throttled (5 req/s per account) ⇒ cannot-tell with a 1 s wait and the SECONDLY policy', async () => {
    const { a } = await rig({ searchPerSecond: 1 });
    const params = ticket('lk-5');
    await lookup(a, 'tickets.create', params);
    expect(await lookup(a, 'tickets.create', params)).toMatchObject({
      kind: 'cannot-tell',
      status: 429,
      code: 'SECONDLY',
      retryAfterMs: 1000,
    });
  });

  it('search failing (403) ⇒ cannot-tell, never not-found', async () => {
    const s = await sb();
    s.denyScope('tickets');
    const a = adapter(s.url, { searchSettleMs: 0 });
    const params = ticket('lk-6');
    expect(await lookup(a, 'tickets.create', params, { firstDispatchedAt: 0 })).toMatchObject({
      kind: 'cannot-tell',
      status: 403,
    });
  });
});

describe('objects.upsert lookup', () => {
  it('finds the record by the id property in its object type', async () => {
    const { a } = await rig();
    const params = order('lk-A');
    const done = await execute(a, 'objects.upsert', params);
    expect(await lookup(a, 'objects.upsert', params)).toMatchObject({
      kind: 'found',
      outcome: { kind: 'succeeded', providerRef: done.providerRef },
    });
  });

  // Every change of one ref writes its one record: the record holding the key is this operation's only with its values.
  it('the ref’s record holding another change’s values ⇒ cannot-tell naming them, never adopted', async () => {
    const { a } = await rig();
    const params = order('lk-B');
    const later = { ...params, properties: { ...params.properties, amount: '990' } };
    const done = await execute(a, 'objects.upsert', later);
    const r = await lookup(a, 'objects.upsert', params, { firstDispatchedAt: Date.now() });
    expect(r).toMatchObject({ kind: 'cannot-tell', providerRef: done.providerRef });
    expect(r.kind === 'cannot-tell' && r.reason).toMatch(/does not hold the requested values of amount/);
  });
});

describe('contacts.update lookup: GET the contact and compare the values', () => {
  it('values in place ⇒ found / succeeded', async () => {
    const s = await sb();
    const c = s.seed('contacts', { email: 'ada@example.test', contract_date: '2026-08-05' });
    const a = adapter(s.url);
    const params = { contactId: c.id, properties: { contract_date: '2026-08-05' } };
    expect(await lookup(a, 'contacts.update', params)).toMatchObject({
      kind: 'found',
      outcome: { kind: 'succeeded', providerRef: c.id },
    });
  });

  it('values differ ⇒ cannot-tell (the card bounds no delay for GET by id, so a mismatch proves nothing)', async () => {
    const s = await sb();
    const c = s.seed('contacts', { email: 'ada@example.test', contract_date: '2025-01-01' });
    const a = adapter(s.url);
    const params = { contactId: c.id, properties: { contract_date: '2026-08-05' } };
    const r = await lookup(a, 'contacts.update', params);
    expect(r).toMatchObject({ kind: 'cannot-tell', providerRef: c.id });
    expect(r.kind === 'cannot-tell' && r.reason).toMatch(/contract_date/);
  });

  it('by a unique property (idProperty: email)', async () => {
    const s = await sb();
    const c = s.seed('contacts', { email: 'ada@example.test', firstname: 'Ada' });
    const a = adapter(s.url);
    const params = { contactId: 'ada@example.test', idProperty: 'email', properties: { firstname: 'Ada' } };
    expect(await lookup(a, 'contacts.update', params)).toMatchObject({
      kind: 'found',
      outcome: { providerRef: c.id },
    });
  });

  it('by the record id the runner read (ctx.target), not by an email another contact holds by now', async () => {
    const s = await sb();
    const ada = s.seed('contacts', { email: 'ada.old@example.test', firstname: 'Ada' });
    s.seed('contacts', { email: 'ada@example.test' });
    const a = adapter(s.url);
    const params = { contactId: 'ada@example.test', idProperty: 'email', properties: { firstname: 'Ada' } };
    expect(await lookup(a, 'contacts.update', params, { target: { contactId: ada.id } })).toMatchObject({
      kind: 'found',
      outcome: { providerRef: ada.id },
    });
  });

  it('a PATCH that would change the very property the contact is addressed by is never sent, so no lookup follows the contact', async () => {
    const s = await sb();
    s.seed('contacts', { email: 'old@example.test', firstname: 'Ada' });
    const a = adapter(s.url);
    const params = { contactId: 'old@example.test', idProperty: 'email', properties: { email: 'new@example.test' } };
    expect(await execute(a, 'contacts.update', params)).toMatchObject({
      kind: 'rejected',
      code: 'retrysafe_invalid_params',
    });
    expect(s.requests.length).toBe(0);
  });

  it('contact gone ⇒ found / rejected not-found (the PATCH would fail the same way)', async () => {
    const { a } = await rig();
    const params = { contactId: '424242', properties: { firstname: 'Ada' } };
    expect(await lookup(a, 'contacts.update', params)).toMatchObject({
      kind: 'found',
      outcome: { kind: 'rejected', reason: 'not-found', status: 404 },
    });
  });

  it('throttled ⇒ cannot-tell with the 10 s the policy implies', async () => {
    const s = await sb();
    const c = s.seed('contacts', { email: 'ada@example.test' });
    s.throttle(1);
    const a = adapter(s.url);
    const params = { contactId: c.id, properties: { firstname: 'Ada' } };
    expect(await lookup(a, 'contacts.update', params)).toMatchObject({
      kind: 'cannot-tell',
      status: 429,
      retryAfterMs: 10_000,
    });
  });
});
