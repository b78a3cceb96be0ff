export {
  type AsyncReplySandbox,
  type AsyncReplySandboxOptions,
  type SandboxExportJob,
  startAsyncReplySandbox,
} from './async-reply-sandbox.js';
export {
  type ClientTokenSandbox,
  type ClientTokenSandboxOptions,
  type SandboxInstance,
  startClientTokenSandbox,
} from './client-token-sandbox.js';
export { type EtagSandbox, type EtagSandboxOptions, type SandboxDocument, startEtagSandbox } from './etag-sandbox.js';
export { type DeclaredDrillInput, drills, drillsForDeclaration } from './http-drills.js';
export {
  type IetfKeySandbox,
  type IetfKeySandboxOptions,
  type SandboxOrder,
  startIetfKeySandbox,
} from './ietf-key-sandbox.js';
export type { SandboxRequest } from './server.js';
