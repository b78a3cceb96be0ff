/**
 * `@retrysafe/contract/provider`: what adapter authors build on, as pure functions (no I/O): one
 * Retry-After parser, one network-error classifier, one outcome → lookup-result converter, one
 * base-URL rule, the frame's params and key checks, and the guard for a package's own error classes.
 */
export { parseRetryAfter } from './retry-after.js';
export { NEVER_SENT_CODES, classifyTransportFailure, errorCodes, type TransportFailure } from './network.js';
export { checkBaseUrl, isLoopbackHost } from './base-url.js';
export { lookupFromOutcome } from './lookup.js';
export { ABORTED_BEFORE_SEND_CODE, ABORTED_CODE, INVALID_PARAMS_CODE, PROVIDER_KEY_SHAPE_CODE, operationParamsErrors, providerKeyShapeProblem } from '../adapter-frame.js';
export { schemaErrors } from '../adapter-params.js';
export { markerGuard } from '../errors/retrysafe-error.js';
