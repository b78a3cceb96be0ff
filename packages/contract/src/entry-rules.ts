// `@retrysafe/contract/rules`: what a card implies, each rule with one owner (re-send and look-up timing,
// normalisation, durations), for everything that decides from a card.

export * from './card-rules.js';
export { durationMs, formatDuration, isDuration } from './duration.js';
export {
  canonicalDecimal,
  describeNormalization,
  differingPaths,
  intentIdentity,
  normalizeIntent,
  normalizeParams,
} from './intent.js';
