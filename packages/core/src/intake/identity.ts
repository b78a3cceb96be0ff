import {
  businessOperationId as deriveV1,
  canonicalJson,
  sha256Hex,
  fingerprint,
  pickIntent,
  asBusinessOperationId,
  type BusinessOperationId,
  type NormalizationStep,
  type OperationSpec,
  type RetrySafetyCard,
} from '@retrysafe/contract';
import { differingPaths, normalizeIntent, normalizeParams } from '@retrysafe/contract/rules';

/**
 * How one operation's declaration decides identity and comparison: the intent's normalisation
 * (card.businessOperationId.normalize, id rule v2) and the params' comparison rules (intent
 * normalisation plus card.paramComparison; every other param exactly).
 */
export interface Comparison {
  /** Params as compared: declared paths normalised, the rest as written. */
  comparable(params: unknown): unknown;
  /** The fingerprint stored and compared for params. */
  paramsFingerprint(params: unknown): string;
  /** Fingerprints an operation written before the declaration may carry for the same params (the raw v1 one). */
  paramsAliases(params: unknown): string[];
  /** Where two params differ as compared (paths only). */
  differences(stored: unknown, next: unknown): string[];
}

const comparisons = new WeakMap<RetrySafetyCard, { readonly comparison: Comparison; readonly normalizes: boolean }>();

function declared(card: RetrySafetyCard): { readonly comparison: Comparison; readonly normalizes: boolean } {
  let d = comparisons.get(card);
  if (d === undefined) comparisons.set(card, (d = buildComparison(card)));
  return d;
}

/** The comparison a card declares (built once per card object: cards do not change). */
export function comparisonFor(card: RetrySafetyCard): Comparison {
  return declared(card).comparison;
}

/** Whether the card's comparison changes params before they are fingerprinted (else the fingerprint is the params' own). */
export function normalizesParams(card: RetrySafetyCard): boolean {
  return declared(card).normalizes;
}

function buildComparison(card: RetrySafetyCard): { readonly comparison: Comparison; readonly normalizes: boolean } {
  const rules: { field: string; steps: readonly NormalizationStep[] }[] = [
    ...(card.businessOperationId.normalize ?? []),
    ...(card.paramComparison ?? []).filter((p) => p.compare === 'normalized').map((p) => ({ field: p.field, steps: p.steps ?? [] })),
  ];
  const comparable = (params: unknown) => normalizeParams(params ?? null, rules);
  const comparison: Comparison = {
    comparable,
    paramsFingerprint: (params) => fingerprint(comparable(params)),
    paramsAliases: (params) => {
      if (rules.length === 0) return [];
      const raw = fingerprint(params ?? null);
      return raw === fingerprint(comparable(params)) ? [] : [raw];
    },
    differences: (stored, next) => differingPaths(comparable(stored), comparable(next)),
  };
  return { comparison, normalizes: rules.length > 0 };
}

export interface Identity {
  readonly id: BusinessOperationId;
  readonly intent: Record<string, unknown>;
  readonly intentFingerprint: string;
  /**
   * Set when the card's id rule normalises and the intent as written is not in normal form: the id
   * and fingerprint the v1 rule gives the intent as written. An operation stored under it (written
   * before the card declared normalisation) is the same operation.
   */
  readonly legacy?: { readonly id: BusinessOperationId; readonly intentFingerprint: string };
}

/**
 * The business-operation id and intent fingerprint of a call. Id rule v1: the digest of the intent
 * as written. v2: the digest of the normalised intent, which equals the v1 id whenever the intent is
 * already in normal form (so ledgers written under v1 keep matching); otherwise `legacy` carries the
 * v1 id of the intent as written, for the caller to look up first.
 */
export function identityOf(spec: OperationSpec, input: { params: unknown; businessOperationId?: string; intent?: Record<string, unknown> }): Identity {
  const card = spec.card;
  const raw = input.intent ?? pickIntent(input.params, spec.intentFields);
  const v2 = (card.businessOperationId.normalize?.length ?? 0) > 0;
  const intent = v2 ? normalizeIntent(raw, card.businessOperationId.normalize) : raw;
  // One canonical text and one digest of { operation, intent }: the fingerprint and the derived id are both of it.
  const intentJson = canonicalJson({ operation: card.operation, intent });
  const digest = sha256Hex(intentJson);
  const intentFingerprint = 'sha256:' + digest;
  const given = input.businessOperationId !== undefined ? asBusinessOperationId(input.businessOperationId) : undefined;
  const id = given ?? idFromDigest(card.operation, intent, digest);
  // v1, or nothing normalised (no rule applied: the same object): the intent as written is this one.
  if (!v2 || intent === raw) return { id, intent, intentFingerprint };
  const rawJson = canonicalJson({ operation: card.operation, intent: raw });
  if (rawJson === intentJson) return { id, intent, intentFingerprint };
  // A caller-given id keeps its id; only the fingerprint it was stored with may be the raw one.
  return { id, intent, intentFingerprint, legacy: { id: given ?? deriveV1(card.operation, raw), intentFingerprint: 'sha256:' + sha256Hex(rawJson) } };
}

/** Operation names the contract's id rule has accepted once (its name check depends on the name only). */
const acceptedOperations = new Set<string>();

/**
 * The contract's v1 id (`businessOperationId(operation, intent)`: `<operation>:` + 32 hex of the SHA-256
 * of canonical { operation, intent }) from that digest, already taken for the fingerprint. Anything
 * the contract's rule would refuse (an operation name not yet seen, an intent that is not a non-empty
 * plain object) is asked of the contract itself, which throws its own error.
 */
function idFromDigest(operation: string, intent: Record<string, unknown>, digest: string): BusinessOperationId {
  if (!acceptedOperations.has(operation) || typeof intent !== 'object' || intent === null || Array.isArray(intent) || Object.keys(intent).length === 0) {
    const id = deriveV1(operation, intent);
    acceptedOperations.add(operation);
    return id;
  }
  return asBusinessOperationId(`${operation}:${digest.slice(0, 32)}`);
}
