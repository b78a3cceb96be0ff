import type { AdapterV1 } from './adapter.js';

/**
 * A network fault the conformance kit's loopback proxy injects between the SDK and the sandbox
 * (`@retrysafe/testkit`): forward, then drop the response after the provider committed; reset before
 * anything is forwarded; hold the response past the client timeout; or answer with a status itself.
 */
export type DrillFault =
  | 'pass'
  | 'drop-response'
  | 'reset-before'
  | { readonly kind: 'delay'; readonly ms: number }
  /**
   * Late commit: hold the request (not forwarded) until the client gave up, and let the provider apply
   * it only `afterMs` after it arrived on the drill's clock — before the first later request that
   * arrives from then on, or when the drill flushes at the end. The provider applies the request after
   * the client timed out.
   */
  | { readonly kind: 'late-commit'; readonly afterMs: number }
  | {
      readonly kind: 'status';
      readonly status: number;
      readonly headers?: Readonly<Record<string, string>>;
      /** Sets a `Retry-After: <seconds>` header. */
      readonly retryAfterS?: number;
      /** A string is sent as is; anything else as JSON. */
      readonly body?: unknown;
      /** Forward first and let the provider commit, then answer with this instead of the real response. */
      readonly forward?: boolean;
    };

/** The drill's clock: the runner's virtual clock, handed to sandboxes that keep time. */
export interface DrillClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

/** A sandbox server started fresh for one scenario. */
export interface DrillSandbox {
  /** Loopback base URL of the sandbox server (`http://127.0.0.1:PORT`). */
  readonly url: string;
  /** Records the provider holds for this operation (a key of `operations`). */
  count(operation: string): number | Promise<number>;
  close(): void | Promise<void>;
  /** Makes the provider forget every stored idempotency key, as if they aged past retention. */
  expireKeys?(): void | Promise<void>;
}

/** What the drill needs to know about one operation. */
export interface DrillOperation {
  /** Params of the i-th distinct business operation (0-based). */
  params(i: number): unknown;
  /** The same params with at least one intent field changed. */
  changeIntent(params: unknown): unknown;
  /** Provider-shaped answers the proxy gives instead of forwarding (only the adapter knows its provider's wire format). */
  readonly faults: {
    /** Classified as `rejected`. */
    readonly permanent: DrillFault;
    /** Classified as `not-applied`. */
    readonly transient?: DrillFault;
    /** A 429 with Retry-After, classified as `not-applied` with `retryAfterMs`. */
    readonly rateLimited?: DrillFault;
    /** Classified as `in-progress`. */
    readonly inProgress?: DrillFault;
  };
  /**
   * Required when the card says a rejected call can leave an object (sideEffect.rejectionMayCreate):
   * params of the i-th operation that the provider rejects after creating something (a declined
   * create+confirm), and the same intent corrected (another card) — which must not make a second object.
   */
  readonly rejectedCreates?: { params(i: number): unknown; corrected(params: unknown): unknown };
}

/**
 * A drill setup, as an adapter exports it from its `./sandbox` subpath: the conformance kit
 * (`runConformance` / `runDrill` in `@retrysafe/testkit`) and the CLI's `retrysafe drill` run it.
 * Types only, so an adapter can declare its drill depending on the contract alone.
 */
export interface DrillSetup {
  /** Names the suite and its receipts folder, e.g. `stripe`. */
  readonly name: string;
  /** A fresh adapter whose SDK points at `baseUrl` (the fault proxy), with this client timeout and its own retries off. */
  createAdapter(ctx: { readonly baseUrl: string; readonly timeoutMs: number }): AdapterV1 | Promise<AdapterV1>;
  /** A fresh sandbox server (one per scenario) on the drill's clock. */
  startSandbox(ctx: { readonly clock: DrillClock }): Promise<DrillSandbox>;
  /** Operations to drill, keyed by the adapter's operation name. */
  readonly operations: Readonly<Record<string, DrillOperation>>;
  /** The client timeout handed to `createAdapter` (the testkit's default is 1500 ms); the `delay` fault holds responses longer than this. */
  readonly timeoutMs?: number;
  /** Request headers the proxy records besides Idempotency-Key. */
  readonly recordHeaders?: readonly string[];
}
