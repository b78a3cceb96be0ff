import type { Duration } from './duration.js';
import type { FieldNormalization, ParamComparison } from './normalize.js';

/** The explicit "we do not know" value. A decision that needs an unknown fact never auto-resends. */
export const UNKNOWN = 'unknown' as const;
export type Unknown = typeof UNKNOWN;

/**
 * One provider fact with where it comes from (a documentation URL, an SDK source path, or
 * "loopback test: …"). `value` may be `'unknown'`: that is a statement, not an omission.
 */
export interface Fact<T> {
  readonly value: T | Unknown;
  readonly source: string;
}

export type SideEffectKind = 'create' | 'send' | 'set' | 'upsert' | 'delete' | 'charge' | 'async-job' | 'none';
export type KeyTravels = 'header' | 'body' | 'query' | 'none';
/**
 * A second request with the same key and params: `replays` the first's stored answer, `rejects-duplicate`
 * recognisably (naming the existing object), or `none` is stored and it is a second effect.
 */
export type StoredResultSemantics = 'replays' | 'rejects-duplicate' | 'none';
/** What the provider does when the same key arrives with different params. */
export type ParameterMatching = 'mismatch-error' | 'replay-anyway' | 'none';
/** How `doLookup` finds a prior result. */
export type LookupMethod = 'get-by-key' | 'status-url' | 'search' | 'resend-same-key' | 'none';
/**
 * A concurrent duplicate (same key, first still running): a recognisable "in progress" answer, a wait for the
 * first one's result, a second effect, or the same value written twice (set-value PATCH).
 */
export type ConcurrencyBehaviour = 'rejects-in-progress' | 'waits-then-replays' | 'duplicates' | 'last-write-wins';

/** A response header whose value marks a replay of the stored result (compared case-insensitively). */
export interface ReplayIndicator {
  readonly header: string;
  readonly value: string;
}

/**
 * The retry safety card: what one provider operation guarantees about re-sends, as data.
 * Every field is required; provider facts are `Fact`s with a source and may be `'unknown'`.
 * The runner decides from this object and never from the adapter's name.
 */
export interface RetrySafetyCard {
  readonly cardVersion: 1;
  readonly provider: string;
  /** Fully qualified, e.g. `stripe.paymentIntents.create`. */
  readonly operation: string;
  readonly sideEffect: {
    readonly kind: Fact<SideEffectKind>;
    /** True when performing the operation twice has the effect of performing it once (set-value PATCH, upsert by unique id). */
    readonly idempotentByNature: Fact<boolean>;
    /** Optional: whether a call the provider rejects can still leave an object behind (a declined create+confirm). */
    readonly rejectionMayCreate?: Fact<boolean>;
  };
  readonly businessOperationId: {
    /** In words, e.g. "derived from intent fields customer, amount, currency, orderRef". */
    readonly rule: string;
    readonly intentFields: readonly string[];
    /** Optional, per intent field (and what is beneath it): the steps under which the provider treats values as the same. */
    readonly normalize?: readonly FieldNormalization[];
  };
  /** Optional: how params that are not intent fields are compared on a repeat call (unlisted: exactly). */
  readonly paramComparison?: readonly ParamComparison[];
  /** Where the run, attempt and provider request ids go. */
  readonly ids: {
    readonly run: string;
    readonly attempt: string;
    /** Where the provider's own request id is read from (e.g. the Request-Id header). */
    readonly request: Fact<string>;
  };
  readonly providerKey: {
    readonly travels: Fact<KeyTravels>;
    /** Header or field name; null when the key does not travel. */
    readonly name: Fact<string | null>;
    readonly maxLength: Fact<number | null>;
    /** Character class body, e.g. `A-Za-z0-9_:-`. */
    readonly charset: Fact<string | null>;
    /** What the key is unique within (account, endpoint, user…). */
    readonly scope: Fact<string>;
  };
  /** When the same key may be reused, in words. */
  readonly keyReuse: Fact<string>;
  readonly parameterMatching: Fact<ParameterMatching>;
  readonly storedResult: {
    readonly semantics: Fact<StoredResultSemantics>;
    /** Whether errors (e.g. 500s) are stored and replayed too. */
    readonly includesErrors: Fact<boolean>;
    /** Optional: how a response says it is a replay (e.g. `Idempotent-Replayed: true`); null = it sends none. */
    readonly replayIndicator?: Fact<ReplayIndicator | null>;
  };
  readonly lookup: {
    readonly method: Fact<LookupMethod>;
    /** Worst-case delay before a committed effect is visible to the lookup; null = immediate. */
    readonly consistencyDelay: Fact<Duration | null>;
    /**
     * How long after a send the provider may still apply a request the client gave up on (server timeout plus
     * network hold). A "not found" proves absence only after it plus the consistency delay; unknown/absent: never.
     */
    readonly lateApplyBound?: Fact<Duration>;
  };
  readonly retention: {
    /** Minimum time the provider keeps the key and its stored result; null = nothing is stored. */
    readonly minimum: Fact<Duration | null>;
  };
  readonly concurrency: Fact<ConcurrencyBehaviour>;
  readonly retryableErrors: Fact<readonly string[]>;
  readonly nonRetryableErrors: Fact<readonly string[]>;
  readonly backoff: {
    readonly strategy: 'exponential-full-jitter';
    readonly base: Duration;
    readonly cap: Duration;
    /** Retry-After is honoured, capped at this, and counted against maxElapsed. */
    readonly retryAfterCap: Duration;
  };
  readonly limits: {
    readonly maxAttempts: number;
    readonly maxElapsed: Duration;
    /** How long the runner keeps polling a lookup or an in-progress status before handing off. */
    readonly lookupWindow: Duration;
    /** Policy: how far apart the clocks (workers, ledger, provider) may be; keys count this much older. Default 1m. */
    readonly clockSkewMargin?: Duration;
  };
  readonly retryLayer: {
    readonly layer: 'runner';
    readonly sdkRetries: 'disabled';
    /** How the SDK's own retries are turned off, and how the drill proves it. */
    readonly how: string;
  };
  /** Who reconciles an unknown outcome, in words. */
  readonly reconciler: string;
  readonly handoff: {
    readonly condition: string;
    readonly destination: string;
  };
  /** How duplicates are tested without a live system. */
  readonly duplicateTest: string;
  /** Where receipts go. */
  readonly receipts: string;
  /** Provider conditions not verified, each with its source. Every `'unknown'` fact must be listed here. */
  readonly unverified: readonly { readonly field: string; readonly condition: string; readonly source: string }[];
}

/** The clock-skew margin a card's policy gets when it does not set `limits.clockSkewMargin`. */
export const DEFAULT_CLOCK_SKEW_MARGIN: Duration = '1m';

/** Shorthand for writing facts in cards. */
export function fact<T>(value: T | Unknown, source: string): Fact<T> {
  return { value, source };
}

export function isUnknown(f: Fact<unknown>): boolean {
  return f.value === UNKNOWN;
}
