import { randomBytes } from 'node:crypto';
import type { SandboxReply as Reply } from '@retrysafe/sandbox-kit';
import { matches, parseSearchQuery, type SearchQueryError } from './search-query.js';
import type { SandboxRecord, SandboxRequestResult, StripeRecordKind } from './stripe-sandbox.js';

/*
 * The sandbox's state: the objects Stripe holds, and what its endpoints do with them (parameter
 * validation, endpoint execution, retrieve / list / search). Every answer is a reply; the layers in
 * front of them (rate limiter, authentication, idempotency keys, faults) are in stripe-sandbox.ts.
 */

export const RESOURCES: Record<string, { kind: StripeRecordKind; prefix: string; search: boolean }> = {
  customers: { kind: 'customer', prefix: 'cus_', search: true },
  payment_intents: { kind: 'payment_intent', prefix: 'pi_', search: true },
  invoices: { kind: 'invoice', prefix: 'in_', search: true },
  refunds: { kind: 'refund', prefix: 're_', search: false },
};

function newId(prefix: string): string {
  return prefix + randomBytes(12).toString('base64url').replace(/[-_]/g, 'x').slice(0, 14);
}

export function err(status: number, type: string, message: string, extra: Record<string, unknown> = {}): Reply {
  return { status, body: { error: { type, message, ...extra } } };
}

const isIntString = (v: unknown): v is string => typeof v === 'string' && /^\d+$/.test(v);

/** The objects Stripe holds, and what its endpoints do with them. */
export interface StripeStore {
  readonly records: SandboxRecord[];
  /** Parameter validation (before the idempotency layer: nothing stored), or null when the params pass. */
  validate(resource: string, p: Record<string, unknown>): Reply | null;
  /** Endpoint execution (stored for the key). */
  execute(resource: string, p: Record<string, unknown>): Reply;
  /** GET: retrieve one, list, or search (which lags `searchDelayMs` behind writes). */
  read(
    resource: string,
    rest: string[],
    query: URLSearchParams,
    searchDelayMs: number,
  ): { reply: Reply; result: SandboxRequestResult };
}

/** What the store's endpoints share. */
interface StoreState {
  readonly records: SandboxRecord[];
  readonly byId: Map<string, SandboxRecord>;
  readonly now: () => number;
}

function add(
  st: StoreState,
  kind: StripeRecordKind,
  object: Record<string, unknown>,
  fixture = false,
): Record<string, unknown> {
  const rec: SandboxRecord = { kind, id: String(object.id), object, createdAt: st.now(), fixture };
  st.records.push(rec);
  st.byId.set(rec.id, rec);
  return object;
}

/** The objects the README and the drills refer to. */
function addFixtures(st: StoreState): void {
  const created = Math.floor(st.now() / 1000);
  const fixture = (kind: StripeRecordKind, id: string, fields: Record<string, unknown>) =>
    add(st, kind, { id, object: kind, created, ...fields, metadata: {}, livemode: false }, true);
  fixture('customer', 'cus_fixture', { email: null, name: 'Fixture customer' });
  fixture('customer', 'cus_123', { email: null, name: 'README customer' });
  fixture('payment_intent', 'pi_fixture', {
    amount: 10_000,
    amount_received: 10_000,
    currency: 'eur',
    customer: 'cus_fixture',
    status: 'succeeded',
  });
}

// ---- endpoint execution (stored for the key) ----
/** A new object of `kind` with the id, type and creation time Stripe gives every object, stored. */
function newObject(st: StoreState, kind: StripeRecordKind, fields: Record<string, unknown>): Record<string, unknown> {
  const { prefix } = Object.values(RESOURCES).find((r) => r.kind === kind)!;
  return add(st, kind, { id: newId(prefix), object: kind, created: Math.floor(st.now() / 1000), ...fields });
}
const ok = (body: Record<string, unknown>): Reply => ({ status: 200, body });

