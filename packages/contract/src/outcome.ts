import type { FieldError } from './errors.js';

/** What the provider said about one attempt, kept for receipts and packets (no secrets, no bodies). */
export interface ProviderRefs {
  readonly status?: number;
  /** The provider's error code or type, e.g. `idempotency_key_in_use`. */
  readonly code?: string;
  readonly requestId?: string;
  /** The id of the object the provider created or changed (e.g. `pi_123`). */
  readonly providerRef?: string;
}

// `action-required`: refused before processing until the user completes a step the provider asked for (an MCP URL
// elicitation); the same request may be sent again once it is done.
const REJECT_REASONS = [
  ...['validation', 'permission', 'authentication', 'configuration', 'conflict', 'not-found', 'card-declined'],
  ...['action-required', 'other'],
] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];
const UNKNOWN_CAUSES = ['timeout', 'connection-reset', 'server-error', 'truncated-response', 'other'] as const;
export type UnknownCause = (typeof UNKNOWN_CAUSES)[number];

/** Exactly one per attempt (docs/concepts.md). */
export type Outcome =
  | ({ readonly kind: 'succeeded'; readonly result: unknown } & ProviderRefs)
  /** The provider returned its stored result for this key (e.g. `Idempotent-Replayed: true`). */
  | ({ readonly kind: 'replayed'; readonly result: unknown } & ProviderRefs)
  /** The provider has it and is still working: pending/running, 202 + status URL, 409 same key in flight. */
  | ({
      readonly kind: 'in-progress';
      readonly statusRef?: string;
      readonly retryAfterMs?: number;
      readonly message?: string;
    } & ProviderRefs)
  /** Definitely not applied and will not succeed as is. Never retried automatically. */
  | ({
      readonly kind: 'rejected';
      readonly reason: RejectReason;
      readonly message: string;
      /** The provider's per-field errors, when it names them: what to correct. */
      readonly fields?: readonly FieldError[];
      /** An object this rejected call still created (a declined create+confirm); a correction must not make a second. */
      readonly created?: string;
    } & ProviderRefs)
  /** Definitely not applied, transient: safe to retry within the budget. `neverSent`: the request provably never left
   * (classifyTransportFailure's `never`): nothing can be at the provider, not even the key. */
  | ({
      readonly kind: 'not-applied';
      readonly message: string;
      readonly retryAfterMs?: number;
      readonly neverSent?: true;
    } & ProviderRefs)
  /** May or may not have been applied: never a licence to resend blindly. */
  | ({
      readonly kind: 'unknown';
      readonly cause: UnknownCause;
      readonly message: string;
      readonly retryAfterMs?: number;
    } & ProviderRefs);

const OUTCOME_KINDS = ['succeeded', 'replayed', 'in-progress', 'rejected', 'not-applied', 'unknown'] as const;
export type OutcomeKind = (typeof OUTCOME_KINDS)[number];

const isOneOf = (list: readonly string[], v: unknown) => list.includes(v as string);

/** Why an adapter's answer, checked at run time, is not an outcome the runner can act on, or null. */
export function outcomeProblem(o: unknown): string | null {
  if (typeof o !== 'object' || o === null) return `${o === null ? 'null' : typeof o} is not an outcome`;
  const x = o as Record<string, unknown>;
  if (!isOneOf(OUTCOME_KINDS, x.kind)) return `kind ${JSON.stringify(x.kind)} is not an outcome kind`;
  if (x.kind === 'rejected' && !isOneOf(REJECT_REASONS, x.reason))
    return `a rejection's reason must be one of ${REJECT_REASONS.join(', ')}`;
  if (x.kind === 'unknown' && !isOneOf(UNKNOWN_CAUSES, x.cause))
    return `an unknown outcome's cause must be one of ${UNKNOWN_CAUSES.join(', ')}`;
  if ((x.kind === 'rejected' || x.kind === 'not-applied' || x.kind === 'unknown') && typeof x.message !== 'string')
    return `${x.kind} outcomes need a message`;
  if (x.retryAfterMs !== undefined && !(Number.isFinite(x.retryAfterMs) && Number(x.retryAfterMs) >= 0))
    return 'retryAfterMs must be a finite number ≥ 0';
  if (x.neverSent !== undefined && (x.kind !== 'not-applied' || x.neverSent !== true))
    return 'neverSent is true on a not-applied outcome, or absent';
  if (x.status !== undefined && !Number.isInteger(x.status)) return 'status must be an integer';
  // `created` too: a rejection's object the runner cannot record would let a correction make a second one.
  for (const k of ['code', 'requestId', 'providerRef', 'statusRef', 'created'] as const)
    if (x[k] !== undefined && typeof x[k] !== 'string') return `${k} must be a string`;
  if (x.fields !== undefined && !Array.isArray(x.fields)) return 'fields must be an array';
  return null;
}

export type LookupResult =
  | {
      readonly kind: 'found';
      readonly outcome: Extract<Outcome, { kind: 'succeeded' | 'replayed' | 'in-progress' | 'rejected' }>;
    }
  /** Definitely absent: the lookup is authoritative and past its consistency delay. */
  | ({ readonly kind: 'not-found'; readonly reason: string } & ProviderRefs)
  /** Cannot tell (inside the consistency delay, lookup throttled or failing): neither absent nor present.
   * `duplicates`: the objects found carrying this operation's id, two or more: asking again cannot undo that. */
  | ({
      readonly kind: 'cannot-tell';
      readonly reason: string;
      readonly retryAfterMs?: number;
      readonly duplicates?: readonly string[];
    } & ProviderRefs);
