// The sandbox kit: the scaffolding every loopback provider sandbox shares (server, clock, idempotency
// keys, scripted faults, request log). A sandbox keeps only its provider's behaviour: routes, object
// shapes, error shapes, search semantics. Network faults stay in the fault proxy.

export type { ClockSource, SandboxClock } from './clock.js';
export { createSandboxClock, nonNegative } from './clock.js';
export type { CallScript, FaultQueue, FaultScripts } from './faults.js';
export { createFaultQueue, createFaultScripts, faultAt } from './faults.js';
export type { KeyAnswers, KeyEntry, KeyedRequest, KeyedResult, KeyStore, KeyStoreOptions } from './key-store.js';
export { createKeyStore } from './key-store.js';
export type { Counts, RequestLog } from './request-log.js';
export { createCounts, createRequestLog } from './request-log.js';
export type {
  LoopbackHandler,
  LoopbackRequest,
  LoopbackServer,
  LoopbackServerOptions,
  Route,
  SandboxReply,
} from './server.js';
export { ANSWERED, isPlainObject, parseJsonBody, routeRequest, startLoopbackServer, writeReply } from './server.js';
