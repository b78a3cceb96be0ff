export { startIetfKeySandbox, PROBLEM, type IetfKeySandbox, type IetfKeySandboxOptions, type SandboxOrder } from './ietf-key-sandbox.js';
export { startAsyncReplySandbox, ASYNC_CODES, type AsyncReplySandbox, type AsyncReplySandboxOptions, type SandboxExportJob } from './async-reply-sandbox.js';
export { startEtagSandbox, type EtagSandbox, type EtagSandboxOptions, type SandboxDocument } from './etag-sandbox.js';
export { startClientTokenSandbox, INSTANCE_TYPES, type ClientTokenSandbox, type ClientTokenSandboxOptions, type SandboxInstance } from './client-token-sandbox.js';
export type { SandboxRequest } from './server.js';
export { httpDrills, drills, drillsForDeclaration, patternOf, PATTERN_BENCHES, type DeclaredDrillInput, type HttpDrill, type HttpDrillOperation } from './http-drills.js';
