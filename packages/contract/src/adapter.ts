import type { RetrySafetyCard } from './card.js';
import type { FieldError } from './errors.js';
import type { AttemptId, BusinessOperationId, ProviderKey, RunId } from './ids.js';
import type { LookupResult, Outcome } from './outcome.js';

export const SPECIFICATION_VERSION = 'v1' as const;

/** A JSON Schema object describing an operation's params (used for agent tool definitions). */
export type JsonSchema = { readonly [key: string]: unknown };

export interface OperationSpec {
  /** Short name within the adapter, e.g. `paymentIntents.create`. The card's operation is `<provider>.<name>`. */
  readonly name: string;
  readonly description: string;
  readonly card: RetrySafetyCard;
  /** Dot paths into params that name the business intent; the business-operation id is derived from them. */
  readonly intentFields: readonly string[];
  /** Params that must never reach receipts, packets or logs (beyond the runner's own redaction list). */
  readonly sensitiveFields?: readonly string[];
  /** JSON Schema of the params. */
  readonly paramsSchema: JsonSchema;
  /** Optional checks beyond the schema; pure. Run before the claim: any error is an InvalidParamsError, nothing sent. */
  readonly checkParams?: (params: unknown) => readonly FieldError[];
}

export interface ExecuteContext {
  readonly businessOperationId: BusinessOperationId;
  /** Null when the card says no key travels. The same key on every attempt of one operation. */
  readonly providerKey: ProviderKey | null;
  readonly runId: RunId;
  readonly attemptId: AttemptId;
  /** Set (≥ 2) for a superseded operation: its key is derived from `revisionKeySource(id, keyRevision)`. */
  readonly keyRevision?: number;
  /** 1-based attempt number across the operation's whole life (all runs). */
  readonly attempt: number;
  /** Status reference from an earlier in-progress outcome, if any (e.g. a status URL). */
  readonly statusRef: string | null;
  readonly signal?: AbortSignal;
}

export interface LookupContext extends Omit<ExecuteContext, 'attempt'> {
  /** The params of the original request (some lookups re-send them with the same key). */
  readonly params: unknown;
  /** Epoch ms of the first dispatch, or null if never dispatched. A key's age is measured from here. */
  readonly firstDispatchedAt: number | null;
  /** Epoch ms of the latest dispatch (or an upper bound): whether a "not found" proves absence is measured from here. */
  readonly lastDispatchedAt?: number | null;
  /** Epoch ms now, from the runner's clock. */
  readonly now: number;
  /** The runner's `resendSafety` judgement that a same-key re-send is inside retention (for lookups that re-send). */
  readonly keyReusable?: boolean;
}

/**
 * A provider adapter, version 1. The runner calls the `do*` methods; callers go through the runner.
 * Operations are data (cards); the runner never branches on `provider`.
 */
export interface AdapterV1 {
  readonly specificationVersion: typeof SPECIFICATION_VERSION;
  readonly provider: string;
  readonly operations: Readonly<Record<string, OperationSpec>>;
  /** The provider key for this operation, derived from the business-operation id under the provider's constraints; null when none travels. */
  deriveProviderKey(operation: string, id: BusinessOperationId): ProviderKey | null;
  /** Performs one attempt. Must classify every result or error into exactly one Outcome; must not throw for provider/network errors. */
  doExecute(operation: string, params: unknown, ctx: ExecuteContext): Promise<Outcome>;
  /** Looks up the provider's stored status/result for the operation. Throws UnsupportedCapabilityError when the card's lookup.method is 'none'. */
  doLookup(operation: string, ctx: LookupContext): Promise<LookupResult>;
  /** Releases clients/sockets. */
  close?(): Promise<void>;
}
