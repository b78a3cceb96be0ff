// The contract's root: what a user of retrysafe, an adapter or a card calls. Authors' plumbing is on
// subpaths: ./provider (adapters), ./ledger (ledgers), ./rules (what a card implies), ./render (card pages).

export * from './adapter.js';
export type {
  AdapterDefinition,
  FramedAdapter,
  FramedExecuteContext,
  FramedLookupContext,
  FrameOperation,
} from './adapter-frame.js';
export { defineAdapter } from './adapter-frame.js';
export { canonicalJson, fingerprint, sha256Hex } from './canonical.js';
export type * from './card.js';
export { fact, UNKNOWN } from './card.js';
export type { CardProblem, CardValidation } from './card-validate.js';
export { CARD_SCHEMA_VERSION, cardJsonSchema, defineCard, parseCard, validateCard } from './card-validate.js';
export type * from './drill.js';
export type { Duration } from './duration.js';
export { RetrysafeError } from './error-class.js';
export * from './errors.js';
export type { AttemptId, BusinessOperationId, ProviderKey, ProviderKeyRule, RunId } from './ids.js';
// charsetPattern is for authors: on ./rules only.
export {
  asAttemptId,
  asBusinessOperationId,
  asProviderKey,
  asRunId,
  businessOperationIdProblem,
  deriveProviderKey,
  newAttemptId,
  newRunId,
  revisionKeySource,
} from './ids.js';
export type { FieldNormalization, NormalizationStep, ParamComparison } from './intent.js';
export { businessOperationId, intentOf, pickIntent } from './intent.js';
export type * from './ledger.js';
export * from './outcome.js';
export type * from './receipt.js';
export { HANDOFF_REASONS } from './receipt.js';
