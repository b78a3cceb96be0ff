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
  /** Already redacted. */
  readonly message: string;
}

export interface RunnerOptions {
  readonly ledger: Ledger;
  /** Where handoff packets go (they are also kept in the ledger). */
  readonly handoff?: HandoffSink;
  /** Unset fields come from the operation's card. */
  readonly policy?: PolicyOverrides;
  readonly redact?: RedactOptions;
  readonly clock?: Clock;
  /** Jitter source in [0, 1). */
  readonly random?: () => number;
  /** Worker identity written with each lease (default `host:pid:random`). */
  readonly owner?: string;
  /** Receives every log line the runner writes (redacted). Default: none. */
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
  /** Where this run's attempt ids come from (default: a new random id per provider call or lookup), e.g. an engine's
   * step ids: each call returns a new id (validated like a run id). The first two are drawn before anything is written. */
  readonly attemptIds?: () => string;
  readonly signal?: AbortSignal;
  /** This call repeats one that has not seen its end yet (answered in progress, or identical to a call in flight): at
   * rest, the operation answers that end (its result, its hand-off, or a conflict for other params), never taken for a
   * new call made after it (a corrected request, the same one after the user's step), which would send again. */
  readonly followUp?: boolean;
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
  /** `failed`: not driven nor handed off (see `error`); it stays for the next pass. `already-terminal`: closed since the
   * listing, or closed and pruned (then `to` is the state it was listed in); nothing sent. `given-back`: no call's
   * request ever left (`error` says so): `not-sent`, the next call of its id sends it. */
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
  /** Why this record could not be driven: it was handed off with reason `recovery-failed` (or, when even that failed, action `failed`). */
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
  /** `createdAt` of the packet the person decided on: once that is no longer the current hand-off (resumed, closed or
   * handed off again since), the decision is refused and nothing is written: `UnsafeResumeError` for a resume,
   * `InvalidStateError` for the others. */
  readonly handoffAt?: string;
}

/** `RunInput` whose params are the operation's declared params type. */
export type TypedRunInput<P> = Omit<RunInput, 'params'> & { readonly params: P };

/** `RunResult` whose `done` branch carries the operation's declared result type. */
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
  /** At most this many operations driven in one pass, the oldest first (one left as it is, for want of its adapter
   * here or a configuration that can drive it, takes no place). */
  readonly limit?: number;
  /** Only this operation, driven as stored (an engine waiting on it): left to a worker whose lease is live
   * (`skipped-busy`); a closed or absent one is not listed. */
  readonly businessOperationId?: string;
  /** Hand off (reason `recovery-failed`, nothing sent) an open operation no adapter or card given here can drive, or
   * whose params this process cannot open, instead of leaving it (`skipped-no-adapter`, `failed`). Default false. */
  readonly handOffUndrivable?: boolean;
}

export interface Runner {
  /** Typed from the adapter when it is a `TypedAdapter` (RunFunction); `unknown` params and result for an untyped one. */
  run: RunFunction;
  /** Reconciles operations left claimed/dispatched/unknown/in-progress by a worker whose lease expired. */
  recover(options: RecoverOptions): Promise<RecoverReport[]>;
  /** A person's decision on a handed-off operation. `resume` re-sends with the SAME provider key. */
  resolve(id: string, resolution: Resolution, options?: ResolveOptions): Promise<ResolveResult>;
  /** A dry run of `resolve`: throws what it would refuse before writing or sending (the same checks); writes and sends nothing. */
  checkResolve(id: string, resolution: Resolution, options?: ResolveOptions): Promise<void>;
}
