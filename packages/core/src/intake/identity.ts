import {
  asBusinessOperationId,
  type BusinessOperationId,
  businessOperationId,
  fingerprint,
  type NormalizationStep,
  type OperationSpec,
  pickIntent,
  type RetrySafetyCard,
} from '@retrysafe/contract';
import { differingPaths, normalizeIntent, normalizeParams } from '@retrysafe/contract/rules';

/** How the card compares intents (businessOperationId.normalize) and params (plus paramComparison; the rest exactly). */
export interface Comparison {
  /** Whether any rule changes params before they are compared (else their fingerprint is their own). */
  readonly normalizes: boolean;
  /** Params as compared: declared paths normalised, the rest as written. */
  comparable(params: unknown): unknown;
  /** The fingerprint stored and compared for params. */
  paramsFingerprint(params: unknown): string;
  /** Where two params differ as compared (paths only). */
  differences(stored: unknown, next: unknown): string[];
}

// Built once per card object: cards do not change.
const comparisons = new WeakMap<RetrySafetyCard, Comparison>();

/** The comparison a card declares. */
export function comparisonFor(card: RetrySafetyCard): Comparison {
  let c = comparisons.get(card);
  if (c === undefined) {
    c = buildComparison(card);
    comparisons.set(card, c);
  }
  return c;
}

function buildComparison(card: RetrySafetyCard): Comparison {
  const rules: { field: string; steps: readonly NormalizationStep[] }[] = [
    ...(card.businessOperationId.normalize ?? []),
    ...(card.paramComparison ?? [])
      .filter((p) => p.compare === 'normalized')
      .map((p) => ({ field: p.field, steps: p.steps ?? [] })),
  ];
  const comparable = (params: unknown) => normalizeParams(params ?? null, rules);
  return {
    normalizes: rules.length > 0,
    comparable,
    paramsFingerprint: (params) => fingerprint(comparable(params)),
    differences: (stored, next) => differingPaths(comparable(stored), comparable(next)),
  };
}

export interface Identity {
  readonly id: BusinessOperationId;
  readonly intent: Record<string, unknown>;
  readonly intentFingerprint: string;
}

/** A call's business-operation id (the caller's, or the digest of its normalised intent) and intent fingerprint. */
export function identityOf(
  spec: OperationSpec,
  input: { params: unknown; businessOperationId?: string; intent?: Record<string, unknown> },
): Identity {
  const card = spec.card;
  const intent = normalizeIntent(
    input.intent ?? pickIntent(input.params, spec.intentFields),
    card.businessOperationId.normalize,
  );
  const id =
    input.businessOperationId !== undefined
      ? asBusinessOperationId(input.businessOperationId)
      : businessOperationId(card.operation, intent);
  return { id, intent, intentFingerprint: fingerprint({ operation: card.operation, intent }) };
}
