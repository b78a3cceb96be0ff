// `@retrysafe/contract/rules`: what a card implies, each rule with one owner (re-send and look-up timing,
// normalisation, durations), for everything that decides from a card.

export { DEFAULT_CLOCK_SKEW_MARGIN } from './card.js';
export {
  absenceProvenFrom,
  agentIdempotentHint,
  cardMargin,
  completionRecoverable,
  type DispatchTimes,
  keyFoldsResends,
  type LookupTiming,
  lateApplyAllowanceMs,
  lookupAvailable,
  lookupSettleMs,
  notFoundIsAuthoritative,
  type ResendSafety,
  resendSafety,
  retentionPassed,
} from './card-rules.js';
export { durationMs, formatDuration, isDuration } from './duration.js';
export { intentIdentity } from './ids.js';
export {
  canonicalDecimal,
  describeNormalization,
  differingPaths,
  NORMALIZATION_STEPS,
  normalizeIntent,
  normalizeParams,
} from './normalize.js';
