/** @retrysafe/dbos: retrysafe operations as DBOS steps. Every export of these modules is public. */
export * from './dbos-retrysafe.js';
export * from './errors/dbos-resolution-refused-error.js';
export * from './errors/dbos-step-configuration-error.js';
export { type DbosResolutionMessage, handoffEventKey, resolutionTopic } from './resolution-protocol.js';
export * from './send-resolution.js';
