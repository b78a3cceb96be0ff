import { createFaultQueue } from '@retrysafe/sandbox-kit';
import {
  filtered,
  isPlainObject,
  type KeyedSandbox,
  keyedState,
  listPage,
  type PatternRoute,
  routed,
  type SandboxReply,
  type SandboxRequestView,
} from './server.js';

/**
 * A resource server following draft-ietf-httpapi-idempotency-key-header-06 for `POST /orders`:
 * - `Idempotency-Key` is a Structured Field string (`"…"`); missing ⇒ 400, malformed ⇒ 400.
 * - same key, other payload (server-side fingerprint) ⇒ 422;
 * - same key while the first request is still being processed ⇒ 409;
 * - after completion, the stored response (success or error) is replayed;
 * - keys expire after the published `retentionMs`; an expired key is a new request.
 * Errors are RFC 9457 problem+json with a `type` URI.
 */
export interface IetfKeySandboxOptions {
  readonly port?: number;
  /** Time source for key expiry (e.g. the drill's virtual clock). Default: the wall clock. */
  readonly clock?: { now(): number };
  /** Published expiry of keys and stored responses. Default 24 h. */
  readonly retentionMs?: number;
  /** How long processing an order takes (real time), to exercise the 409 in-flight answer. Default 0. */
  readonly processingMs?: number;
  /** Accept an unquoted key too (a lenient server). Default false: the draft's sf-string is required. */
  readonly acceptRawKey?: boolean;
  /** Orders per page of `GET /orders`; a page with more after it carries `Link: <…>; rel="next"` (RFC 8288). Default: one page. */
  readonly pageSize?: number;
}

export interface SandboxOrder {
  readonly id: string;
  readonly customer: string;
  readonly sku: string;
  readonly quantity: number;
  readonly reference: string | null;
}

/** Counts orders created (`orders`, or the operation name `orders.create`). */
export interface IetfKeySandbox extends KeyedSandbox<SandboxOrder> {
  readonly retentionMs: number;
  /** The next `n` new (not replayed) requests fail with a 500 that is stored under their key and replayed. */
  failNext(n: number): void;
}

const PROBLEM = {
  keyMissing: 'https://retrysafe.invalid/problems/idempotency-key-missing',
  keyMalformed: 'https://retrysafe.invalid/problems/idempotency-key-malformed',
  keyReused: 'https://retrysafe.invalid/problems/idempotency-key-reused',
  inFlight: 'https://retrysafe.invalid/problems/request-in-flight',
  invalidOrder: 'https://retrysafe.invalid/problems/invalid-order',
  outOfStock: 'https://retrysafe.invalid/problems/out-of-stock',
  internal: 'https://retrysafe.invalid/problems/internal',
  notFound: 'https://retrysafe.invalid/problems/not-found',
} as const;

const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\\"])*)"$/;

function problem(status: number, type: string, title: string, extra: Record<string, string> = {}): SandboxReply {
  return { status, headers: { 'content-type': 'application/problem+json', ...extra }, body: { type, title, status } };
}

export async function startIetfKeySandbox(options: IetfKeySandboxOptions = {}): Promise<IetfKeySandbox> {
  const orders: SandboxOrder[] = [];
  // The draft's order: a payload mismatch (422) is told before "still processing" (409).
  const { retentionMs, run, start } = keyedState(options, {
    precedence: 'mismatch',
    mismatch: problem(422, PROBLEM.keyReused, 'Idempotency-Key reused with a different payload'),
    inFlight: problem(409, PROBLEM.inFlight, 'a request with this Idempotency-Key is being processed', {
      'retry-after': '1',
    }),
  });
  const failures = createFaultQueue<'internal'>('ietf sandbox');

  function createOrder(body: unknown): SandboxReply {
    if (failures.take()) return problem(500, PROBLEM.internal, 'internal error');
    if (
      !isPlainObject(body) ||
      typeof body.customer !== 'string' ||
      typeof body.sku !== 'string' ||
      !Number.isInteger(body.quantity) ||
      (body.quantity as number) <= 0
    ) {
      return problem(
        400,
        PROBLEM.invalidOrder,
        'customer and sku (strings) and quantity (positive integer) are required',
      );
    }
    if (body.sku.startsWith('oos-')) return problem(409, PROBLEM.outOfStock, 'the sku is out of stock');
    const order: SandboxOrder = {
      id: `ord_${orders.length + 1}`,
      customer: body.customer,
      sku: body.sku,
      quantity: body.quantity as number,
      reference: typeof body.reference === 'string' ? body.reference : null,
    };
    orders.push(order);
    return { status: 201, headers: { location: `/orders/${order.id}` }, body: order };
  }

  function create(req: SandboxRequestView): Promise<SandboxReply> | SandboxReply {
    const rawKey = req.headers['idempotency-key'];
    if (typeof rawKey !== 'string' || rawKey.length === 0)
      return problem(400, PROBLEM.keyMissing, 'Idempotency-Key is missing', {
        link: '<https://retrysafe.invalid/docs/idempotency>; rel="describedby"',
      });
    const m = SF_STRING.exec(rawKey);
    const key = m ? m[1]!.replace(/\\([\\"])/g, '$1') : options.acceptRawKey ? rawKey : null;
    if (key === null || key.length === 0)
      return problem(400, PROBLEM.keyMalformed, 'Idempotency-Key must be a Structured Field string');

    const body = req.body;
    // The stored response (success or error) is replayed for the key's lifetime.
    return run(`POST /orders ${key}`, body, async () => {
      if (options.processingMs) await new Promise((r) => setTimeout(r, options.processingMs));
      return createOrder(body);
    });
  }

  const routes: PatternRoute[] = [
    {
      method: 'GET',
      path: '/orders',
      handle: (req) => listPage(req, filtered(req, 'reference', orders, 'reference'), options.pageSize),
    },
    {
      method: 'GET',
      path: /^\/orders\/([^/]+)$/,
      handle: (_req, one) => {
        const o = orders.find((x) => x.id === decodeURIComponent(one![1]!));
        return o ? { status: 200, body: o } : problem(404, PROBLEM.notFound, 'no such order');
      },
    },
    { method: 'POST', path: '/orders', handle: create },
  ];
  const sandbox = await start({
    requestId: ['x-request-id', 'req_'],
    kinds: ['orders', 'orders.create'],
    records: () => orders,
    handle: routed(routes, problem(404, PROBLEM.notFound, 'no such route')),
  });
  return {
    ...sandbox,
    retentionMs,
    failNext: (n) => failures.add('internal', n),
  };
}
