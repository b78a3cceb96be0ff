// `@retrysafe/contract/rules`: what a card implies, each rule with one owner (re-send and look-up timing,
// normalisation, durations), for everything that decides from a card.

export * from './card-rules.js';
export { DURATION_PATTERN, durationMs, formatDuration, isDuration, roughly } from './duration.js';
export { charsetPattern } from './ids.js';
export {
  accountProblem,
  canonicalDecimal,
  describeNormalization,
  differingPaths,
  intentFingerprintOf,
  intentIdentity,
  NORMALIZATION_STEPS,
  normalizeIntent,
  normalizeParams,
  withinIntent,
} from './intent.js';
