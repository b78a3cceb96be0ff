import type { AdapterV1, Receipt, HandoffPacket } from '@retrysafe/contract';
import type { Fault, ProxyRequest } from './fault-proxy.js';

/** A sandbox server started fresh for one scenario. */
export interface DrillSandbox {
  /** Loopback base URL of the sandbox server (`http://127.0.0.1:PORT`). */
  readonly url: string;
  /** Records the provider holds for this operation (the key of `operations`). */
  count(operation: string): number | Promise<number>;
  close(): void | Promise<void>;
  /** Makes the provider forget every stored idempotency key (as if they aged past retention). Used by `key-past-retention`. */
  expireKeys?(): void | Promise<void>;
}

/**
 * Provider-shaped answers the proxy gives instead of forwarding (only the adapter author knows the
 * provider's wire format), e.g. Stripe's 409 `idempotency_key_in_use` JSON body.
 */
export interface OperationFaults {
  /** An answer the adapter classifies as `rejected` (validation/permission). Required. */
  readonly permanent: Fault;
  /** An answer the adapter classifies as `not-applied` (definitely not processed, retryable). Required when the card lists retryable errors. */
  readonly transient?: Fault;
  /** A 429 with Retry-After the adapter classifies as `not-applied` with `retryAfterMs`. Default `{ kind: 'status', status: 429, retryAfterS: 2 }`. */
  readonly rateLimited?: Fault;
  /** An answer the adapter classifies as `in-progress` (e.g. 409 same key in flight, 202 + status URL). Required when the card says the provider reports in-progress. */
  readonly inProgress?: Fault;
}

export interface DrillOperation {
  /** Params of the i-th distinct business operation (0-based); each scenario uses a fresh i. */
  params(i: number): unknown;
  /** The same params with at least one intent field changed (for the conflict scenario). */
  changeIntent(params: unknown): unknown;
  readonly faults: OperationFaults;
}

/** Runner policy overrides; unset fields come from the operation's card (see @retrysafe/core). */
export interface DrillPolicy {
  readonly maxAttempts?: number;
  readonly maxElapsedMs?: number;
  readonly baseMs?: number;
  readonly capMs?: number;
  readonly retryAfterCapMs?: number;
  readonly lookupWindowMs?: number;
  readonly leaseMs?: number;
  readonly waitForOtherMs?: number;
}

export interface ConformanceOptions {
  /** Names the suite, the receipts folder and the messages, e.g. `stripe`. */
  readonly name: string;
  /** Builds a fresh adapter whose SDK points at `baseUrl` (the fault proxy) with the given client timeout and its own retries off. */
  createAdapter(ctx: { readonly baseUrl: string; readonly timeoutMs: number }): AdapterV1 | Promise<AdapterV1>;
  /**
   * Starts a fresh sandbox server (one per scenario). `clock` is the runner's virtual clock: give it to
   * a sandbox that keeps time (retention, consistency delay, processing time) so both agree.
   */
  startSandbox(ctx: { readonly clock: { now(): number; sleep(ms: number): Promise<void> } }): Promise<DrillSandbox>;
  /** Operations to drill, keyed by the adapter's operation name (a key of `adapter.operations`). */
  readonly operations: Readonly<Record<string, DrillOperation>>;
  readonly policy?: DrillPolicy;
  /** Where receipts go: one JSON file per scenario × operation plus `summary.json`. Default: a new temp dir. */
  readonly outDir?: string;
  /** The client timeout handed to `createAdapter` (default 400 ms); the `delay` fault holds responses longer than this. */
  readonly timeoutMs?: number;
  /** Request headers the proxy records besides Idempotency-Key (e.g. a body-less provider's key header). */
  readonly recordHeaders?: readonly string[];
  /** Ledger per scenario: a fresh SQLite file (default) or memory. */
  readonly ledger?: 'sqlite' | 'memory';
  /** Seed of the runner's jitter (default 1). */
  readonly seed?: number;
}

