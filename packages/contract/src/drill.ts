import type { AdapterV1 } from './adapter.js';

/** A network fault the testkit's loopback proxy injects between the SDK and the sandbox. */
export type DrillFault =
  | 'pass'
  | 'drop-response'
  | 'reset-before'
  | { readonly kind: 'delay'; readonly ms: number }
  /** Hold the request until the client gave up; the provider applies it `afterMs` after it arrived (drill clock). */
  | { readonly kind: 'late-commit'; readonly afterMs: number }
  | {
      readonly kind: 'status';
      readonly status: number;
      readonly headers?: Readonly<Record<string, string>>;
      readonly retryAfterS?: number;
      /** A string is sent as is; anything else as JSON. */
      readonly body?: unknown;
      /** Forward first and let the provider commit, then answer with this instead of the real response. */
      readonly forward?: boolean;
    };

export interface DrillClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export interface DrillSandbox {
  readonly url: string;
  /** Records the provider holds for this operation. */
  count(operation: string): number | Promise<number>;
  close(): void | Promise<void>;
  /** Forget every stored idempotency key, as if they aged past retention. */
  expireKeys?(): void | Promise<void>;
}

export interface DrillOperation {
  /** Params of the i-th distinct business operation. */
  params(i: number): unknown;
  /** The same params with at least one intent field changed. */
  changeIntent(params: unknown): unknown;
  /** Provider-shaped answers the proxy gives instead of forwarding: `permanent` is rejected, `rateLimited` a 429. */
  readonly faults: {
    readonly permanent: DrillFault;
    readonly transient?: DrillFault;
    readonly rateLimited?: DrillFault;
    readonly inProgress?: DrillFault;
  };
  /** When a rejected call can leave an object: params the provider rejects after creating one, and a correction. */
  readonly rejectedCreates?: { params(i: number): unknown; corrected(params: unknown): unknown };
}

/** A drill setup, as an adapter exports it from `./sandbox` for the testkit and `retrysafe drill`. */
export interface DrillSetup {
  /** Names the suite and its receipts folder, e.g. `stripe`. */
  readonly name: string;
  /** A fresh adapter whose SDK points at `baseUrl` (the fault proxy), with its own retries off. */
  createAdapter(ctx: { readonly baseUrl: string; readonly timeoutMs: number }): AdapterV1 | Promise<AdapterV1>;
  startSandbox(ctx: { readonly clock: DrillClock }): Promise<DrillSandbox>;
  readonly operations: Readonly<Record<string, DrillOperation>>;
  /** The client timeout (default 1500 ms); the `delay` fault holds responses longer than this. */
  readonly timeoutMs?: number;
  /** Request headers the proxy records besides Idempotency-Key. */
  readonly recordHeaders?: readonly string[];
}
