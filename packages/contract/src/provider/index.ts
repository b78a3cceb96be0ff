// `@retrysafe/contract/provider`: the pure functions adapter authors build on, one of each (no I/O).

export { foreignCardProblem, operationParamsErrors, providerKeyShapeProblem, schemaErrors } from '../adapter-frame.js';
export { errorClass, markerGuard } from '../error-class.js';
export { jsonErrorReason } from '../ledger-stored.js';
export { type Say, type SchemaWording, schemaProblems } from '../schema-problems.js';
export * from './network.js';
export * from './options.js';
export type { SchemaType } from './schema-type.js';
