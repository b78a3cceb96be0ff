import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.UnsafeResumeError');

/**
 * `resolve(id, { action: 'resume' })` on an operation whose handoff packet marks resume as not safe (the
 * effect may already exist and a re-send would not be folded into it). Nothing was sent. Check at the
 * provider, then mark it done, or resume with `{ force: true }` if you are sure the effect does not exist.
 */
export class UnsafeResumeError extends RetrysafeError {
  readonly [marker] = true;
  readonly businessOperationId: string;
  /** The packet's reason why resume is not safe. */
  readonly why: string;
  constructor(businessOperationId: string, why: string) {
    super(
      'RETRYSAFE_UNSAFE_RESUME',
      `not resuming ${businessOperationId}: the handoff packet marks resume as not safe (${why}); nothing sent. Check at the provider, then mark it done, or resume with { force: true } if you are sure the effect does not exist`,
    );
    this.businessOperationId = businessOperationId;
    this.why = why;
  }
  static override isInstance = markerGuard<UnsafeResumeError>(marker);
}
