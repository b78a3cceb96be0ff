import { errorClass, markerGuard, RetrysafeError } from './error-class.js';
import { stateWords } from './ledger-states.js';

/** One field that failed a check (params, a card): its dot path (`(root)` for the object itself) and why, never its value. */
export interface FieldError {
  readonly path: string;
  readonly message: string;
}

/** An adapter was configured unsafely or inconsistently (e.g. an SDK client with its own retries on). */
export const AdapterConfigurationError = errorClass(
  'AdapterConfigurationError',
  'RETRYSAFE_ADAPTER_CONFIG',
  (provider: string, message: string) => ({ provider, message: `${provider}: ${message}` }),
);
export type AdapterConfigurationError = InstanceType<typeof AdapterConfigurationError>;

/** A retry safety card failed validation; `problems` lists every problem with its field path. */
export const CardValidationError = errorClass(
  'CardValidationError',
  'RETRYSAFE_INVALID_CARD',
  (operation: string, problems: readonly FieldError[]) => ({
    problems,
    message: `invalid retry safety card for ${operation}: ${problems.length} problem(s): ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
  }),
);
export type CardValidationError = InstanceType<typeof CardValidationError>;

/** This worker's clock is too far from the ledger's, which judges leases: it could send after a takeover. */
export const ClockSkewError = errorClass(
  'ClockSkewError',
  'RETRYSAFE_CLOCK_SKEW',
  (skewMs: number, maxSkewMs: number, what: string) => ({
    skewMs,
    maxSkewMs,
    message: `${what} refused: this worker's clock is ${Math.abs(skewMs)} ms ${skewMs > 0 ? 'ahead of' : 'behind'} the ledger's clock, more than the ${maxSkewMs} ms allowed; nothing written, nothing sent — fix the machine's time sync`,
  }),
);
export type ClockSkewError = InstanceType<typeof ClockSkewError>;

/** Same business-operation id with another intent, operation or compared params; nothing was sent. `paths`: where
 * the params differ. `needsPerson`: at rest and an attempt may have applied, so a person resolves it. `storedMayApply`:
 * the stored request was or may still be applied, so redoing it under other intent fields could make it twice. */
export const ConflictError = errorClass(
  'ConflictError',
  'RETRYSAFE_CONFLICT',
  ({
    businessOperationId,
    field,
    detail,
    paths = [],
    needsPerson = false,
    storedMayApply = needsPerson,
  }: {
    businessOperationId: string;
    field: 'intent' | 'params' | 'operation';
    detail: string;
    paths?: readonly string[];
    needsPerson?: boolean;
    storedMayApply?: boolean;
  }) => ({
    businessOperationId,
    field,
    paths: Object.freeze([...paths]),
    needsPerson,
    storedMayApply,
    message: `business operation ${businessOperationId} already exists with ${field === 'params' ? 'different params' : `a different ${field}`}${paths.length ? ` at ${paths.join(', ')}` : ''}: ${detail}; nothing was sent`,
  }),
);
export type ConflictError = InstanceType<typeof ConflictError>;

/** An id (business-operation id, run id, attempt id or provider key) failed validation. */
export const InvalidIdError = errorClass(
  'InvalidIdError',
  'RETRYSAFE_INVALID_ID',
  (kind: string, value: string, reason: string) => ({
    kind,
    value,
    message: `invalid ${kind} ${JSON.stringify(value.length > 80 ? value.slice(0, 80) + '…' : value)}: ${reason}`,
  }),
);
export type InvalidIdError = InstanceType<typeof InvalidIdError>;

/** A look-up of an intent field before the claim (doResolveIntent) the provider could not answer now (no answer, a 429,
 * a 5xx): nothing was claimed or sent, and the same call later may succeed. `retryAfterMs`: the provider's wait. */
