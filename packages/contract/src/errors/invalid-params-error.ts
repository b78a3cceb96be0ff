import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.InvalidParamsError');

/** One field that failed the operation's params schema: its dot path (`(root)` for the object itself) and why, without its value. */
export interface FieldError {
  readonly path: string;
  readonly message: string;
}

/**
 * The params do not match the operation's schema. Raised before the claim: no ledger row was
 * written and the provider was not called, so the corrected call is simply a new call.
 */
export class InvalidParamsError extends RetrysafeError {
  readonly [marker] = true;
  readonly operation: string;
  readonly fields: readonly FieldError[];
  constructor(operation: string, fields: readonly FieldError[]) {
    super(
      'RETRYSAFE_INVALID_PARAMS',
      `invalid params for ${operation}: ${fields.map((f) => `${f.path} ${f.message}`).join('; ')}; nothing was claimed or sent`,
    );
    this.operation = operation;
    this.fields = Object.freeze(fields.map((f) => Object.freeze({ path: f.path, message: f.message })));
  }
  static override isInstance = markerGuard<InvalidParamsError>(marker);
}
