// The sandbox kit: the scaffolding every loopback provider sandbox shares (server, clock, idempotency
// keys, scripted faults, request log). A sandbox keeps only its provider's behaviour: routes, object
// shapes, error shapes, search semantics. Network faults stay in the fault proxy.
export { startLoopbackServer, writeReply, parseJsonBody, isPlainObject, routeRequest, ANSWERED } from './server.js';
export type { LoopbackServer, LoopbackServerOptions, LoopbackRequest, LoopbackHandler, SandboxReply, Route } from './server.js';
export { createSandboxClock, nonNegative } from './clock.js';
export type { SandboxClock, ClockSource } from './clock.js';
export { createKeyStore } from './key-store.js';
export type { KeyStore, KeyStoreOptions, KeyAnswers, KeyEntry, KeyedRequest, KeyedResult } from './key-store.js';
export { faultAt, createFaultScripts, createFaultQueue } from './faults.js';
export type { CallScript, FaultScripts, FaultQueue } from './faults.js';
export { createRequestLog, createCounts } from './request-log.js';
export type { RequestLog, Counts } from './request-log.js';
