export type { ExploreOptions, ExploreReport, TraceStep, Violation } from './explore.js';
export { explore } from './explore.js';
export type { DecideFn, Fate } from './model.js';
