import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.PayloadLimitError');

/**
 * An operation's params or intent are larger or deeper than every ledger can store and patch
 * (see `PAYLOAD_LIMITS`). Raised before the claim: nothing was written and the provider was not called.
 */
export class PayloadLimitError extends RetrysafeError {
  readonly [marker] = true;
  /** Which part of the operation is over the limit. */
  readonly part: 'params' | 'intent';
  readonly limit: 'depth' | 'bytes';
  /** The measured value (bytes or nesting levels); for depth, the first level found over the limit. */
  readonly actual: number;
  readonly max: number;
  constructor(part: 'params' | 'intent', limit: 'depth' | 'bytes', actual: number, max: number) {
    super(
      'RETRYSAFE_PAYLOAD_LIMIT',
      limit === 'depth'
        ? `${part} nest deeper than ${max} levels (found ${actual}): no ledger stores that safely; nothing claimed, nothing sent`
        : `${part} are ${actual} bytes of canonical JSON, more than the ${max} every ledger stores; nothing claimed, nothing sent`,
    );
    this.part = part;
    this.limit = limit;
    this.actual = actual;
    this.max = max;
  }
  static override isInstance = markerGuard<PayloadLimitError>(marker);
}

/**
 * What every ledger (memory, SQLite, PostgreSQL) stores and patches, so one limit holds whatever ledger a
 * deployment uses: SQLite's JSON functions refuse documents nested deeper than 1000 (the params sit
 * inside the operation record), and deep recursion elsewhere ends in a RangeError. Checked before the claim.
 */
export const PAYLOAD_LIMITS = Object.freeze({
  /** Nesting levels of objects/arrays in params or intent (a flat object is 1). */
  maxDepth: 100,
  /** UTF-8 bytes of the params' (or intent's) canonical JSON. */
  maxBytes: 1024 * 1024,
});
