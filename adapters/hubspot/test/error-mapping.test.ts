import { createServer } from 'node:net';
import { AdapterConfigurationError, UnknownOperationError } from '@retrysafe/contract';
import { startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { executeContext, operationIdFor } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { recordKey } from '../src/hubspot-operations.js';
import { createHubSpotAdapter } from '../src/index.js';
import { defaultObjectTypes, type HubSpotSandbox, type HubSpotSandboxOptions } from '../src/sandbox/index.js';
import { adapter, execute, order, rig, sb, seen, TOKEN, ticket } from './helpers.js';

// Every case of the error mapping in src/hubspot-errors.ts, through the real SDK (generated API classes)
// against the loopback sandbox, directly through doExecute — no runner in between.

const proxy = async (target: string, faults: Parameters<typeof startFaultProxy>[0]['faults']) =>
  closeAfterTest(await startFaultProxy({ target, faults }));

describe('whole exchanges with the sandbox', () => {
  it('contacts.update: 200 ⇒ succeeded with the contact, its id and the correlation id', async () => {
    const s = await sb();
    const c = s.seed('contacts', { email: 'ada@example.test' });
    const a = adapter(s.url);
    const params = { contactId: c.id, properties: { contract_date: '2026-08-05' } };
    const o = await execute(a, 'contacts.update', params);
    expect(o).toMatchObject({
      kind: 'succeeded',
      status: 200,
      providerRef: c.id,
      result: { id: c.id, properties: { contract_date: '2026-08-05' } },
    });
    expect(o.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(s.records('contacts')[0]!.properties.contract_date).toBe('2026-08-05');
  });

  it('objects.upsert: new: true ⇒ succeeded; the same operation again ⇒ new: false, still one record', async () => {
    const { s, a } = await rig();
    const params = order('A-17');
    const ctx = executeContext(a, 'objects.upsert', operationIdFor(a, 'objects.upsert', params));
    const first = await a.doExecute('objects.upsert', params, ctx);
    const second = await a.doExecute('objects.upsert', params, ctx);
    expect(first).toMatchObject({
      kind: 'succeeded',
      status: 200,
      result: { new: true, properties: { retrysafe_operation_id: recordKey(params) } },
    });
    // No stored result: the second upsert set the same values on the record again.
    expect(second).toMatchObject({
      kind: 'succeeded',
      status: 200,
      providerRef: first.providerRef,
      result: { new: false },
    });
    expect(s.count('objects.upsert')).toBe(1);
  });

  it('tickets.create: 201 ⇒ succeeded; the business-operation key is written to the unique property', async () => {
    const { s, a } = await rig();
    const params = ticket('order-A-17');
    const ctx = executeContext(a, 'tickets.create', operationIdFor(a, 'tickets.create', params));
    const o = await a.doExecute('tickets.create', params, ctx);
    expect(o).toMatchObject({ kind: 'succeeded', status: 201 });
    expect(s.records('tickets')).toEqual([
      expect.objectContaining({
        properties: expect.objectContaining({
          retrysafe_operation_id: ctx.providerKey,
          subject: 'Parcel damaged (order-A-17)',
        }),
      }),
    ]);
  });

  it('upsert 207 whose one input failed validation ⇒ rejected / validation; failed otherwise ⇒ unknown', async () => {
    const s = await sb();
    const multi = (category: string) => ({
      kind: 'status' as const,
      status: 207,
      body: {
        status: 'COMPLETE',
        results: [],
        errors: [{ status: 'error', category, message: `input failed: ${category}` }],
        startedAt: '2026-11-30T00:00:00Z',
        completedAt: '2026-11-30T00:00:01Z',
      },
    });
    const p = await proxy(s.url, [multi('VALIDATION_ERROR'), multi('INTERNAL_ERROR')]);
    const a = adapter(p.url);
    const params = order('A-207');
    const ctx = executeContext(a, 'objects.upsert', operationIdFor(a, 'objects.upsert', params));
    expect(await a.doExecute('objects.upsert', params, ctx)).toMatchObject({
      kind: 'rejected',
      reason: 'validation',
      status: 207,
      code: 'VALIDATION_ERROR',
    });
    expect(await a.doExecute('objects.upsert', params, ctx)).toMatchObject({
      kind: 'unknown',
      status: 207,
      code: 'INTERNAL_ERROR',
    });
  });

  it('the real rolling limiter of the sandbox: request 3 of a 2-per-10 s budget ⇒ not-applied, 10 s', async () => {
    const s = await sb({ tenSecondlyMax: 2 });
    const c = s.seed('contacts', { email: 'x@example.test' });
    const a = adapter(s.url);
    const outcomes = [];
    for (let i = 0; i < 3; i++) {
      const params = { contactId: c.id, properties: { firstname: `N${i}` } };
      outcomes.push((await execute(a, 'contacts.update', params)).kind);
    }
    expect(outcomes).toEqual(['succeeded', 'succeeded', 'not-applied']);
  });

  it('409 on contacts.update (email held by another contact) ⇒ rejected / conflict naming the other contact', async () => {
    const s = await sb();
    const taken = s.seed('contacts', { email: 'taken@example.test' });
    const c = s.seed('contacts', { email: 'free@example.test' });
    const a = adapter(s.url);
    const params = { contactId: c.id, properties: { email: 'taken@example.test' } };
    expect(await execute(a, 'contacts.update', params)).toMatchObject({
      kind: 'rejected',
      reason: 'conflict',
      status: 409,
      code: 'CONFLICT',
      providerRef: taken.id,
    });
  });
});

describe('409 unique-value conflict on tickets.create', () => {
  it('the same operation again ⇒ HubSpot refuses the duplicate, the adapter reads the existing ticket back and adopts it (replayed)', async () => {
    const { s, a } = await rig();
    const params = ticket('t-dup');
    const ctx = executeContext(a, 'tickets.create', operationIdFor(a, 'tickets.create', params));
    const first = await a.doExecute('tickets.create', params, ctx);
    const second = await a.doExecute('tickets.create', params, { ...ctx, attempt: 2 });
    expect(second).toMatchObject({
      kind: 'replayed',
      status: 409,
      code: 'CONFLICT',
      providerRef: first.providerRef,
      result: { id: first.providerRef },
    });
    expect(s.count('tickets')).toBe(1);
    expect(s.requests.map((r) => `${r.method} ${r.kind} ${r.status}`)).toEqual([
      'POST create 201',
      'POST create 409',
      'GET read 200',
    ]);
  });

  // A unique value taken is also answered 400 VALIDATION_ERROR "Cannot set PropertyValueCoordinates{…} on <new id>.
  // <existing id> already has that value." (bodies HubSpot sent, quoted in public integration tests).
  const taken = (propertyName: string, value: string, existingId: string) => ({
    kind: 'status' as const,
    status: 400,
    body: {
      status: 'error',
      message: `Cannot set PropertyValueCoordinates{portalId=44956899, objectTypeId=ObjectTypeId{legacyObjectType=TICKET}, propertyName=${propertyName}, value=${value}} on 552148386511. ${existingId} already has that value.`,
      correlationId: 'c-400',
      category: 'VALIDATION_ERROR',
    },
  });

  it('the 400 "<id> already has that value." answer to the same operation again ⇒ the existing ticket is read back and adopted (replayed)', async () => {
    const s = await sb();
    const params = ticket('t-dup-400');
    const a0 = adapter(s.url);
    const ctx = executeContext(a0, 'tickets.create', operationIdFor(a0, 'tickets.create', params));
    const first = await a0.doExecute('tickets.create', params, ctx);
    const p = await proxy(s.url, [taken('retrysafe_operation_id', ctx.providerKey!, first.providerRef!)]);
    const second = await adapter(p.url).doExecute('tickets.create', params, { ...ctx, attempt: 2 });
    expect(second).toMatchObject({
      kind: 'replayed',
      providerRef: first.providerRef,
      result: { id: first.providerRef },
    });
    expect(s.count('tickets')).toBe(1);
  });

  it('the 400 "already has that value." answer naming a ticket that holds another operation\'s value ⇒ rejected / conflict, never adopted', async () => {
    const s = await sb();
    const a = adapter(s.url);
    const other = await execute(a, 'tickets.create', ticket('t-other'));
    const p = await proxy(s.url, [taken('external_ref', 'EXT-1', other.providerRef!)]);
    const second = await execute(adapter(p.url), 'tickets.create', ticket('t-mine'));
    expect(second).toMatchObject({ kind: 'rejected', reason: 'conflict', providerRef: other.providerRef });
    expect(s.count('tickets')).toBe(1);
  });

  it('a collision on ANOTHER unique property ⇒ rejected / conflict, never adopted', async () => {
    const tickets = defaultObjectTypes().find((t) => t.names.includes('tickets'))!;
    const withRef = (list: readonly string[]) => [...list, 'external_ref'];
    const { s, a } = await rig({
      objectTypes: [{ ...tickets, properties: withRef(tickets.properties), unique: withRef(tickets.unique) }],
    });
    const one = ticket('t-one', { external_ref: 'EXT-1' });
    const two = ticket('t-two', { external_ref: 'EXT-1' });
    const first = await execute(a, 'tickets.create', one);
    const second = await execute(a, 'tickets.create', two);
    expect(second).toMatchObject({ kind: 'rejected', reason: 'conflict', providerRef: first.providerRef });
    expect(s.count('tickets')).toBe(1);
  });
});

interface Case {
  readonly op?: 'contacts.update' | 'objects.upsert' | 'tickets.create';
  readonly params: Record<string, unknown>;
  readonly sandbox?: HubSpotSandboxOptions;
  readonly setup?: (s: HubSpotSandbox) => void;
  readonly faults?: Parameters<typeof startFaultProxy>[0]['faults'];
  readonly options?: Parameters<typeof adapter>[1];
  readonly expect: Record<string, unknown>;
  /** Tickets in the sandbox afterwards. */
  readonly tickets?: number;
  readonly message?: RegExp;
}

/** A provider whose clock runs an hour behind ours answers `Date` and a Retry-After `s` seconds later by its clock. */
const anHourBehind = (s: number) => {
  const at = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
  return { date: new Date(at).toUTCString(), 'retry-after': new Date(at + s * 1000).toUTCString() };
};
const gatewayBody = (body: Record<string, unknown>) => ({ status: 'error', correlationId: 'c-1', ...body });

// One answer each, from the sandbox itself or scripted by the fault proxy in front of it.
const CASES: Record<string, Case> = {
  'a 2xx the SDK cannot read ⇒ unknown / truncated-response (applied, result unreadable)': {
    params: ticket('t-garbled'),
    faults: [{ kind: 'status', status: 201, body: '{"id":', headers: { 'content-type': 'application/json' } }],
    expect: { kind: 'unknown', cause: 'truncated-response', status: 201 },
  },
  'a 2xx without a record id ⇒ unknown / truncated-response': {
    params: ticket('t-no-id'),
    faults: [{ kind: 'status', status: 201, body: { properties: {} } }],
    expect: { kind: 'unknown', cause: 'truncated-response' },
  },
  'TEN_SECONDLY_ROLLING ⇒ X-HubSpot-RateLimit-Interval-Milliseconds (10 s), policy name kept as code; nothing written':
    {
      params: ticket('t-429'),
      setup: (s) => s.throttle(1, 'TEN_SECONDLY_ROLLING'),
      expect: {
        kind: 'not-applied',
        status: 429,
        code: 'TEN_SECONDLY_ROLLING',
        retryAfterMs: 10_000,
        requestId: expect.any(String),
      },
      tickets: 0,
    },
  "an HTTP-date Retry-After is measured from HubSpot's Date, not our clock (an hour ahead of it here)": {
    params: ticket('t-ra-date'),
    faults: [
      { kind: 'status', status: 429, headers: anHourBehind(30), body: gatewayBody({ errorType: 'RATE_LIMIT' }) },
    ],
    expect: { kind: 'not-applied', status: 429, retryAfterMs: 30_000 },
    tickets: 0,
  },
  '429 DAILY ⇒ a day': {
    op: 'objects.upsert',
    params: order('A-429d'),
    setup: (s) => s.throttle(1, 'DAILY'),
    expect: { kind: 'not-applied', code: 'DAILY', retryAfterMs: 86_400_000 },
  },
  'Retry-After, when sent, wins over the policy': {
    params: ticket('t-ra'),
    faults: [
      {
        kind: 'status',
        status: 429,
        retryAfterS: 3,
        body: gatewayBody({
          message: 'You have reached your ten_secondly_rolling limit.',
          errorType: 'RATE_LIMIT',
          policyName: 'TEN_SECONDLY_ROLLING',
        }),
      },
    ],
    expect: { kind: 'not-applied', retryAfterMs: 3000, requestId: 'c-1' },
  },
  // https://developers.hubspot.com/docs/api-reference/error-handling: "Locks will last for 2 seconds"; 477 sends Retry-After.
  '423 Locked (a large sync holds the lock) ⇒ not-applied, at least the documented 2 s; nothing written': {
    op: 'objects.upsert',
    params: order('A-423'),
    faults: [{ kind: 'status', status: 423, body: gatewayBody({ message: 'Locked' }) }],
    expect: { kind: 'not-applied', status: 423, retryAfterMs: 2000 },
  },
  '477 Migration in Progress ⇒ not-applied, its Retry-After honoured': {
    params: ticket('t-477'),
    faults: [
      { kind: 'status', status: 477, retryAfterS: 600, body: gatewayBody({ message: 'Migration in progress' }) },
    ],
    expect: { kind: 'not-applied', status: 477, retryAfterMs: 600_000 },
    tickets: 0,
  },
  '400 unknown property ⇒ rejected / validation, category kept': {
    params: ticket('t-400', { no_such_property: 'x' }),
    expect: { kind: 'rejected', reason: 'validation', status: 400, code: 'VALIDATION_ERROR' },
    message: /PROPERTY_DOESNT_EXIST/,
  },
  '401 wrong token ⇒ rejected / authentication': {
    op: 'objects.upsert',
    params: order('A-401'),
    options: { accessToken: 'pat-wrong' },
    expect: { kind: 'rejected', reason: 'authentication', status: 401, code: 'INVALID_AUTHENTICATION' },
  },
  '403 missing scope ⇒ rejected / permission': {
    params: ticket('t-403'),
    setup: (s) => s.denyScope('tickets'),
    expect: { kind: 'rejected', reason: 'permission', status: 403, code: 'MISSING_SCOPES' },
  },
  '404 unknown contact ⇒ rejected / not-found': {
    op: 'contacts.update',
    params: { contactId: '999999', properties: { firstname: 'Ada' } },
    expect: { kind: 'rejected', reason: 'not-found', status: 404, code: 'OBJECT_NOT_FOUND' },
  },
  'a conflict body without "Existing ID" ⇒ unknown (the runner looks it up), not adopted blindly': {
    params: ticket('t-409-noid'),
    faults: [
      {
        kind: 'status',
        status: 409,
        body: gatewayBody({ message: 'duplicate value', correlationId: 'c-9', category: 'CONFLICT' }),
      },
    ],
    expect: { kind: 'unknown', status: 409, code: 'CONFLICT', requestId: 'c-9' },
  },
  ...Object.fromEntries(
    [500, 502, 503, 504].map((status) => [
      `${status} on tickets.create ⇒ unknown / server-error`,
      {
        params: ticket(`t-${status}`),
        setup: (s: HubSpotSandbox) => s.failNext(1, { status }),
        expect: { kind: 'unknown', cause: 'server-error', status },
      },
    ]),
  ),
  'a 500 after HubSpot committed ⇒ unknown, and the ticket does exist (why a 5xx is never "not applied")': {
    params: ticket('t-500c'),
    setup: (s) => s.failNext(1, { status: 500, commit: true }),
    expect: { kind: 'unknown', cause: 'server-error' },
    tickets: 1,
  },
  'a 503 with Retry-After ⇒ unknown / server-error, its wait kept so the runner looks up no sooner': {
    params: ticket('t-503ra'),
    faults: [{ kind: 'status', status: 503, retryAfterS: 30, body: gatewayBody({ message: 'Service Unavailable' }) }],
    expect: { kind: 'unknown', cause: 'server-error', status: 503, retryAfterMs: 30_000 },
    tickets: 0,
  },
  'a 502 with a plain-text body from a gateway ⇒ unknown / server-error': {
    op: 'objects.upsert',
    params: order('A-502'),
    faults: [{ kind: 'status', status: 502, body: '<html>Bad Gateway</html>' }],
    expect: { kind: 'unknown', cause: 'server-error', status: 502 },
  },
  'response dropped after the commit ⇒ unknown / connection-reset; the ticket exists': {
    params: ticket('t-drop'),
    faults: ['drop-response'],
    expect: { kind: 'unknown', cause: 'connection-reset' },
    tickets: 1,
  },
  'no answer within timeoutMs ⇒ unknown / timeout': {
    params: ticket('t-slow'),
    faults: [{ kind: 'delay', ms: 3000 }],
    options: { timeoutMs: 300 },
    expect: { kind: 'unknown', cause: 'timeout' },
  },
  'reset before the request reached HubSpot ⇒ still unknown: a reset cannot prove it never arrived': {
    params: ticket('t-reset'),
    faults: ['reset-before'],
    expect: { kind: 'unknown', cause: 'connection-reset' },
    tickets: 0,
  },
};

describe('one answer ⇒ one outcome', () => {
  it.each(Object.entries(CASES))('%s', async (_name, c) => {
    const s = await sb(c.sandbox);
    c.setup?.(s);
    const a = adapter(c.faults ? (await proxy(s.url, c.faults)).url : s.url, c.options);
    const op = c.op ?? 'tickets.create';
    const o = await a.doExecute(op, c.params, executeContext(a, op, operationIdFor(a, op, c.params)));
    expect(o).toMatchObject(c.expect);
    if (c.message) expect(o.kind === 'rejected' && o.message).toMatch(c.message);
    if (c.tickets !== undefined) expect(s.count('tickets')).toBe(c.tickets);
  });

  it('connection refused ⇒ not-applied (no connection, so HubSpot never saw it)', async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer();
      srv.listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const a = adapter(`http://127.0.0.1:${port}`);
    const params = ticket('t-refused');
    expect(await execute(a, 'tickets.create', params)).toMatchObject({
      kind: 'not-applied',
      code: 'ECONNREFUSED',
    });
  });

  it("the caller's signal aborted before sending ⇒ not-applied, nothing reaches the sandbox", async () => {
    const { s, a } = await rig();
    const params = ticket('t-abort');
    const o = await a.doExecute(
      'tickets.create',
      params,
      executeContext(a, 'tickets.create', operationIdFor(a, 'tickets.create', params), { signal: AbortSignal.abort() }),
    );
    expect(o).toMatchObject({ kind: 'not-applied', code: 'ABORTED_BEFORE_SEND' });
    expect(s.requests).toHaveLength(0);
  });
});

describe('bad input gets a typed answer and sends nothing', () => {
  it.each([
    ['tickets.create', { ref: 'x', properties: { subject: 's', hs_pipeline: '0' } }, /hs_pipeline_stage is required/],
    // The frame checks the schema first (the same order as the runner's intake), so these read as the schema's field errors.
    [
      'tickets.create',
      { ref: '', properties: { subject: 's', hs_pipeline: '0', hs_pipeline_stage: '1' } },
      /ref must NOT have fewer than 1 characters/,
    ],
    [
      'tickets.create',
      {
        ref: 'x',
        properties: { subject: 's', hs_pipeline: '0', hs_pipeline_stage: '1', retrysafe_operation_id: 'mine' },
      },
      /adapter's id property/,
    ],
    [
      'objects.upsert',
      { objectType: '2-100', ref: 'o-1', properties: { amount: { nested: 1 } } },
      /properties\.amount must be string/,
    ],
    [
      'objects.upsert',
      { objectType: '2-100', ref: 'o-1', properties: {} },
      /properties must NOT have fewer than 1 properties/,
    ],
    [
      'contacts.update',
      { contactId: '1', properties: { 'bad name': 'x' } },
      /properties\.bad name is not an allowed property name/,
    ],
    [
      'contacts.update',
      { contactId: '1', properties: { firstname: 'x' }, extra: true },
      /extra is not a field of this operation/,
    ],
  ] as const)('%s %j ⇒ rejected / validation', async (op, params, message) => {
    const { s, a } = await rig();
    const update = { contactId: '1', properties: { x: 1 } };
    const o = await a.doExecute(
      op,
      params,
      executeContext(a, 'contacts.update', operationIdFor(a, 'contacts.update', update)),
    );
    expect(o).toMatchObject({ kind: 'rejected', reason: 'validation' });
    expect(o.kind === 'rejected' && o.message).toMatch(message);
    expect(s.requests).toHaveLength(0);
  });

  it('an operation the adapter does not declare ⇒ UnknownOperationError', async () => {
    const a = adapter('http://127.0.0.1:9');
    const ctx = executeContext(
      a,
      'contacts.update',
      operationIdFor(a, 'contacts.update', { contactId: '1', properties: { x: 1 } }),
    );
    await expect(a.doExecute('deals.create', {}, ctx)).rejects.toSatisfy((e) => UnknownOperationError.isInstance(e));
    expect(() => a.deriveProviderKey('deals.create', ctx.businessOperationId)).toThrow(/no operation "deals.create"/);
  });

  it.each([
    [{ accessToken: '' }, /accessToken/],
    [{ accessToken: TOKEN, baseUrl: 'not a url' }, /not a URL/],
    [{ accessToken: TOKEN, baseUrl: 'http://api.hubapi.com' }, /plain http only for a loopback/],
    [{ accessToken: TOKEN, timeoutMs: 0 }, /timeoutMs/],
    [{ accessToken: TOKEN, timeoutMs: 1.5 }, /timeoutMs must be a positive integer/],
    [{ accessToken: TOKEN, idProperty: 'Bad-Name' }, /idProperty/],
    [{ accessToken: TOKEN, searchSettleMs: -1 }, /searchSettleMs/],
  ])('options %j ⇒ AdapterConfigurationError', (options, message) => {
    expect(() => createHubSpotAdapter(options as never)).toThrow(message);
    try {
      createHubSpotAdapter(options as never);
    } catch (e) {
      expect(AdapterConfigurationError.isInstance(e)).toBe(true);
    }
  });
});

describe('provider key', () => {
  it('derived from the business-operation id (same id ⇒ same key); none for the set-value PATCH', () => {
    const a = adapter('http://127.0.0.1:9');
    const c1 = executeContext(a, 'tickets.create', operationIdFor(a, 'tickets.create', ticket('same')));
    const c2 = executeContext(
      a,
      'tickets.create',
      operationIdFor(a, 'tickets.create', ticket('same', { content: 'reworded description' })),
    );
    expect(c1.businessOperationId).toBe(c2.businessOperationId);
    expect(c1.providerKey).toBe(c2.providerKey);
    expect(c1.providerKey).toBe(c1.businessOperationId);
    expect(
      executeContext(a, 'tickets.create', operationIdFor(a, 'tickets.create', ticket('other'))).providerKey,
    ).not.toBe(c1.providerKey);
    expect(
      executeContext(
        a,
        'contacts.update',
        operationIdFor(a, 'contacts.update', { contactId: '1', properties: { a: 1 } }),
      ).providerKey,
    ).toBeNull();
  });

  it('a caller-supplied id too long for the key rule becomes a stable 64-hex digest', async () => {
    const { asBusinessOperationId } = await import('@retrysafe/contract');
    const a = adapter('http://127.0.0.1:9');
    const long = asBusinessOperationId('order/' + 'x'.repeat(150));
    const key = a.deriveProviderKey('tickets.create', long)!;
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(a.deriveProviderKey('tickets.create', long)).toBe(key);
  });

  it('the upsert the sandbox receives carries the record key, never the run or attempt id', async () => {
    const { s, a } = await rig();
    const params = order('A-keys');
    const ctx = executeContext(a, 'objects.upsert', operationIdFor(a, 'objects.upsert', params));
    await a.doExecute('objects.upsert', params, ctx);
    const rec = s.records('objects.upsert')[0]!;
    expect(rec.properties.retrysafe_operation_id).toBe(recordKey(params));
    expect(JSON.stringify(s.records())).not.toContain(ctx.runId);
    expect(seen(s, 'upsert')).toBe(1);
  });
});
