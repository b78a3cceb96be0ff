/**
 * `@retrysafe/contract/rules`: what a card implies, each rule with one owner, for the runner, drills,
 * agent tools and adapters that decide from a card: re-send and look-up timing, intent normalisation
 * and param comparison, durations.
 */
export {
  absenceProvenFrom,
  agentIdempotentHint,
  cardMargin,
  completionRecoverable,
  keyFoldsResends,
  lateApplyAllowanceMs,
  lookupAvailable,
  lookupSettleMs,
  notFoundIsAuthoritative,
  resendSafety,
  retentionPassed,
  type DispatchTimes,
  type LookupTiming,
  type ResendSafety,
} from './card-rules.js';
export { DEFAULT_CLOCK_SKEW_MARGIN } from './card.js';
export { MERGING_STEPS, NORMALIZATION_STEPS, canonicalDecimal, describeNormalization, differingPaths, normalizeIntent, normalizeParams } from './normalize.js';
export { durationMs, formatDuration, isDuration } from './duration.js';
