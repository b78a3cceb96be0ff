import { AdapterConfigurationError, type DrillFault, type DrillOperation, type DrillSetup } from '@retrysafe/contract';
import { createHttpAdapter } from '../http-adapter.js';
import {
  createHttpAdapterFromDeclaration,
  type HttpOperationDeclaration,
  type HttpPattern,
} from '../http-declaration.js';
import type { HttpOperationSpec } from '../http-operations.js';
import {
  asyncExportsCreate,
  clientTokenInstancesRun,
  etagDocumentsUpdate,
  ietfOrdersCreate,
} from '../http-patterns.js';
import { startAsyncReplySandbox } from './async-reply-sandbox.js';
import { startClientTokenSandbox } from './client-token-sandbox.js';
import { startEtagSandbox } from './etag-sandbox.js';
import { startIetfKeySandbox } from './ietf-key-sandbox.js';
import type { PatternSandbox } from './server.js';

// The drills are the contract's DrillSetup: the conformance kit and `retrysafe drill` run what this file exports.
type StatusFault = Extract<DrillFault, { kind: 'status' }>;
type StartedSandbox = PatternSandbox<unknown> & { expireKeys?(): void };

const status = (s: number, body: unknown, retryAfterS?: number, headers?: Record<string, string>): StatusFault => ({
  kind: 'status',
  status: s,
  body,
  ...(retryAfterS ? { retryAfterS } : {}),
  ...(headers ? { headers } : {}),
});
const problem = (type: string) => ({ type: `https://retrysafe.invalid/problems/${type}`, title: type });
const err = (code: string) => ({ error: { code, message: code } });

/** What a pattern sandbox needs from a drill: how to start it, reference params, the intent field a changed intent alters, faults in its dialect. */
interface PatternBench {
  readonly provider: string;
  readonly operation: string;
  readonly spec: (provider: string) => HttpOperationSpec;
  readonly start: (clock: { now(): number }) => Promise<StartedSandbox>;
  readonly params: (i: number) => Record<string, unknown>;
  readonly change: string;
  readonly faults: DrillOperation['faults'];
}

/** IETF Idempotency-Key, async request-reply, ETag preconditions and AWS-style client tokens: one bench per pattern. */
const PATTERN_BENCHES: Readonly<Record<HttpPattern, PatternBench>> = {
  'ietf-idempotency-key': {
    provider: 'acme-orders',
    operation: 'orders.create',
    spec: ietfOrdersCreate,
    start: (clock) => startIetfKeySandbox({ port: 0, clock }),
    params: (i) => ({ customer: `cus_${i}`, sku: 'sku_1', quantity: 1, orderRef: `A-${i}` }),
    change: 'orderRef',
    faults: {
      permanent: status(400, problem('invalid-order')),
      transient: status(429, problem('rate-limited')),
      rateLimited: status(429, problem('rate-limited'), 2),
      inProgress: status(409, problem('request-in-flight'), 1),
    },
  },
  'async-request-reply': {
    provider: 'acme-exports',
    operation: 'exports.create',
    spec: asyncExportsCreate,
    start: (clock) => startAsyncReplySandbox({ port: 0, clock, retryAfterS: 1 }),
    params: (i) => ({ dataset: `sales-${i}`, format: 'csv', requestRef: `R-${i}` }),
    change: 'requestRef',
    faults: {
      permanent: status(400, err('InvalidRequest')),
      transient: status(429, err('TooManyRequests')),
      rateLimited: status(429, err('TooManyRequests'), 2),
      // accepted, but the Location header did not survive: the adapter must find the status resource itself
      inProgress: status(202, { status: 'running' }, 1),
    },
  },
  etag: {
    provider: 'acme-docs',
    operation: 'documents.update',
    spec: etagDocumentsUpdate,
    start: () =>
      startEtagSandbox({
        port: 0,
        documents: Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`doc-${i}`, { title: 'Draft', body: '' }])),
      }),
    params: (i) => ({ id: `doc-${i}`, etag: '"g1"', title: `Final ${i}`, body: 'Signed.' }),
    change: 'title',
    faults: {
      permanent: status(400, err('invalid')),
      transient: status(429, err('rateLimitExceeded')),
      rateLimited: status(429, err('rateLimitExceeded'), 2),
    },
  },
  'client-token': {
    provider: 'acme-compute',
    operation: 'instances.run',
    spec: clientTokenInstancesRun,
    start: (clock) => startClientTokenSandbox({ port: 0, clock }),
    params: (i) => ({ imageId: 'ami-0abcdef12', instanceType: 't3.micro', launchRef: `L-${i}` }),
    change: 'launchRef',
    faults: {
      permanent: status(400, { __type: 'InvalidParameterValue', message: 'InvalidParameterValue' }),
      transient: status(503, { __type: 'RequestLimitExceeded', message: 'RequestLimitExceeded' }),
      rateLimited: status(503, { __type: 'RequestLimitExceeded', message: 'RequestLimitExceeded' }, 2),
    },
  },
};

