export {
  ASYNC_CODES,
  type AsyncReplySandbox,
  type AsyncReplySandboxOptions,
  type SandboxExportJob,
  startAsyncReplySandbox,
} from './async-reply-sandbox.js';
export {
  type ClientTokenSandbox,
  type ClientTokenSandboxOptions,
  INSTANCE_TYPES,
  type SandboxInstance,
  startClientTokenSandbox,
} from './client-token-sandbox.js';
export { type EtagSandbox, type EtagSandboxOptions, type SandboxDocument, startEtagSandbox } from './etag-sandbox.js';
export {
  type DeclaredDrillInput,
  drills,
  drillsForDeclaration,
  type HttpDrill,
  type HttpDrillOperation,
  httpDrills,
  PATTERN_BENCHES,
  patternOf,
} from './http-drills.js';
export {
  type IetfKeySandbox,
  type IetfKeySandboxOptions,
  PROBLEM,
  type SandboxOrder,
  startIetfKeySandbox,
} from './ietf-key-sandbox.js';
export type { SandboxRequest } from './server.js';