export const SCENARIOS = [
  'lost-response',
  'lost-response-timeout',
  'lost-request',
  'concurrent-duplicates',
  'changed-intent',
  'permanent-error',
  'transient-beyond-limit',
  'rate-limited',
  'key-past-retention',
  'in-progress',
  'crash-after-dispatch',
] as const;
export type ScenarioId = (typeof SCENARIOS)[number];

export interface DrillOptions extends ConformanceOptions {
  /** Run only these scenarios (the CLI's `--scenario`); every scenario by default. */
  readonly scenarios?: readonly ScenarioId[];
}

export type DrillOutcome = 'done' | 'handed-off' | 'in-progress' | 'conflict' | 'error';

/** A count criterion: exact, or bounded. */
export type CountCriterion = { readonly exact: number } | { readonly min?: number; readonly max: number };

/** Pass criteria: data computed from the card BEFORE the run, written into the receipt. */
export interface PassCriteria {
  /** Records the provider must hold afterwards. */
  readonly providerRecords: number;
  /** Requests that reached the proxy while the runner was inside `doExecute` (dispatches and resends). */
  readonly attemptsAtProxy: CountCriterion;
  /** Acceptable outcomes of the run (every run, for the concurrent scenario). */
  readonly outcome: readonly DrillOutcome[];
  /** Whether a handoff packet must (true) or must not (false) be produced; `'with-outcome'`: exactly when the outcome is `handed-off`. */
  readonly handoff: boolean | 'with-outcome';
  /** Exactly one HTTP request per `doExecute` call: proves the SDK's own retries are off (one retrying layer). */
  readonly oneRequestPerAttempt: true;
  /** For `rate-limited`: the runner must have waited at least this long (virtual clock) before the next attempt. */
  readonly minWaitMs?: number;
  /** In words, where each number comes from (which card fields). */
  readonly why: readonly string[];
}

export interface ObservedValues {
  readonly providerRecords: number;
  readonly attemptsAtProxy: number;
  /** Requests at the proxy during `doExecute` calls / `doLookup` calls / outside either. */
  readonly requests: { readonly total: number; readonly duringExecute: number; readonly duringLookup: number; readonly other: number };
  readonly executeCalls: number;
  readonly lookupCalls: number;
  /** The largest number of proxy requests seen inside one `doExecute` call. */
  readonly maxRequestsInOneExecute: number;
  readonly outcomes: readonly DrillOutcome[];
  readonly handoffs: number;
  readonly handoffReasons: readonly string[];
  /** For `rate-limited`: virtual time between the end of attempt 1 and the start of attempt 2. */
  readonly waitedMs?: number;
  readonly errors: readonly string[];
}

export interface ScenarioSkip {
  /** The card field that made the scenario inapplicable, e.g. `retention.minimum`. */
  readonly cardField: string;
  readonly reason: string;
}

export interface ScenarioResult {
  readonly drill: string;
  readonly operation: string;
  readonly scenario: ScenarioId;
  readonly title: string;
  readonly status: 'passed' | 'failed' | 'skipped';
  readonly skip?: ScenarioSkip;
  readonly criteria?: PassCriteria;
  readonly observed?: ObservedValues;
  /** Each unmet criterion as a sentence naming the scenario and the counts. */
  readonly failures: readonly string[];
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly receiptFile: string;
  readonly runnerReceipts: readonly Receipt[];
  readonly handoffPackets: readonly HandoffPacket[];
  readonly proxyRequests: readonly (ProxyRequest & { readonly phase: 'execute' | 'lookup' | 'other' })[];
  readonly notes: readonly string[];
}

export interface DrillSummary {
  readonly drill: string;
  readonly outDir: string;
  readonly total: number;
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
  readonly skips: readonly { readonly operation: string; readonly scenario: ScenarioId; readonly cardField: string; readonly reason: string }[];
  readonly failures: readonly { readonly operation: string; readonly scenario: ScenarioId; readonly failures: readonly string[] }[];
  readonly results: readonly { readonly operation: string; readonly scenario: ScenarioId; readonly status: ScenarioResult['status']; readonly receiptFile: string }[];
}

export interface DrillReport {
  readonly ok: boolean;
  readonly outDir: string;
  readonly results: readonly ScenarioResult[];
  readonly summary: DrillSummary;
}
