import { errorClass } from '@retrysafe/contract/provider';

/** What the waiting workflow answered when it did not apply a decision: the runner's refusal, by its code. */
export interface DbosResolutionRefusal {
  readonly code: string;
  readonly message: string;
}

/** `sendResolution(…, { awaitSeconds })`: the workflow took the decision and did not apply it (not safe, the operation
 * handed off again or no longer handed off); nothing was sent for it. */
export const DbosResolutionRefusedError = errorClass(
  'DbosResolutionRefusedError',
  'RETRYSAFE_DBOS_RESOLUTION_REFUSED',
  (businessOperationId: string, refusal: DbosResolutionRefusal) => ({
    businessOperationId,
    refusal,
    message: `the workflow did not apply the decision on ${businessOperationId}: ${refusal.message}`,
  }),
);
export type DbosResolutionRefusedError = InstanceType<typeof DbosResolutionRefusedError>;
