// The root entry: what a user of the adapter needs. The loopback pattern sandboxes and drills are in `./sandbox`.
export {
  createHttpAdapter,
  type HttpAdapter,
  type HttpAdapterOptions,
  type TypedHttpOperations,
} from './http-adapter.js';
export { httpCards } from './http-cards.js';
export {
  createHttpAdapterFromDeclaration,
  type HttpAdapterDeclaration,
  type HttpLookupDeclaration,
  type HttpOperationDeclaration,
  type HttpPattern,
  type MatchDeclaration,
  type Template,
} from './http-declaration.js';
export type {
  HttpErrorRule,
  HttpErrorSpec,
  HttpKeySpec,
  HttpLookupSpec,
  HttpMethod,
  HttpOperation,
  HttpOperationSpec,
  HttpPreconditionSpec,
  LookupReadContext,
  StatusMatcher,
  StatusReading,
} from './http-operations.js';
// One operation declaration (with its card) per pattern, for your provider's name: start from the one your API follows.
export { asyncExportsCreate, clientTokenInstancesRun, etagDocumentsUpdate, ietfOrdersCreate } from './http-patterns.js';
