import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.LeaseLostError');

/** A write carried a stale fencing token: another worker took the operation over. The write was refused. */
export class LeaseLostError extends RetrysafeError {
  readonly [marker] = true;
  readonly businessOperationId: string;
  readonly fence: number;
  constructor(businessOperationId: string, fence: number) {
    super(
      'RETRYSAFE_LEASE_LOST',
      `lease on ${businessOperationId} was taken over (fence ${fence} is stale); write refused`,
    );
    this.businessOperationId = businessOperationId;
    this.fence = fence;
  }
  static override isInstance = markerGuard<LeaseLostError>(marker);
}