export const IntentLookupError = errorClass(
  'IntentLookupError',
  'RETRYSAFE_INTENT_LOOKUP',
  (path: string, reason: string, retryAfterMs?: number) => ({
    path,
    reason,
    retryAfterMs,
    message: `${path} could not be looked up now: ${reason}; nothing was claimed or sent, try again later with the same arguments`,
  }),
);
export type IntentLookupError = InstanceType<typeof IntentLookupError>;

/** Intent fields that cannot be canonicalised (functions, NaN, cycles, missing declared fields…); `reason` has no path. */
export const InvalidIntentError = errorClass(
  'InvalidIntentError',
  'RETRYSAFE_INVALID_INTENT',
  (path: string, reason: string) => ({ path, reason, message: `invalid intent at ${path || '(root)'}: ${reason}` }),
);
export type InvalidIntentError = InstanceType<typeof InvalidIntentError>;

/** The params do not match the operation's schema. Raised before the claim: nothing was written or sent. */
export const InvalidParamsError = errorClass(
  'InvalidParamsError',
  'RETRYSAFE_INVALID_PARAMS',
  (operation: string, fields: readonly FieldError[]) => ({
    operation,
    fields: Object.freeze(fields.map((f) => Object.freeze({ path: f.path, message: f.message }))),
    message: `invalid params for ${operation}: ${fields.map((f) => `${f.path} ${f.message}`).join('; ')}; nothing was claimed or sent`,
  }),
);
export type InvalidParamsError = InstanceType<typeof InvalidParamsError>;

/** An action is not allowed in the operation's current ledger state (e.g. resolving one that is not handed off). */
export const InvalidStateError = errorClass(
  'InvalidStateError',
  'RETRYSAFE_INVALID_STATE',
  (businessOperationId: string, state: string, message: string) => ({
    businessOperationId,
    state,
    message: `${businessOperationId} is ${stateWords(state)}: ${message}`,
  }),
);
export type InvalidStateError = InstanceType<typeof InvalidStateError>;

/** This worker's lease ran out just before a provider call (a long pause), so it did not send: another may have taken over. */
export const LeaseExpiredError = errorClass(
  'LeaseExpiredError',
  'RETRYSAFE_LEASE_EXPIRED',
  (businessOperationId: string, leaseExpiresAt: number, now: number) => ({
    businessOperationId,
    leaseExpiresAt,
    now,
    message: `not sending ${businessOperationId}: this worker's lease ran out ${Math.max(0, now - leaseExpiresAt)} ms before the provider call (or is about to); nothing sent — a later run() or recover() reconciles it`,
  }),
);
export type LeaseExpiredError = InstanceType<typeof LeaseExpiredError>;

/** A write carried a stale fencing token: another worker took the operation over. The write was refused. */
export const LeaseLostError = errorClass(
  'LeaseLostError',
  'RETRYSAFE_LEASE_LOST',
  (businessOperationId: string, fence: number) => ({
    businessOperationId,
    fence,
    message: `lease on ${businessOperationId} was taken over (fence ${fence} is stale); write refused`,
  }),
);
export type LeaseLostError = InstanceType<typeof LeaseLostError>;

/** Params or intent larger or deeper than every ledger stores (`PAYLOAD_LIMITS`); raised before the claim. */
export const PayloadLimitError = errorClass(
  'PayloadLimitError',
  'RETRYSAFE_PAYLOAD_LIMIT',
  (part: 'params' | 'intent', limit: 'depth' | 'bytes', actual: number, max: number) => ({
    part,
    limit,
    actual,
    max,
    message:
      limit === 'depth'
        ? `${part} nest deeper than ${max} levels (found ${actual}): no ledger stores that safely; nothing claimed, nothing sent`
        : `${part} are ${actual} bytes of canonical JSON, more than the ${max} every ledger stores; nothing claimed, nothing sent`,
  }),
);
export type PayloadLimitError = InstanceType<typeof PayloadLimitError>;

