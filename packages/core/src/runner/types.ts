import type {
  AdapterV1,
  BusinessOperationId,
  HandoffPacket,
  HandoffSink,
  Ledger,
  OperationName,
  OperationParams,
  OperationResult,
  OperationState,
  Receipt,
  RetryExhaustedError,
} from '@retrysafe/contract';
import type { Clock } from '../clock.js';
import type { ReceiptKey, ReceiptKeyring } from '../receipts.js';
import type { RedactOptions } from '../redact.js';
import type { PolicyOverrides } from '../retry-policy.js';
import type { EventFields, TelemetryOptions } from '../telemetry.js';

/** A runner event: free text for people, plus the structured fields (attempt, outcome, decision, delay, handoff reason) where they apply. */
export interface LogEntry extends EventFields {
  readonly at: string;
  readonly level: 'info' | 'warn';
  readonly event: string;
  readonly businessOperationId?: string;
  readonly operation?: string;
  readonly message: string;
}

export interface RunnerOptions {
  readonly ledger: Ledger;
  readonly handoff?: HandoffSink;
  /** Unset fields come from the operation's card. */
  readonly policy?: PolicyOverrides;
  readonly redact?: RedactOptions;
  readonly clock?: Clock;
  /** Jitter source in [0, 1). */
  readonly random?: () => number;
  /** Worker identity written with each lease (default `host:pid:random`). */
  readonly owner?: string;
  readonly logger?: (entry: LogEntry) => void;
  /** HMAC key for receipt hashes (`hmac-sha256:<id>:…`): without it, someone who can write the ledger can re-seal an edited chain unnoticed. See docs/security.md. */
  readonly receiptKey?: ReceiptKey;
  /** Keys that sealed earlier receipts (after a rotation): resolve() checks the operation's chain with these and `receiptKey`. */
  readonly receiptKeyring?: ReceiptKeyring;
  /** OpenTelemetry providers for spans and metrics (default: the global ones, a no-op without an SDK). */
  readonly telemetry?: TelemetryOptions;
}

export interface RunInput {
  readonly params: unknown;
  /** Caller-chosen id (validated); default: derived from the operation's intent fields. */
  readonly businessOperationId?: string;
  /** The intent that the id stands for; default: the operation's intentFields picked out of params. */
  readonly intent?: Record<string, unknown>;
  /** Default: a new run id. */
  readonly runId?: string;
  /** A new attempt id per call (default: random), e.g. an engine's step ids; the first two are drawn before any write. */
  readonly attemptIds?: () => string;
  readonly signal?: AbortSignal;
  /** This call repeats one that has not seen its end yet: at rest, the operation answers that end, never taken for a
   * new call made after it (which would send again). A function is asked whether the call has not seen `end`, the
   * hand-off the operation rests at. */
  readonly followUp?: boolean | ((end: HandoffPacket) => boolean);
}

export type RunResult =
  | {
      readonly status: 'done';
      readonly businessOperationId: BusinessOperationId;
      readonly result: unknown;
      readonly providerRef: string | null;
      /** True when the result came from a replay, a lookup, or an earlier run/worker. */
      readonly adopted: boolean;
      /** Provider calls over the operation's whole life. */
      readonly attempts: number;
      readonly receipts: readonly Receipt[];
    }
  | {
      readonly status: 'in-progress';
      readonly businessOperationId: BusinessOperationId;
      readonly statusRef: string | null;
      readonly retryAfterMs: number;
    }
  | {
      readonly status: 'handed-off';
      readonly businessOperationId: BusinessOperationId;
      readonly packet: HandoffPacket;
      readonly attempts: number;
      readonly receipts: readonly Receipt[];
      /** Set when the budget ran out (reason `retry-exhausted`). */
      readonly error?: RetryExhaustedError;
    };

