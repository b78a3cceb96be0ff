import type { RetrySafetyCard } from './card.js';
import type { FieldError } from './errors.js';
import type { BusinessOperationId, ProviderKey } from './ids.js';
import type { OperationRecord } from './ledger.js';
import type { LookupResult, Outcome } from './outcome.js';
import type { Receipt } from './receipt.js';

export const SPECIFICATION_VERSION = 'v1' as const;

export type JsonSchema = { readonly [key: string]: unknown };

export interface OperationSpec {
  /** The card's operation is `<provider>.<name>`. */
  readonly name: string;
  readonly description: string;
  readonly card: RetrySafetyCard;
  /** Dot paths into params that name the business intent; the business-operation id is derived from them. */
  readonly intentFields: readonly string[];
  /** Params that must never reach receipts, packets or logs (beyond the runner's own redaction list). */
  readonly sensitiveFields?: readonly string[];
  readonly paramsSchema: JsonSchema;
  /** Pure checks beyond the schema, run before the claim (an InvalidParamsError, nothing sent). */
  readonly checkParams?: (params: unknown) => readonly FieldError[];
  /** The adapter's doResolveIntent reads this operation's intent: the runner and agent tools ask it for no other. */
  readonly resolvesIntent?: boolean;
}

export interface ExecuteContext
  extends Pick<OperationRecord, 'businessOperationId' | 'providerKey' | 'statusRef'>,
    Pick<Receipt, 'runId' | 'attemptId'> {
  /** Set (≥ 2) for a superseded operation: its key is derived from `revisionKeySource(id, keyRevision)`. */
  readonly keyRevision?: number;
  /** 1-based, across the operation's whole life (all runs). */
  readonly attempt: number;
  readonly signal?: AbortSignal;
  /** For an operation that resolvesIntent, the intent its id names as doResolveIntent read it for this call: send by it,
   * not by the params' address, which may name another object by the time the request arrives. */
  readonly target?: Readonly<Record<string, unknown>>;
}

/** `params`: the original request's (some lookups re-send them with the same key). */
export interface LookupContext
  extends Omit<ExecuteContext, 'attempt'>,
    Pick<OperationRecord, 'params' | 'firstDispatchedAt'> {
  readonly lastDispatchedAt?: number | null;
  readonly now: number;
  /** The runner's `resendSafety` judgement, for lookups that re-send. */
  readonly keyReusable?: boolean;
  /** The clock-skew margin the runner decides with (its policy's, else the card's): a lookup window widened by it. */
  readonly clockSkewMarginMs?: number;
}

/** A provider adapter, version 1. Only the runner calls the `do*` methods; it never branches on `provider`. */
export interface AdapterV1 {
  readonly specificationVersion: typeof SPECIFICATION_VERSION;
  readonly provider: string;
  /** The account it acts as (a short name, never a secret): the business-operation id covers it, so the same intent
   * from another account is another operation, and recover() drives a stored one through its own account's adapter. */
  readonly account?: string;
  readonly operations: Readonly<Record<string, OperationSpec>>;
  /** Null when no key travels. */
  deriveProviderKey(operation: string, id: BusinessOperationId): ProviderKey | null;
  /** One attempt, classified into exactly one Outcome; never throws for provider or network errors. */
  doExecute(operation: string, params: unknown, ctx: ExecuteContext): Promise<Outcome>;
  /** UnsupportedCapabilityError when the card's lookup.method is 'none' or 'unknown'. */
  doLookup(operation: string, ctx: LookupContext): Promise<LookupResult>;
  /** The intent with a field the provider resolves (one user spelled three ways) replaced by the provider's own id of
   * it, asked before the claim for an operation that declares `resolvesIntent` (any other's intent is answered as is). When it cannot tell, nothing is claimed or sent: InvalidIntentError when the provider
   * refuses (404, 403), IntentLookupError when it could not answer now, which the runner asks again within its policy. */
  doResolveIntent?(
    operation: string,
    intent: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>>;
  close?(): Promise<void>;
}

/** The `account` option of every adapter factory, passed on to `defineAdapter`. */
export type AccountOption = Pick<AdapterV1, 'account'>;

/** One operation's params and `done` result, at compile time only, so `runner.run()` can check a call. */
export interface OperationTypes<P = unknown, R = unknown> {
  readonly params: P;
  readonly result: R;
}

export type OperationTypeMap = { readonly [name: string]: OperationTypes };

/** `'~operations'` exists only in the type, so a typed adapter is still a plain `AdapterV1` everywhere. */
export interface TypedAdapter<Ops extends OperationTypeMap> extends AdapterV1 {
  readonly '~operations'?: Ops;
}

export type OperationsOf<A> = A extends { readonly '~operations'?: infer O extends OperationTypeMap }
  ? string extends keyof O
    ? never
    : O
  : never;

/** The operation names a call may use: the declared literals, or any string for an untyped adapter. */
export type OperationName<A> = [OperationsOf<A>] extends [never] ? string : Extract<keyof OperationsOf<A>, string>;

// An undeclared name is `never`; an untyped adapter's params and results are `unknown`.
type Member<A, N, K extends keyof OperationTypes> = [OperationsOf<A>] extends [never]
  ? unknown
  : OperationsOf<A>[N & keyof OperationsOf<A>][K];
export type OperationParams<A, N extends string> = Member<A, N, 'params'>;
export type OperationResult<A, N extends string> = Member<A, N, 'result'>;
