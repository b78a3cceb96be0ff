import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.RetryExhaustedError');

/** The runner gave up: the reason and every attempt are attached. */
export class RetryExhaustedError extends RetrysafeError {
  readonly [marker] = true;
  readonly reason: string;
  readonly attempts: readonly unknown[];
  constructor(reason: string, attempts: readonly unknown[]) {
    super('RETRYSAFE_RETRY_EXHAUSTED', `gave up after ${attempts.length} attempt(s): ${reason}`);
    this.reason = reason;
    this.attempts = attempts;
  }
  static override isInstance = markerGuard<RetryExhaustedError>(marker);
}