/** The runner gave up: the reason and every attempt are attached. */
export const RetryExhaustedError = errorClass(
  'RetryExhaustedError',
  'RETRYSAFE_RETRY_EXHAUSTED',
  (reason: string, attempts: readonly unknown[]) => ({
    reason,
    attempts,
    message: `gave up after ${attempts.length} attempt(s): ${reason}`,
  }),
);
export type RetryExhaustedError = InstanceType<typeof RetryExhaustedError>;

/** The adapter does not declare the requested operation. */
export const UnknownOperationError = errorClass(
  'UnknownOperationError',
  'RETRYSAFE_UNKNOWN_OPERATION',
  (provider: string, operation: string, known: readonly string[]) => ({
    operation,
    message: `${provider} has no operation ${JSON.stringify(operation)} (known: ${known.join(', ')})`,
  }),
);
export type UnknownOperationError = InstanceType<typeof UnknownOperationError>;

/** `resolve(id, { action: 'resume' })` on an operation whose handoff packet marks resume as not safe (`why`). Nothing was sent. */
export const UnsafeResumeError = errorClass(
  'UnsafeResumeError',
  'RETRYSAFE_UNSAFE_RESUME',
  (businessOperationId: string, why: string) => ({
    businessOperationId,
    why,
    message: `not resuming ${businessOperationId}: the handoff packet marks resume as not safe (${why}); nothing sent. Check at the provider, then mark it done, or resume with { force: true } if you are sure the effect does not exist`,
  }),
);
export type UnsafeResumeError = InstanceType<typeof UnsafeResumeError>;

/** An adapter was asked for a capability it does not have. Never a silent no-op. */
export const UnsupportedCapabilityError = errorClass(
  'UnsupportedCapabilityError',
  'RETRYSAFE_UNSUPPORTED_CAPABILITY',
  (provider: string, capability: string, detail?: string) => ({
    capability,
    message: `${provider} does not support ${capability}${detail ? ': ' + detail : ''}`,
  }),
);
export type UnsupportedCapabilityError = InstanceType<typeof UnsupportedCapabilityError>;

/** The runner was given an adapter whose specificationVersion it does not implement. */
export const UnsupportedSpecificationVersionError = errorClass(
  'UnsupportedSpecificationVersionError',
  'RETRYSAFE_UNSUPPORTED_SPEC',
  (provider: string, specificationVersion: unknown) => ({
    specificationVersion,
    message: `adapter ${provider} declares specificationVersion ${JSON.stringify(specificationVersion)}; this runner implements 'v1'`,
  }),
);
export type UnsupportedSpecificationVersionError = InstanceType<typeof UnsupportedSpecificationVersionError>;

const ledgerMarker = Symbol.for('retrysafe.error.LedgerError');

/** Where a caller acts on the kind of ledger failure: `not-a-ledger`, the place named holds no ledger (a wrong target);
 * `busy`, another connection held the lock and nothing was written (try again). */
export type LedgerErrorReason = 'not-a-ledger' | 'busy';

/** `providerMayHaveBeenCalled`: the effect may exist, so run the same id again or `recover()` (both look up first). */
export class LedgerError extends RetrysafeError {
  readonly [ledgerMarker] = true;
  readonly providerMayHaveBeenCalled: boolean;
  readonly reason: LedgerErrorReason | undefined;
  constructor(
    message: string,
    options?: { cause?: unknown; providerMayHaveBeenCalled?: boolean; reason?: LedgerErrorReason },
  ) {
    super('RETRYSAFE_LEDGER', message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.providerMayHaveBeenCalled = options?.providerMayHaveBeenCalled ?? false;
    this.reason = options?.reason;
  }
  static override isInstance = markerGuard<LedgerError>(ledgerMarker);

  override toJSON(): Record<string, unknown> {
    const { providerMayHaveBeenCalled, reason } = this;
    return { ...super.toJSON(), providerMayHaveBeenCalled, ...(reason ? { reason } : {}) };
  }
}
