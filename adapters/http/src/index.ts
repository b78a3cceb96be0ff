// The root entry: what a user of the adapter needs. The loopback pattern sandboxes and drills are in `./sandbox`.
export { createHttpAdapter, type HttpAdapter, type HttpAdapterOptions } from './http-adapter.js';
export { httpCards } from './http-cards.js';
export {
  createHttpAdapterFromDeclaration,
  type HttpAdapterDeclaration,
  type HttpOperationDeclaration,
  type HttpPattern,
} from './http-declaration.js';
// The parts of a declaration (key, lookup, errors, precondition) are its fields' types: HttpOperationSpec['lookup'].
export type { HttpOperationSpec } from './http-operations.js';
// One operation declaration (with its card) per pattern, for your provider's name: start from the one your API follows.
export { asyncExportsCreate, clientTokenInstancesRun, etagDocumentsUpdate, ietfOrdersCreate } from './http-patterns.js';