export interface RecoverReport {
  readonly businessOperationId: BusinessOperationId;
  /** null (with `to`, action `failed`): the ledger could not read this row, so its state is not known. */
  readonly from: OperationState | null;
  readonly to: OperationState | null;
  /** `failed`: not driven nor handed off; it stays for the next pass. `given-back`: no call's request ever left
   * (`not-sent`): the next call of its id sends it. */
  readonly action:
    | 'completed'
    | 'adopted'
    | 'handed-off'
    | 'in-progress'
    | 'skipped-busy'
    | 'skipped-no-adapter'
    | 'already-terminal'
    | 'given-back'
    | 'failed';
  readonly result?: RunResult;
  /** Why it could not be driven (handed off with reason `recovery-failed`, or action `failed`). */
  readonly error?: {
    readonly name: string;
    readonly code?: string;
    readonly message: string;
    readonly providerMayHaveBeenCalled?: boolean;
  };
}

/** `resume` is refused (UnsafeResumeError) where the packet marks it not safe, unless `force: true`. `resend-with`
 * sends a corrected request as a new revision (only when every attempt is known not applied; docs/concepts.md). */
export type Resolution =
  | { readonly action: 'resume'; readonly force?: boolean }
  | { readonly action: 'mark-done'; readonly providerRef: string }
  | { readonly action: 'abandon' }
  | { readonly action: 'resend-with'; readonly params: unknown };

export type ResolveResult =
  | RunResult
  | {
      readonly status: 'resolved';
      readonly businessOperationId: BusinessOperationId;
      readonly state: 'succeeded' | 'abandoned';
      readonly providerRef: string | null;
    };

/** `runId` and `attemptIds` as in RunInput, for the resolution's receipts. */
export interface ResolveOptions extends Pick<RunInput, 'runId' | 'attemptIds'> {
  readonly adapters?: readonly AdapterV1[];
  readonly by?: string;
  /** `createdAt` of the packet the person decided on: once that is no longer the current hand-off, the decision is
   * refused (`UnsafeResumeError` for a resume, `InvalidStateError` for the others). */
  readonly handoffAt?: string;
}

export type TypedRunInput<P> = Omit<RunInput, 'params'> & { readonly params: P };

export type TypedRunResult<R> =
  | Exclude<RunResult, { readonly status: 'done' }>
  | (Omit<Extract<RunResult, { readonly status: 'done' }>, 'result'> & { readonly result: R });

/** `runner.run` typed from a `TypedAdapter` (its operation names, params and results); `unknown` for an untyped one. */
export type RunFunction = <A extends AdapterV1, N extends OperationName<A>>(
  adapter: A,
  operation: N,
  input: TypedRunInput<OperationParams<A, N>>,
) => Promise<TypedRunResult<OperationResult<A, N>>>;

/** `runId` and `attemptIds` as in RunInput, for the receipts of what it sends or looks up. */
export interface RecoverOptions extends Pick<RunInput, 'runId' | 'attemptIds'> {
  readonly adapters: readonly AdapterV1[];
  /** At most this many operations driven in one pass, the oldest first (one left as it is takes no place). */
  readonly limit?: number;
  /** Only this operation, driven as stored (an engine waiting on it). */
  readonly businessOperationId?: string;
  /** Hand off (reason `recovery-failed`) an open operation this process cannot drive, instead of leaving it. */
  readonly handOffUndrivable?: boolean;
  /** The person who asked for this pass (`ledger resolve --resume`): named (a pseudonym) in a receipt of each operation driven. */
  readonly by?: string;
}

export interface Runner {
  run: RunFunction;
  /** Reconciles operations left claimed/dispatched/unknown/in-progress by a worker whose lease expired. */
  recover(options: RecoverOptions): Promise<RecoverReport[]>;
  /** A person's decision on a handed-off operation. `resume` re-sends with the SAME provider key. */
  resolve(id: string, resolution: Resolution, options?: ResolveOptions): Promise<ResolveResult>;
  /** A dry run of `resolve`: throws what it would refuse; writes and sends nothing. */
  checkResolve(id: string, resolution: Resolution, options?: ResolveOptions): Promise<void>;
}
