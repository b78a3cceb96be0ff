import type { DrillFault, DrillOperation, DrillSetup } from '@retrysafe/contract';
import { createHttpAdapter } from '../http-adapter.js';
import type { HttpOperationSpec } from '../http-operations.js';
import { asyncExportsCreate, clientTokenInstancesRun, etagDocumentsUpdate, ietfOrdersCreate } from '../http-patterns.js';
import { startAsyncReplySandbox } from './async-reply-sandbox.js';
import { startClientTokenSandbox } from './client-token-sandbox.js';
import { startEtagSandbox } from './etag-sandbox.js';
import { startIetfKeySandbox } from './ietf-key-sandbox.js';

/**
 * Drill setups are the contract's `DrillSetup`: the conformance kit (`runConformance`) and the CLI's
 * `retrysafe drill` run what this file exports, and this package depends on the contract alone.
 */
export type HttpDrill = DrillSetup;
export type HttpDrillOperation = DrillOperation;
type StatusFault = Extract<DrillFault, { kind: 'status' }>;

interface PatternSandbox { readonly url: string; count(kind?: string): number; close(): Promise<void>; expireKeys?(): void }

const status = (s: number, body: unknown, retryAfterS?: number, headers?: Record<string, string>): StatusFault => ({ kind: 'status', status: s, body, ...(retryAfterS ? { retryAfterS } : {}), ...(headers ? { headers } : {}) });
const problem = (type: string) => ({ type: `https://retrysafe.invalid/problems/${type}`, title: type });
const err = (code: string) => ({ error: { code, message: code } });

function drill(provider: string, op: string, spec: (p: string) => HttpOperationSpec, start: (clock: { now(): number }) => Promise<PatternSandbox>, params: (i: number) => Record<string, unknown>, change: string, faults: HttpDrillOperation['faults']): HttpDrill {
  return {
    name: `http-${provider}`,
    createAdapter: ({ baseUrl, timeoutMs }) => createHttpAdapter({ provider, baseUrl, timeoutMs, operations: { [op]: spec(provider) } }),
    startSandbox: async ({ clock }) => {
      const s = await start(clock);
      return { url: s.url, count: (o) => s.count(o), close: () => s.close(), ...(s.expireKeys ? { expireKeys: () => s.expireKeys!() } : {}) };
    },
    operations: { [op]: { params, changeIntent: (p) => ({ ...(p as object), [change]: `${String((p as Record<string, unknown>)[change])}-changed` }), faults } },
  };
}

/** IETF Idempotency-Key, async request-reply, ETag preconditions and AWS-style client tokens. */
export const httpDrills: readonly HttpDrill[] = [
  drill('acme-orders', 'orders.create', ietfOrdersCreate, (clock) => startIetfKeySandbox({ port: 0, clock }), (i) => ({ customer: `cus_${i}`, sku: 'sku_1', quantity: 1, orderRef: `A-${i}` }), 'orderRef', {
    permanent: status(400, problem('invalid-order')),
    transient: status(429, problem('rate-limited')),
    rateLimited: status(429, problem('rate-limited'), 2),
    inProgress: status(409, problem('request-in-flight'), 1),
  }),
  drill('acme-exports', 'exports.create', asyncExportsCreate, (clock) => startAsyncReplySandbox({ port: 0, clock, retryAfterS: 1 }), (i) => ({ dataset: `sales-${i}`, format: 'csv', requestRef: `R-${i}` }), 'requestRef', {
    permanent: status(400, err('InvalidRequest')),
    transient: status(429, err('TooManyRequests')),
    rateLimited: status(429, err('TooManyRequests'), 2),
    // accepted, but the Location header did not survive: the adapter must find the status resource itself
    inProgress: status(202, { status: 'running' }, 1),
  }),
  drill('acme-docs', 'documents.update', etagDocumentsUpdate, () => startEtagSandbox({ port: 0, documents: Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`doc-${i}`, { title: 'Draft', body: '' }])) }), (i) => ({ id: `doc-${i}`, etag: '"g1"', title: `Final ${i}`, body: 'Signed.' }), 'title', {
    permanent: status(400, err('invalid')),
    transient: status(429, err('rateLimitExceeded')),
    rateLimited: status(429, err('rateLimitExceeded'), 2),
  }),
  drill('acme-compute', 'instances.run', clientTokenInstancesRun, (clock) => startClientTokenSandbox({ port: 0, clock }), (i) => ({ imageId: 'ami-0abcdef12', instanceType: 't3.micro', launchRef: `L-${i}` }), 'launchRef', {
    permanent: status(400, { __type: 'InvalidParameterValue', message: 'InvalidParameterValue' }),
    transient: status(503, { __type: 'RequestLimitExceeded', message: 'RequestLimitExceeded' }),
    rateLimited: status(503, { __type: 'RequestLimitExceeded', message: 'RequestLimitExceeded' }, 2),
  }),
];

/** The name the CLI reads. */
export const drills = httpDrills;
