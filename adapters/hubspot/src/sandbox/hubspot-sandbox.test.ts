import { afterEach, describe, expect, it } from 'vitest';
import { type HubSpotSandbox, type HubSpotSandboxOptions, startHubSpotSandbox } from './index.js';

// The sandbox on the wire, without the SDK: the shapes and rules the adapter tests rely on.

let s: HubSpotSandbox;
afterEach(async () => {
  await s?.close();
});
async function start(options: HubSpotSandboxOptions = {}) {
  s = await startHubSpotSandbox({ accessToken: 'tok', ...options });
  return s;
}
async function call(method: string, path: string, body?: unknown, token = 'tok') {
  const res = await fetch(s.url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

describe('hubspot sandbox', () => {
  it('every answer carries a correlation id and the X-HubSpot-RateLimit-* headers', async () => {
    await start();
    const r = await call('POST', '/crm/v3/objects/tickets', { properties: { subject: 's', hs_pipeline_stage: '1' } });
    expect(r.status).toBe(201);
    expect(r.headers.get('x-hubspot-correlation-id')).toMatch(/^[0-9a-f-]{36}$/);
    for (const h of ['Daily', 'Daily-Remaining', 'Interval-Milliseconds', 'Max', 'Remaining'])
      expect(r.headers.get(`x-hubspot-ratelimit-${h.toLowerCase()}`)).toMatch(/^\d+$/);
  });

  it('401 without a valid bearer token, in HubSpot’s error shape', async () => {
    await start();
    const r = await call('GET', '/crm/v3/objects/contacts/1', undefined, 'nope');
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({
      status: 'error',
      category: 'INVALID_AUTHENTICATION',
      correlationId: expect.any(String),
    });
  });

  it('a unique value taken ⇒ 409 CONFLICT "… already exists. Existing ID: N", nothing written', async () => {
    await start();
    const first = await call('POST', '/crm/v3/objects/tickets', {
      properties: { subject: 'a', hs_pipeline_stage: '1', retrysafe_operation_id: 'op-1' },
    });
    const second = await call('POST', '/crm/v3/objects/tickets', {
      properties: { subject: 'b', hs_pipeline_stage: '1', retrysafe_operation_id: 'op-1' },
    });
    expect(second).toMatchObject({
      status: 409,
      body: { category: 'CONFLICT', message: `Ticket already exists. Existing ID: ${first.body.id}` },
    });
    expect(s.count('tickets')).toBe(1);
    expect(s.writes('tickets')).toBe(1);
  });

  it('batch upsert: new: true, then new: false on the same id; a non-unique idProperty or repeated ids ⇒ 400', async () => {
    await start();
    const input = { inputs: [{ id: 'op-7', idProperty: 'retrysafe_operation_id', properties: { name: 'A' } }] };
    const a = await call('POST', '/crm/v3/objects/p100_orders/batch/upsert', input);
    const b = await call('POST', '/crm/v3/objects/2-100/batch/upsert', input);
    expect(a.body.results[0]).toMatchObject({ new: true, properties: { retrysafe_operation_id: 'op-7' } });
    expect(b.body.results[0]).toMatchObject({ new: false, id: a.body.results[0].id });
    expect(s.count('objects.upsert')).toBe(1);
    expect(
      (
        await call('POST', '/crm/v3/objects/2-100/batch/upsert', {
          inputs: [{ id: 'x', idProperty: 'name', properties: {} }],
        })
      ).status,
    ).toBe(400);
    expect(
      (await call('POST', '/crm/v3/objects/2-100/batch/upsert', { inputs: [input.inputs[0], input.inputs[0]] })).status,
    ).toBe(400);
  });

  it('search: only records past the indexing delay, filters EQ/IN/HAS_PROPERTY, limit ≤ 200, paging', async () => {
    let t = 1_000_000;
    await start({ clock: { now: () => t }, searchIndexingDelayMs: 1000, searchPerSecond: null });
    for (const subject of ['a', 'b', 'c'])
      await call('POST', '/crm/v3/objects/tickets', { properties: { subject, hs_pipeline_stage: '1' } });
    const q = (body: object) => call('POST', '/crm/v3/objects/tickets/search', body).then((r) => r.body);
    expect((await q({})).total).toBe(0);
    t += 1000;
    expect((await q({})).total).toBe(3);
    expect(
      (
        await q({
          filterGroups: [{ filters: [{ propertyName: 'subject', operator: 'EQ', value: 'b' }] }],
          properties: ['subject'],
        })
      ).results,
    ).toEqual([expect.objectContaining({ properties: { subject: 'b' } })]);
    expect(
      (await q({ filterGroups: [{ filters: [{ propertyName: 'subject', operator: 'IN', values: ['a', 'c'] }] }] }))
        .total,
    ).toBe(2);
    expect(
      (await q({ filterGroups: [{ filters: [{ propertyName: 'content', operator: 'HAS_PROPERTY' }] }] })).total,
    ).toBe(0);
    const page = await q({ limit: 2 });
    expect(page.results).toHaveLength(2);
    expect((await q({ limit: 2, after: page.paging.next.after })).results).toHaveLength(1);
    expect((await call('POST', '/crm/v3/objects/tickets/search', { limit: 201 })).status).toBe(400);
  });

  it('search with searchEqFoldsCase: EQ answers every spelling of the value, paged like any search', async () => {
    await start({ searchEqFoldsCase: true, searchPerSecond: null });
    for (const subject of ['Ab', 'AB', 'ab'])
      await call('POST', '/crm/v3/objects/tickets', { properties: { subject, hs_pipeline_stage: '1' } });
    const eq = { filterGroups: [{ filters: [{ propertyName: 'subject', operator: 'EQ', value: 'ab' }] }] };
    const page = (await call('POST', '/crm/v3/objects/tickets/search', { ...eq, limit: 2, properties: ['subject'] }))
      .body;
    expect(page.results.map((r: { properties: { subject: string } }) => r.properties.subject)).toEqual(['Ab', 'AB']);
    expect(page.paging.next.after).toBe('2');
  });

  it('search over 5 per second ⇒ 429 SECONDLY with "You have reached your secondly limit."', async () => {
    await start({ clock: { now: () => 5_000 } });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await call('POST', '/crm/v3/objects/tickets/search', {})).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const r = await call('POST', '/crm/v3/objects/tickets/search', {});
    expect(r.body).toMatchObject({
      policyName: 'SECONDLY',
      errorType: 'RATE_LIMIT',
      message: 'You have reached your secondly limit.',
    });
    expect(r.headers.get('x-hubspot-ratelimit-interval-milliseconds')).toBe('1000');
  });

  it('failNext(commit) writes then answers 500; throttle answers 429 without writing; seeding is not a write', async () => {
    await start();
    s.seed('contacts', { email: 'x@example.test' });
    s.failNext(1, { status: 500, commit: true });
    expect(
      (await call('POST', '/crm/v3/objects/tickets', { properties: { subject: 'a', hs_pipeline_stage: '1' } })).status,
    ).toBe(500);
    s.throttle(1, 'TEN_SECONDLY_ROLLING');
    const limited = await call('POST', '/crm/v3/objects/tickets', {
      properties: { subject: 'b', hs_pipeline_stage: '1' },
    });
    expect(limited).toMatchObject({ status: 429, body: { policyName: 'TEN_SECONDLY_ROLLING' } });
    expect(limited.headers.get('x-hubspot-ratelimit-remaining')).toBe('0');
    expect(s.count('tickets')).toBe(1);
    expect(s.writes()).toBe(1);
  });

  it('unknown object types, routes and knobs are refused clearly', async () => {
    await start();
    expect((await call('GET', '/crm/v3/objects/deals/1')).status).toBe(404);
    expect(() => s.count('deals')).toThrow(/unknown object type or operation "deals"/);
    expect(() => s.advance(-1)).toThrow(/non-negative/);
    expect(() => s.seed('contacts', { nope: 'x' })).toThrow(/does not exist/);
  });
});
