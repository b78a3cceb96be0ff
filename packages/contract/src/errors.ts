import { errorClass, markerGuard, RetrysafeError } from './error-class.js';

type Build = (...args: never[]) => { message: string };

function errorClasses<const T extends Record<string, readonly [code: string, build: Build]>>(table: T) {
  const out: Record<string, unknown> = {};
  for (const [name, [code, build]] of Object.entries(table)) out[name] = errorClass(name, code, build as () => never);
  return out as { [K in keyof T]: ReturnType<typeof errorClass<Parameters<T[K][1]>, ReturnType<T[K][1]>>> };
}

/** One field that failed a check (params, a card): its dot path (`(root)` for the object itself) and why, never its value. */
export interface FieldError {
  readonly path: string;
  readonly message: string;
}

export const {
  AdapterConfigurationError,
  CardValidationError,
  ClockSkewError,
  ConflictError,
  InvalidIdError,
  InvalidIntentError,
  InvalidParamsError,
  InvalidStateError,
  LeaseExpiredError,
  LeaseLostError,
  PayloadLimitError,
  RetryExhaustedError,
  UnknownOperationError,
  UnsafeResumeError,
  UnsupportedCapabilityError,
  UnsupportedSpecificationVersionError,
} = errorClasses({
  // An adapter configured unsafely or inconsistently (e.g. an SDK client with its own retries on).
  AdapterConfigurationError: [
    'RETRYSAFE_ADAPTER_CONFIG',
    (provider: string, message: string) => ({ provider, message: `${provider}: ${message}` }),
  ],
  CardValidationError: [
    'RETRYSAFE_INVALID_CARD',
    (operation: string, problems: readonly FieldError[]) => ({
      problems,
      message: `invalid retry safety card for ${operation}: ${problems.length} problem(s): ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
    }),
  ],
  // Leases are judged on the ledger's clock, so a worker far off it could send after another took over.
  // `skewMs`: worker clock minus ledger clock.
  ClockSkewError: [
    'RETRYSAFE_CLOCK_SKEW',
    (skewMs: number, maxSkewMs: number, what: string) => ({
      skewMs,
      maxSkewMs,
      message: `${what} refused: this worker's clock is ${Math.abs(skewMs)} ms ${skewMs > 0 ? 'ahead of' : 'behind'} the ledger's clock, more than the ${maxSkewMs} ms allowed; nothing written, nothing sent — fix the machine's time sync`,
    }),
  ],
  // Same id, another intent, operation or compared params; `paths` says where (never the values).
  ConflictError: [
    'RETRYSAFE_CONFLICT',
    (
      businessOperationId: string,
      field: 'intent' | 'params' | 'operation',
      detail: string,
      paths: readonly string[] = [],
    ) => ({
      businessOperationId,
      field,
      paths: Object.freeze([...paths]),
      message: `business operation ${businessOperationId} already exists with a different ${field}${paths.length ? ` at ${paths.join(', ')}` : ''}: ${detail}; nothing was sent`,
    }),
  ],
  InvalidIdError: [
    'RETRYSAFE_INVALID_ID',
    (kind: string, value: string, reason: string) => ({
      kind,
      value,
      message: `invalid ${kind} ${JSON.stringify(value.length > 80 ? value.slice(0, 80) + '…' : value)}: ${reason}`,
    }),
  ],
  // Intent that cannot be canonicalised (functions, NaN, cycles, a missing declared field); `reason` has no path.
  InvalidIntentError: [
    'RETRYSAFE_INVALID_INTENT',
    (path: string, reason: string) => ({ path, reason, message: `invalid intent at ${path || '(root)'}: ${reason}` }),
  ],
  InvalidParamsError: [
    'RETRYSAFE_INVALID_PARAMS',
    (operation: string, fields: readonly FieldError[]) => ({
      operation,
      fields: Object.freeze(fields.map((f) => Object.freeze({ path: f.path, message: f.message }))),
      message: `invalid params for ${operation}: ${fields.map((f) => `${f.path} ${f.message}`).join('; ')}; nothing was claimed or sent`,
    }),
  ],
  InvalidStateError: [
    'RETRYSAFE_INVALID_STATE',
    (businessOperationId: string, state: string, message: string) => ({
      businessOperationId,
      state,
      message: `${businessOperationId} is ${state}: ${message}`,
    }),
  ],
  // This worker's own lease ran out before the provider call (a long pause): another may have taken over.
  LeaseExpiredError: [
    'RETRYSAFE_LEASE_EXPIRED',
    (businessOperationId: string, leaseExpiresAt: number, now: number) => ({
      businessOperationId,
      leaseExpiresAt,
      now,
      message: `not sending ${businessOperationId}: this worker's lease ran out ${Math.max(0, now - leaseExpiresAt)} ms before the provider call (or is about to); nothing sent — a later run() or recover() reconciles it`,
    }),
  ],
  // A write with a stale fencing token: another worker took the operation over.
  LeaseLostError: [
    'RETRYSAFE_LEASE_LOST',
    (businessOperationId: string, fence: number) => ({
      businessOperationId,
      fence,
      message: `lease on ${businessOperationId} was taken over (fence ${fence} is stale); write refused`,
    }),
  ],
  // `actual`: bytes, or for depth the first level found over the limit.
  PayloadLimitError: [
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
  ],
  RetryExhaustedError: [
    'RETRYSAFE_RETRY_EXHAUSTED',
    (reason: string, attempts: readonly unknown[]) => ({
      reason,
      attempts,
      message: `gave up after ${attempts.length} attempt(s): ${reason}`,
    }),
  ],
  UnknownOperationError: [
    'RETRYSAFE_UNKNOWN_OPERATION',
    (provider: string, operation: string, known: readonly string[]) => ({
      operation,
      message: `${provider} has no operation ${JSON.stringify(operation)} (known: ${known.join(', ')})`,
    }),
  ],
  UnsafeResumeError: [
    'RETRYSAFE_UNSAFE_RESUME',
    (businessOperationId: string, why: string) => ({
      businessOperationId,
      why,
      message: `not resuming ${businessOperationId}: the handoff packet marks resume as not safe (${why}); nothing sent. Check at the provider, then mark it done, or resume with { force: true } if you are sure the effect does not exist`,
    }),
  ],
  UnsupportedCapabilityError: [
    'RETRYSAFE_UNSUPPORTED_CAPABILITY',
    (provider: string, capability: string, detail?: string) => ({
      capability,
      message: `${provider} does not support ${capability}${detail ? ': ' + detail : ''}`,
    }),
  ],
  UnsupportedSpecificationVersionError: [
    'RETRYSAFE_UNSUPPORTED_SPEC',
    (provider: string, specificationVersion: unknown) => ({
      specificationVersion,
      message: `adapter ${provider} declares specificationVersion ${JSON.stringify(specificationVersion)}; this runner implements 'v1'`,
    }),
  ],
});
export type AdapterConfigurationError = InstanceType<typeof AdapterConfigurationError>;
export type CardValidationError = InstanceType<typeof CardValidationError>;
export type ClockSkewError = InstanceType<typeof ClockSkewError>;
export type ConflictError = InstanceType<typeof ConflictError>;
export type InvalidIdError = InstanceType<typeof InvalidIdError>;
export type InvalidIntentError = InstanceType<typeof InvalidIntentError>;
export type InvalidParamsError = InstanceType<typeof InvalidParamsError>;
export type InvalidStateError = InstanceType<typeof InvalidStateError>;
export type LeaseExpiredError = InstanceType<typeof LeaseExpiredError>;
export type LeaseLostError = InstanceType<typeof LeaseLostError>;
export type PayloadLimitError = InstanceType<typeof PayloadLimitError>;
export type RetryExhaustedError = InstanceType<typeof RetryExhaustedError>;
export type UnknownOperationError = InstanceType<typeof UnknownOperationError>;
export type UnsafeResumeError = InstanceType<typeof UnsafeResumeError>;
export type UnsupportedCapabilityError = InstanceType<typeof UnsupportedCapabilityError>;
export type UnsupportedSpecificationVersionError = InstanceType<typeof UnsupportedSpecificationVersionError>;

const ledgerMarker = Symbol.for('retrysafe.error.LedgerError');

/** `providerMayHaveBeenCalled`: the effect may exist, so run the same id again or `recover()` (both look up first). */
export class LedgerError extends RetrysafeError {
  readonly [ledgerMarker] = true;
  readonly providerMayHaveBeenCalled: boolean;
  constructor(message: string, options?: { cause?: unknown; providerMayHaveBeenCalled?: boolean }) {
    super('RETRYSAFE_LEDGER', message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.providerMayHaveBeenCalled = options?.providerMayHaveBeenCalled ?? false;
  }
  static override isInstance = markerGuard<LedgerError>(ledgerMarker);

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), providerMayHaveBeenCalled: this.providerMayHaveBeenCalled };
  }
}
