/**
 * The provider plumbing (exported from `@retrysafe/contract`) every adapter shares, as pure functions (no I/O):
 * one Retry-After parser, one network-error classifier, one outcome → lookup-result converter, one
 * base-URL rule. An adapter keeps only what is provider-specific.
 */
export { parseRetryAfter } from './retry-after.js';
export { NEVER_SENT_CODES, classifyTransportFailure, errorCodes, type TransportFailure } from './network.js';
export { checkBaseUrl, isLoopbackHost } from './base-url.js';
export { lookupFromOutcome } from './lookup.js';