function execute(st: StoreState, resource: string, p: Record<string, unknown>): Reply {
  const metadata = (p.metadata as Record<string, string> | undefined) ?? {};
  const missingObject = (kind: string, id: unknown, param: string) =>
    err(404, 'invalid_request_error', `No such ${kind}: '${String(id)}'`, { code: 'resource_missing', param });
  switch (resource) {
    case 'customers':
      return ok(
        newObject(st, 'customer', {
          email: p.email ?? null,
          name: p.name ?? null,
          phone: p.phone ?? null,
          description: p.description ?? null,
          metadata,
          livemode: false,
        }),
      );
    case 'payment_intents': {
      if (p.customer !== undefined && st.byId.get(String(p.customer))?.kind !== 'customer')
        return missingObject('customer', p.customer, 'customer');
      const confirm = p.confirm === 'true';
      // A declined create+confirm still creates the PaymentIntent: it stays in requires_payment_method
      // and the 402's error body carries it (https://docs.stripe.com/api/errors, payment_intent).
      const declined = confirm && p.payment_method === 'pm_card_chargeDeclined';
      const status = declined
        ? 'requires_payment_method'
        : confirm && p.payment_method
          ? p.capture_method === 'manual'
            ? 'requires_capture'
            : 'succeeded'
          : p.payment_method
            ? 'requires_confirmation'
            : 'requires_payment_method';
      const decline = {
        type: 'card_error',
        code: 'card_declined',
        decline_code: 'generic_decline',
        message: 'Your card was declined.',
      };
      const pi = newObject(st, 'payment_intent', {
        amount: Number(p.amount),
        amount_received: status === 'succeeded' ? Number(p.amount) : 0,
        currency: p.currency,
        customer: p.customer ?? null,
        description: p.description ?? null,
        payment_method: declined ? null : (p.payment_method ?? null),
        capture_method: p.capture_method ?? 'automatic',
        status,
        last_payment_error: declined ? { ...decline, payment_method: { id: p.payment_method } } : null,
        metadata,
        livemode: false,
      });
      if (declined)
        return err(402, 'card_error', decline.message, {
          code: decline.code,
          decline_code: decline.decline_code,
          payment_intent: pi,
        });
      return { status: 200, body: pi };
    }
    case 'invoices': {
      if (st.byId.get(String(p.customer))?.kind !== 'customer')
        return missingObject('customer', p.customer, 'customer');
      return ok(
        newObject(st, 'invoice', {
          customer: p.customer,
          status: 'draft',
          description: p.description ?? null,
          collection_method: p.collection_method ?? 'charge_automatically',
          days_until_due: p.days_until_due === undefined ? null : Number(p.days_until_due),
          auto_advance: p.auto_advance === 'true',
          currency: p.currency ?? 'eur',
          amount_due: 0,
          metadata,
          livemode: false,
        }),
      );
    }
    case 'refunds': {
      const pi = st.byId.get(String(p.payment_intent));
      if (pi?.kind !== 'payment_intent') return missingObject('payment_intent', p.payment_intent, 'payment_intent');
      if (pi.object.status !== 'succeeded') {
        return err(
          400,
          'invalid_request_error',
          `PaymentIntent ${pi.id} does not have a successful charge to refund.`,
          { code: 'charge_not_refundable' },
        );
      }
      const refunded = st.records
        .filter((r) => r.kind === 'refund' && r.object.payment_intent === pi.id)
        .reduce((s, r) => s + Number(r.object.amount), 0);
      const remaining = Number(pi.object.amount_received) - refunded;
      const amount = p.amount === undefined ? remaining : Number(p.amount);
      if (amount <= 0 || amount > remaining) {
        return err(
          400,
          'invalid_request_error',
          `Refund amount (${amount}) is greater than the unrefunded amount on the charge (${remaining}).`,
          { code: 'amount_too_large', param: 'amount' },
        );
      }
      return ok(
        newObject(st, 'refund', {
          amount,
          currency: pi.object.currency,
          payment_intent: pi.id,
          reason: p.reason ?? null,
          status: 'succeeded',
          metadata,
        }),
      );
    }
  }
  return err(404, 'invalid_request_error', 'Unrecognized request URL');
}

function read(
  st: StoreState,
  resource: string,
  rest: string[],
  query: URLSearchParams,
  searchDelayMs: number,
): { reply: Reply; result: SandboxRequestResult } {
  const info = RESOURCES[resource]!;
  if (rest.length === 1 && rest[0] === 'search') {
    if (!info.search)
      return {
        reply: err(404, 'invalid_request_error', `Unrecognized request URL (GET: /v1/${resource}/search).`),
        result: 'not-found',
      };
    let parsed;
    try {
      parsed = parseSearchQuery(query.get('query') ?? '');
    } catch (e) {
      return {
        reply: err(400, 'invalid_request_error', `Invalid search query: ${(e as SearchQueryError).message}`, {
          param: 'query',
        }),
        result: 'invalid',
      };
    }
    const limit = Math.min(Math.max(Number(query.get('limit') ?? 10) || 10, 1), 100);
    const visibleBefore = st.now() - searchDelayMs;
    const data = st.records
      .filter((r) => r.kind === info.kind && r.createdAt <= visibleBefore && matches(r.object, parsed))
      .reverse()
      .map((r) => r.object);
    // The next page's token (opaque to clients) is where it starts.
    const from = Number(/^page_(\d+)$/.exec(query.get('page') ?? '')?.[1] ?? 0);
    const more = data.length > from + limit;
    return {
      reply: {
        status: 200,
        body: {
          object: 'search_result',
          url: `/v1/${resource}/search`,
          has_more: more,
          next_page: more ? `page_${from + limit}` : null,
          data: data.slice(from, from + limit),
        },
      },
      result: 'read',
    };
  }
  if (rest.length === 1) {
    const rec = st.byId.get(rest[0]!);
    if (!rec || rec.kind !== info.kind)
      return {
        reply: err(404, 'invalid_request_error', `No such ${info.kind}: '${rest[0]}'`, {
          code: 'resource_missing',
          param: 'id',
        }),
        result: 'not-found',
      };
    return { reply: { status: 200, body: rec.object }, result: 'read' };
  }
  if (rest.length === 0) {
    // List: newest first, optional equality filters on customer / payment_intent, starting_after pagination. Not delayed.
    const limit = Math.min(Math.max(Number(query.get('limit') ?? 10) || 10, 1), 100);
    let data = st.records
      .filter((r) => r.kind === info.kind)
      .reverse()
      .map((r) => r.object);
    for (const f of ['customer', 'payment_intent'] as const) {
      const v = query.get(f);
      if (v !== null) data = data.filter((o) => o[f] === v);
    }
    const after = query.get('starting_after');
    if (after !== null) {
      const i = data.findIndex((o) => o.id === after);
      data = i < 0 ? [] : data.slice(i + 1);
    }
    return {
      reply: {
        status: 200,
        body: { object: 'list', url: `/v1/${resource}`, has_more: data.length > limit, data: data.slice(0, limit) },
      },
      result: 'read',
    };
  }
  return { reply: err(404, 'invalid_request_error', 'Unrecognized request URL'), result: 'not-found' };
}

