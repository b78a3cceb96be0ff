import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.InvalidIntentError');

/** Intent fields that cannot be canonicalised (functions, NaN, cycles, missing declared fields…). */
export class InvalidIntentError extends RetrysafeError {
  readonly [marker] = true;
  readonly path: string;
  /** What is wrong at `path`, without the path. */
  readonly reason: string;
  constructor(path: string, reason: string) {
    super('RETRYSAFE_INVALID_INTENT', `invalid intent at ${path || '(root)'}: ${reason}`);
    this.path = path;
    this.reason = reason;
  }
  static override isInstance = markerGuard<InvalidIntentError>(marker);
}