function benchDrill(
  name: string,
  b: PatternBench,
  op: string,
  createAdapter: DrillSetup['createAdapter'],
  params: (i: number) => Record<string, unknown>,
  change: string,
): DrillSetup {
  return {
    name,
    createAdapter,
    startSandbox: async ({ clock }) => {
      const s = await b.start(clock);
      return {
        url: s.url,
        count: (o) => s.count(o),
        close: () => s.close(),
        ...(s.expireKeys ? { expireKeys: () => s.expireKeys!() } : {}),
      };
    },
    operations: {
      [op]: {
        params,
        changeIntent: (p) => ({
          ...(p as object),
          [change]: `${String((p as Record<string, unknown>)[change])}-changed`,
        }),
        faults: b.faults,
      },
    },
  };
}

/** One drill per pattern: the reference declaration against its sandbox (the name the CLI reads). */
export const drills: readonly DrillSetup[] = (Object.values(PATTERN_BENCHES) as PatternBench[]).map((b) =>
  benchDrill(
    `http-${b.provider}`,
    b,
    b.operation,
    ({ baseUrl, timeoutMs }) =>
      createHttpAdapter({
        provider: b.provider,
        baseUrl,
        timeoutMs,
        operations: { [b.operation]: b.spec(b.provider) },
      }),
    b.params,
    b.change,
  ),
);

/** The pattern a declaration follows, read from its shape when it does not name one. */
export function patternOf(d: HttpOperationDeclaration): HttpPattern {
  if (d.drill?.pattern) return d.drill.pattern;
  if (d.asyncReply || d.lookup.method === 'status-url') return 'async-request-reply';
  if (d.precondition) return 'etag';
  if (d.key.travels === 'body') return 'client-token';
  return 'ietf-idempotency-key';
}

export interface DeclaredDrillInput {
  /** The adapter's name in the config (drill and tool names use it). */
  readonly name: string;
  readonly provider: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly operations: Readonly<Record<string, HttpOperationDeclaration>>;
}

/**
 * Drill setups for an HTTP adapter declared as data: each operation runs against the loopback
 * sandbox of its pattern (`drill.pattern`, or read from the declaration's shape), with the
 * declaration's own card, key, lookup and error mapping — the sandbox stands in for your API, so the
 * declaration must speak the pattern's reference dialect (paths, bodies, error codes; see README).
 */
export function drillsForDeclaration(input: DeclaredDrillInput): DrillSetup[] {
  const patterns = Object.values(input.operations).map(patternOf);
  return Object.entries(input.operations).map(([op, d]) => {
    const pattern = patternOf(d);
    // one drill per operation: named by its pattern, and by the operation too when two share a pattern
    const name =
      patterns.filter((p) => p === pattern).length > 1
        ? `${input.name}--${pattern}--${op}`
        : `${input.name}--${pattern}`;
    const b = PATTERN_BENCHES[pattern];
    if (!b)
      throw new AdapterConfigurationError(
        input.provider,
        `operation ${op}: drill.pattern ${String(pattern)} is not one of ${Object.keys(PATTERN_BENCHES).join(', ')}`,
      );
    const tpl = d.drill?.params;
    // `{i}` is the drill operation's number; everything else is a literal param value
    const params = tpl
      ? (i: number) => JSON.parse(JSON.stringify(tpl).replace(/\{i\}/g, String(i))) as Record<string, unknown>
      : b.params;
    const change =
      d.drill?.changeIntent ??
      (d.card.businessOperationId.intentFields.includes(b.change)
        ? b.change
        : (d.card.businessOperationId.intentFields.at(-1) ?? b.change));
    const createAdapter: DrillSetup['createAdapter'] = ({ baseUrl, timeoutMs }) =>
      createHttpAdapterFromDeclaration({
        provider: input.provider,
        baseUrl,
        timeoutMs,
        ...(input.headers ? { headers: input.headers } : {}),
        operations: { [op]: d },
      });
    return benchDrill(name, b, op, createAdapter, params, change);
  });
}
