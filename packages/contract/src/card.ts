import type { Duration } from './duration.js';
import type { FieldNormalization, ParamComparison } from './intent.js';

/** The explicit "we do not know" value. A decision that needs an unknown fact never auto-resends. */
export const UNKNOWN = 'unknown' as const;
export type Unknown = typeof UNKNOWN;

/** A provider fact and where it comes from; `'unknown'` is a statement, not an omission. */
export interface Fact<T> {
  readonly value: T | Unknown;
  readonly source: string;
}

/** The closed value sets of the card: its types below and its schema (card-validate.ts) both read them. */
export const CARD_VALUES = {
  sideEffect: ['create', 'send', 'set', 'upsert', 'delete', 'charge', 'async-job', 'none'],
  travels: ['header', 'body', 'query', 'none'],
  // A same-key re-send: replays the stored answer, is rejected recognisably, or is a second effect.
  storedResult: ['replays', 'rejects-duplicate', 'none'],
  parameterMatching: ['mismatch-error', 'replay-anyway', 'none'],
  lookup: ['get-by-key', 'status-url', 'search', 'resend-same-key', 'none'],
  // A duplicate while the first still runs; `last-write-wins`: the same value written twice (set-value PATCH).
  concurrency: ['rejects-in-progress', 'waits-then-replays', 'duplicates', 'last-write-wins'],
} as const;
type Of<K extends keyof typeof CARD_VALUES> = (typeof CARD_VALUES)[K][number];
export type StoredResultSemantics = Of<'storedResult'>;
export type ParameterMatching = Of<'parameterMatching'>;
export type ConcurrencyBehaviour = Of<'concurrency'>;

/** What one provider operation guarantees about re-sends, as data: the runner decides from it, never from a name. */
export interface RetrySafetyCard {
  readonly cardVersion: 1;
  readonly provider: string;
  /** `<provider>.<name>`, e.g. `stripe.paymentIntents.create`. */
  readonly operation: string;
  readonly sideEffect: {
    readonly kind: Fact<Of<'sideEffect'>>;
    /** Performing it twice has the effect of performing it once (set-value PATCH, upsert by unique id). */
    readonly idempotentByNature: Fact<boolean>;
    /** A call the provider rejects can still leave an object behind (a declined create+confirm). Required: left out
     * it would read as false, which lets a correction go out as a new revision after a processed rejection. */
    readonly rejectionMayCreate: Fact<boolean>;
  };
  readonly businessOperationId: {
    /** In words, e.g. "derived from intent fields customer, amount, currency, orderRef". */
    readonly rule: string;
    readonly intentFields: readonly string[];
    /** Intent fields a call may leave out (never an array item), such as an optional param that names the target
     * (HubSpot's idProperty): left out, the intent has no such field; given, it is digested like the others. */
    readonly optionalIntentFields?: readonly string[];
    /** Per intent field: the steps under which the provider treats values as the same. */
    readonly normalize?: readonly FieldNormalization[];
  };
  /** How params that are not intent fields are compared on a repeat call (unlisted: exactly). */
  readonly paramComparison?: readonly ParamComparison[];
  readonly ids: {
    readonly run: string;
    readonly attempt: string;
    /** Where the provider's own request id is read from (e.g. the Request-Id header). */
    readonly request: Fact<string>;
  };
  readonly providerKey: {
    readonly travels: Fact<Of<'travels'>>;
    readonly name: Fact<string | null>;
    readonly maxLength: Fact<number | null>;
    /** Character class body, e.g. `A-Za-z0-9_:-`. */
    readonly charset: Fact<string | null>;
    /** What the key is unique within (account, endpoint, user…). */
    readonly scope: Fact<string>;
    /** Whether the provider tells keys apart by letter case; absent or unknown: no derived key relies on case. */
    readonly caseSensitive?: Fact<boolean>;
  };
  readonly keyReuse: Fact<string>;
  readonly parameterMatching: Fact<ParameterMatching>;
  readonly storedResult: {
    readonly semantics: Fact<StoredResultSemantics>;
    readonly includesErrors: Fact<boolean>;
    /** A response header that marks a replay (compared case-insensitively); null = the provider sends none. */
    readonly replayIndicator?: Fact<{ readonly header: string; readonly value: string } | null>;
  };
  readonly lookup: {
    readonly method: Fact<Of<'lookup'>>;
    /** Worst-case delay before a committed effect is visible to the lookup; null = immediate. */
    readonly consistencyDelay: Fact<Duration | null>;
    /** How long after a send the provider may still apply a request the client gave up on; absent: unknown. */
    readonly lateApplyBound?: Fact<Duration>;
  };
  readonly retention: {
    /** How long the provider keeps the key and its stored result; null = nothing is stored. */
    readonly minimum: Fact<Duration | null>;
  };
  readonly concurrency: Fact<ConcurrencyBehaviour>;
  readonly retryableErrors: Fact<readonly string[]>;
  readonly nonRetryableErrors: Fact<readonly string[]>;
  readonly backoff: {
    readonly strategy: 'exponential-full-jitter';
    readonly base: Duration;
    readonly cap: Duration;
    /** Retry-After is honoured up to this, and counted against maxElapsed. */
    readonly retryAfterCap: Duration;
  };
  readonly limits: {
    readonly maxAttempts: number;
    readonly maxElapsed: Duration;
    /** How long the runner keeps polling a lookup or an in-progress status before handing off. */
    readonly lookupWindow: Duration;
    /** How far apart the clocks (workers, ledger, provider) may be; keys count this much older. */
    readonly clockSkewMargin?: Duration;
  };
  readonly retryLayer: {
    readonly layer: 'runner';
    readonly sdkRetries: 'disabled';
    /** How the SDK's own retries are turned off, and how the drill proves it. */
    readonly how: string;
  };
  readonly reconciler: string;
  readonly handoff: { readonly condition: string; readonly destination: string };
  readonly duplicateTest: string;
  readonly receipts: string;
  /** Every `'unknown'` fact is listed here with its source. */
  readonly unverified: readonly { readonly field: string; readonly condition: string; readonly source: string }[];
}

export function fact<T>(value: T | Unknown, source: string): Fact<T> {
  return { value, source };
}
