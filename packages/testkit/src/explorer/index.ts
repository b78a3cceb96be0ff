export type { ExploreOptions, ExploreReport, TraceStep, Violation } from './explore.js';
export { explore } from './explore.js';
export type { DecideFn, Fate, ProviderModel } from './model.js';
export { ALL_FATES, providerFromCard } from './model.js';
