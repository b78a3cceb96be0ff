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

export type RejectReason =
  | 'validation'
  | 'permission'
  | 'authentication'
  | 'configuration'
  | 'conflict'
  | 'not-found'
  | 'card-declined'
  | 'other';
export type UnknownCause = 'timeout' | 'connection-reset' | 'server-error' | 'truncated-response' | 'other';

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
  /** Definitely not applied, transient: safe to retry within the budget. */
  | ({ readonly kind: 'not-applied'; readonly message: string; readonly retryAfterMs?: number } & ProviderRefs)
  /** May or may not have been applied: never a licence to resend blindly. */
  | ({
      readonly kind: 'unknown';
      readonly cause: UnknownCause;
      readonly message: string;
      readonly retryAfterMs?: number;
    } & ProviderRefs);

export const OUTCOME_KINDS = ['succeeded', 'replayed', 'in-progress', 'rejected', 'not-applied', 'unknown'] as const;
export type OutcomeKind = (typeof OUTCOME_KINDS)[number];

export type LookupResult =
  | {
      readonly kind: 'found';
      readonly outcome: Extract<Outcome, { kind: 'succeeded' | 'replayed' | 'in-progress' | 'rejected' }>;
    }
  /** Definitely absent: the lookup is authoritative and past its consistency delay. */
  | ({ readonly kind: 'not-found'; readonly reason: string } & ProviderRefs)
  /** Cannot tell (inside the consistency delay, lookup throttled or failing): neither absent nor present. */
  | ({ readonly kind: 'cannot-tell'; readonly reason: string; readonly retryAfterMs?: number } & ProviderRefs);
