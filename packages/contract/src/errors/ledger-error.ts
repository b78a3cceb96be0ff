import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.LedgerError');

/**
 * The ledger could not perform a write or read. Whether the provider may already have the request
 * depends on when the write failed, and `providerMayHaveBeenCalled` says which:
 * - `false`: this call never reached the provider (e.g. the claim or the `dispatched` write failed).
 *   Nothing new happened at the provider; running the same operation again later is safe.
 * - `true`: the write failed after this call had sent the request (disk full, lock held, connection cut
 *   while recording the outcome). The effect may exist. Do not start a new operation: run the same
 *   business-operation id again or `recover()` once the ledger works (both look up first), or check at
 *   the provider (docs/runbook.md, "may have been dispatched").
 * A ledger raises it with `false` (a ledger never calls a provider); the runner re-raises every
 * LedgerError that ends one of its calls with the value from what that call did.
 */
export class LedgerError extends RetrysafeError {
  readonly [marker] = true;
  readonly providerMayHaveBeenCalled: boolean;
  constructor(message: string, options?: { cause?: unknown; providerMayHaveBeenCalled?: boolean }) {
    super('RETRYSAFE_LEDGER', message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.providerMayHaveBeenCalled = options?.providerMayHaveBeenCalled ?? false;
  }
  static override isInstance = markerGuard<LedgerError>(marker);

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), providerMayHaveBeenCalled: this.providerMayHaveBeenCalled };
  }
}