export function createStripeStore(now: () => number, fixtures: boolean): StripeStore {
  const st: StoreState = { records: [], byId: new Map(), now };
  if (fixtures) addFixtures(st);
  return {
    records: st.records,
    validate,
    execute: (resource, p) => execute(st, resource, p),
    read: (resource, rest, query, searchDelayMs) => read(st, resource, rest, query, searchDelayMs),
  };
}

/** Parameter validation (before the idempotency layer: nothing stored), or null when the params pass. */
function validate(resource: string, p: Record<string, unknown>): Reply | null {
  const allowed: Record<string, string[]> = {
    customers: ['email', 'name', 'phone', 'description', 'metadata'],
    payment_intents: [
      'amount',
      'currency',
      'customer',
      'description',
      'payment_method',
      'payment_method_types',
      'confirm',
      'capture_method',
      'metadata',
    ],
    invoices: [
      'customer',
      'description',
      'collection_method',
      'days_until_due',
      'auto_advance',
      'currency',
      'metadata',
    ],
    refunds: ['payment_intent', 'amount', 'reason', 'metadata'],
  };
  const invalid = (param: string, message: string) =>
    err(400, 'invalid_request_error', message, { code: 'parameter_invalid', param });
  for (const k of Object.keys(p))
    if (!allowed[resource]!.includes(k))
      return err(400, 'invalid_request_error', `Received unknown parameter: ${k}`, {
        code: 'parameter_unknown',
        param: k,
      });
  if (p.metadata !== undefined) {
    if (typeof p.metadata !== 'object' || p.metadata === null || Array.isArray(p.metadata))
      return invalid('metadata', 'Invalid metadata');
    const entries = Object.entries(p.metadata);
    if (entries.length > 50) return invalid('metadata', 'Metadata can have at most 50 keys');
    for (const [k, v] of entries) {
      if (k.length > 40) return invalid(`metadata[${k}]`, 'Metadata keys can be at most 40 characters');
      if (typeof v !== 'string' || v.length > 500)
        return invalid(`metadata[${k}]`, 'Metadata values can be at most 500 characters');
    }
  }
  const missing = (param: string) =>
    err(400, 'invalid_request_error', `Missing required param: ${param}.`, { code: 'parameter_missing', param });
  if (resource === 'payment_intents') {
    if (p.amount === undefined) return missing('amount');
    if (!isIntString(p.amount) || Number(p.amount) < 1) return invalid('amount', 'Invalid integer: amount');
    if (p.currency === undefined) return missing('currency');
    if (typeof p.currency !== 'string' || !/^[a-z]{3}$/.test(p.currency))
      return invalid('currency', `Invalid currency: ${String(p.currency)}`);
    if (p.confirm !== undefined && p.confirm !== 'true' && p.confirm !== 'false')
      return invalid('confirm', 'Invalid boolean: confirm');
  }
  if (resource === 'invoices') {
    if (p.customer === undefined) return missing('customer');
    if (p.collection_method === 'send_invoice' && p.days_until_due === undefined) return missing('days_until_due');
  }
  if (resource === 'refunds') {
    if (p.payment_intent === undefined) return missing('payment_intent');
    if (p.amount !== undefined && (!isIntString(p.amount) || Number(p.amount) < 1))
      return invalid('amount', 'Invalid integer: amount');
  }
  return null;
}
