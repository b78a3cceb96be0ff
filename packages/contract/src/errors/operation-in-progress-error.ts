import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.OperationInProgressError');

/** Another worker holds the live claim on this business operation; it was not dispatched a second time. */
export class OperationInProgressError extends RetrysafeError {
  readonly [marker] = true;
  readonly businessOperationId: string;
  readonly leaseExpiresAt: number | null;
  constructor(businessOperationId: string, leaseExpiresAt: number | null) {
    super(
      'RETRYSAFE_IN_PROGRESS',
      `business operation ${businessOperationId} is being performed by another worker${leaseExpiresAt ? ` (lease until ${new Date(leaseExpiresAt).toISOString()})` : ''}; not dispatched again`,
    );
    this.businessOperationId = businessOperationId;
    this.leaseExpiresAt = leaseExpiresAt;
  }
  static override isInstance = markerGuard<OperationInProgressError>(marker);
}
