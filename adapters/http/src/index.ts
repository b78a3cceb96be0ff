export { createHttpAdapter, type HttpAdapter, type HttpAdapterOptions } from './http-adapter.js';
export {
  createHttpAdapterFromDeclaration,
  fillTemplate,
  operationFromDeclaration,
  type HttpAdapterDeclaration,
  type HttpLookupDeclaration,
  type HttpOperationDeclaration,
  type HttpPattern,
  type MatchDeclaration,
  type Template,
} from './http-declaration.js';
export {
  buildOperation,
  fillPath,
  sfString,
  type HttpErrorRule,
  type HttpErrorSpec,
  type HttpKeySpec,
  type HttpLookupSpec,
  type HttpMethod,
  type HttpOperation,
  type HttpOperationSpec,
  type HttpPreconditionSpec,
  type LookupReadContext,
  type StatusMatcher,
  type StatusReading,
} from './http-operations.js';
export { classifyNetworkError, classifyResponse, parseRetryAfter, type HttpResponseView } from './http-errors.js';
export { SOURCES, documentsUpdateCard, exportsCreateCard, instancesRunCard, ordersCreateCard } from './http-cards.js';
export { asyncExportsCreate, clientTokenInstancesRun, etagDocumentsUpdate, ietfOrdersCreate } from './http-patterns.js';
