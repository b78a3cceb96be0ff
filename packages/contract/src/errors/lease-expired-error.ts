import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.LeaseExpiredError');

/**
 * A worker found, immediately before a provider call, that its own lease on the operation had run out
 * (a long pause: GC, a suspended VM, a blocked event loop). It did not send: another worker may already
 * have taken the operation over, and a send now could land after that worker's lookup said "not found".
 * The operation stays as the ledger has it; a later run() or recover() reconciles it (looking up first).
 */
export class LeaseExpiredError extends RetrysafeError {
  readonly [marker] = true;
  readonly businessOperationId: string;
  /** The lease end this worker knew, and its clock when it checked (epoch ms). */
  readonly leaseExpiresAt: number;
  readonly now: number;
  constructor(businessOperationId: string, leaseExpiresAt: number, now: number) {
    super(
      'RETRYSAFE_LEASE_EXPIRED',
      `not sending ${businessOperationId}: this worker's lease ran out ${Math.max(0, now - leaseExpiresAt)} ms before the provider call (or is about to); nothing sent — a later run() or recover() reconciles it`,
    );
    this.businessOperationId = businessOperationId;
    this.leaseExpiresAt = leaseExpiresAt;
    this.now = now;
  }
  static override isInstance = markerGuard<LeaseExpiredError>(marker);
}
