import { RetrysafeError, markerGuard } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.LedgerError');

/** The ledger could not perform a write or read; the operation was not dispatched. */
export class LedgerError extends RetrysafeError {
  readonly [marker] = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super('RETRYSAFE_LEDGER', message, options);
  }
  static override isInstance = markerGuard<LedgerError>(marker);
}
