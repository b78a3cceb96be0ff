import { InvalidParamsError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock, type RunResult } from '@retrysafe/core';
import { type Fault, type FaultProxy, startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import type { HubSpotAdapterOptions } from '../src/index.js';
import type { HubSpotSandbox, HubSpotSandboxOptions } from '../src/sandbox/index.js';
import { adapter, order, sb, seen, ticket } from './helpers.js';

// The runner (@retrysafe/core) + the real SDK + the fault proxy + the sandbox, on one virtual clock:
// lost responses, resets, 5xx after commit, indexing delays. Pass criteria are stated before each run.

async function rig(
  faults: Fault[],
  sandboxOptions: HubSpotSandboxOptions = {},
  adapterOptions: Partial<HubSpotAdapterOptions> = {},
) {
  const clock = createVirtualClock(Date.now());
  const s: HubSpotSandbox = await sb({ clock, ...sandboxOptions });
  const proxy: FaultProxy = closeAfterTest(await startFaultProxy({ target: s.url, faults }));
  // a generous client timeout: the suite runs files in parallel on 2 cores, and only the delay fault should time out
  const a = adapter(proxy.url, { timeoutMs: 1500, ...adapterOptions });
  const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
  return { s, proxy, a, runner, clock };
}

const creates = (s: HubSpotSandbox) => seen(s, 'create', 'tickets');

describe('tickets.create', () => {
  it('lost response (reset after commit) ⇒ exactly one ticket, found by search and adopted, one create request', async () => {
    const { s, a, runner } = await rig(['drop-response'], { searchIndexingDelayMs: 3000 });
    const r = await runner.run(a, 'tickets.create', { params: ticket('drill-lost') });
    expect(r).toMatchObject({ status: 'done', adopted: true });
    expect(s.count('tickets')).toBe(1);
    expect(creates(s)).toBe(1);
    expect(r.status === 'done' && r.providerRef).toBe(s.records('tickets')[0]!.id);
    // the index lagged 3 s on the virtual clock: the runner looked up more than once before it found it
    expect(seen(s, 'search', 'tickets')).toBeGreaterThan(1);
  });

  it('lost response (client timeout after commit) ⇒ exactly one ticket', async () => {
    const { s, a, runner } = await rig([{ kind: 'delay', ms: 5000 }]);
    const r = await runner.run(a, 'tickets.create', { params: ticket('drill-timeout') });
    expect(r).toMatchObject({ status: 'done', adopted: true });
    expect(s.count('tickets')).toBe(1);
    expect(creates(s)).toBe(1);
  });

  it('5xx after commit ⇒ unknown ⇒ lookup ⇒ one ticket, never a blind re-create', async () => {
    const { s, a, runner } = await rig([], {}, {});
    s.failNext(1, { status: 500, commit: true });
    const r = await runner.run(a, 'tickets.create', { params: ticket('drill-500') });
    expect(r).toMatchObject({ status: 'done', adopted: true });
    expect(s.count('tickets')).toBe(1);
    expect(creates(s)).toBe(1);
  });

  // lateApplyMs 0: this rig's proxy resets or drops, it never holds a request for later.
  it.each([
    {
      name: 'request never arrived, search settle time set ⇒ not-found after it ⇒ one re-send ⇒ one ticket',
      ref: 'drill-never',
      fault: 'reset-before' as const,
      indexingMs: 1000,
      settleMs: 5000,
      adopted: false,
      statuses: [201],
    },
    {
      // The first create committed but its response was lost; the index lags longer than the claimed settle time,
      // so the lookup wrongly says "absent" and the runner re-sends: HubSpot refuses the duplicate, the adapter adopts it.
      name: 'a resend that meets the unique property (search stale past the settle time) adopts the existing ticket ⇒ still one',
      ref: 'drill-stale',
      fault: 'drop-response' as const,
      indexingMs: 60_000,
      settleMs: 1000,
      adopted: true,
      statuses: [201, 409],
    },
  ])('$name', async ({ ref, fault, indexingMs, settleMs, adopted, statuses }) => {
    const { s, a, runner } = await rig(
      [fault],
      { searchIndexingDelayMs: indexingMs },
      { searchSettleMs: settleMs, lateApplyMs: 0 },
    );
    const r = await runner.run(a, 'tickets.create', { params: ticket(ref) });
    expect(r).toMatchObject({ status: 'done', adopted });
    expect(s.count('tickets')).toBe(1);
    expect(creates(s)).toBe(statuses.length);
    expect(s.requests.filter((q) => q.kind === 'create').map((q) => q.status)).toEqual(statuses);
  });

  it('request never arrived, no settle time ⇒ a miss proves nothing ⇒ handed off with zero tickets, no second create', async () => {
    const { s, proxy, a, runner } = await rig(['reset-before']);
    const r = await runner.run(a, 'tickets.create', { params: ticket('drill-unsure') });
    expect(r.status).toBe('handed-off');
    expect(r.status === 'handed-off' && r.packet.reason).toBe('lookup-window-exhausted');
    expect(s.count('tickets')).toBe(0);
    expect(proxy.requests.filter((q) => q.method === 'POST' && q.path === '/crm/v3/objects/tickets')).toHaveLength(1);
  });

  it('400 ⇒ one request, handed off as rejected', async () => {
    const { s, a, runner } = await rig([]);
    const r = await runner.run(a, 'tickets.create', { params: ticket('drill-400', { no_such: 'x' }) });
    expect(r.status === 'handed-off' && r.packet.reason).toBe('rejected');
    expect(creates(s)).toBe(1);
  });
});

describe('objects.upsert', () => {
  it('lost response ⇒ the runner re-sends the same upsert (idempotent by nature) ⇒ new: false, one record', async () => {
    const { s, a, runner } = await rig(['drop-response']);
    const r = await runner.run(a, 'objects.upsert', { params: order('drill-A') });
    expect(r).toMatchObject({ status: 'done', result: { new: false } });
    expect(s.count('objects.upsert')).toBe(1);
    expect(seen(s, 'upsert')).toBe(2);
  });

  it('two runs of one business operation (a second agent turn) ⇒ one record; the second adopts from the ledger', async () => {
    const { s, a, runner } = await rig([]);
    const first: RunResult = await runner.run(a, 'objects.upsert', { params: order('drill-B') });
    const second: RunResult = await runner.run(a, 'objects.upsert', { params: order('drill-B') });
    expect(first).toMatchObject({ status: 'done', adopted: false });
    expect(second).toMatchObject({ status: 'done', adopted: true });
    expect(s.count('objects.upsert')).toBe(1);
    expect(seen(s, 'upsert')).toBe(1);
  });

  it('a property as the number 5 and as the string "5" (one value on the wire) never make two records', async () => {
    const { s, a, runner } = await rig([]);
    const asText = { objectType: '2-100', ref: 'o-1', properties: { name: 'Order C', amount: '5' } };
    expect(await runner.run(a, 'objects.upsert', { params: asText })).toMatchObject({ status: 'done' });
    const asNumber = { ...asText, properties: { ...asText.properties, amount: 5 } };
    // The type refuses it too; an agent's untyped call reaches the schema.
    await expect(runner.run(a, 'objects.upsert', { params: asNumber as never })).rejects.toThrow(InvalidParamsError);
    expect(s.count('objects.upsert')).toBe(1);
    expect(seen(s, 'upsert')).toBe(1);
  });
});

describe('objects.upsert: one object type, one spelling', () => {
  it('the object type by its name after its id (one type at HubSpot) never makes a second record', async () => {
    const { s, a, runner } = await rig([]);
    const byId = order('drill-D');
    expect(await runner.run(a, 'objects.upsert', { params: byId })).toMatchObject({ status: 'done' });
    const byName = { ...byId, objectType: 'p100_orders' };
    await expect(runner.run(a, 'objects.upsert', { params: byName })).rejects.toThrow(InvalidParamsError);
    expect(s.count('objects.upsert')).toBe(1);
    expect(seen(s, 'upsert')).toBe(1);
  });
});

describe('contacts.update', () => {
  it('lost response ⇒ re-sent PATCH sets the same values ⇒ done, the contact holds them', async () => {
    const { s, a, runner } = await rig(['drop-response']);
    const c = s.seed('contacts', { email: 'ada@example.test' });
    const r = await runner.run(a, 'contacts.update', {
      params: { contactId: c.id, properties: { contract_date: '2026-08-05' } },
    });
    expect(r.status).toBe('done');
    expect(s.records('contacts')[0]!.properties.contract_date).toBe('2026-08-05');
    expect(s.count('contacts')).toBe(1);
  });

  it('429 with the TEN_SECONDLY_ROLLING policy ⇒ waits the 10 s interval, then one more PATCH', async () => {
    const { s, a, runner, clock } = await rig([]);
    const c = s.seed('contacts', { email: 'ada@example.test' });
    s.throttle(1);
    const r = await runner.run(a, 'contacts.update', { params: { contactId: c.id, properties: { firstname: 'Ada' } } });
    expect(r.status).toBe('done');
    expect(seen(s, 'update')).toBe(2);
    expect(Math.max(...clock.sleeps)).toBeGreaterThanOrEqual(10_000);
  });
});
