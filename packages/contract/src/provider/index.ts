/**
 * `@retrysafe/contract/provider`: what adapter authors build on, as pure functions (no I/O): one
 * Retry-After parser, one network-error classifier, one outcome → lookup-result converter, one
 * base-URL rule, the frame's params and key checks, and the guard for a package's own error classes.
 */

export { operationParamsErrors, providerKeyShapeProblem } from '../adapter-frame.js';
export { schemaErrors } from '../adapter-params.js';
export { markerGuard } from '../errors.js';
export { checkBaseUrl, isLoopbackHost } from './base-url.js';
export { lookupFromOutcome } from './lookup.js';
export { classifyTransportFailure, errorCodes, NEVER_SENT_CODES, type TransportFailure } from './network.js';
export { parseRetryAfter } from './retry-after.js';
