// `@retrysafe/contract/provider`: the pure functions adapter authors build on, one of each (no I/O).

export { operationParamsErrors, providerKeyShapeProblem, schemaErrors } from '../adapter-frame.js';
export { errorClass, markerGuard } from '../error-class.js';
export { type Say, type SchemaWording, schemaProblems } from '../schema-problems.js';
export { checkBaseUrl, isLoopbackHost } from './base-url.js';
export { lookupFromOutcome } from './lookup.js';
export { classifyTransportFailure, errorCodes, NEVER_SENT_CODES, type TransportFailure } from './network.js';
export { positiveInteger } from './options.js';
export { parseRetryAfter } from './retry-after.js';
export type { SchemaType } from './schema-type.js';
