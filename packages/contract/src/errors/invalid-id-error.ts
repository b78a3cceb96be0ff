import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.InvalidIdError');

/** An id (business-operation id, run id, attempt id or provider key) failed validation. */
export class InvalidIdError extends RetrysafeError {
  readonly [marker] = true;
  readonly kind: string;
  readonly value: string;
  constructor(kind: string, value: string, reason: string) {
    super(
      'RETRYSAFE_INVALID_ID',
      `invalid ${kind} ${JSON.stringify(value.length > 80 ? value.slice(0, 80) + '…' : value)}: ${reason}`,
    );
    this.kind = kind;
    this.value = value;
  }
  static override isInstance = markerGuard<InvalidIdError>(marker);
}
