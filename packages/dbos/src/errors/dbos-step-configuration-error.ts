import { errorClass } from '@retrysafe/contract/provider';

export type DbosStepConfigurationProblem =
  /** DBOS would retry the step: a second retrying layer above the runner. */
  | 'engine-retries'
  /** A DBOS step timeout abandons the attempt while its provider call keeps running. */
  | 'engine-timeout'
  /** Called outside a DBOS workflow: there is no workflow id to record and no checkpoint to rely on. */
  | 'not-in-workflow';

/**
 * A retrysafe operation was asked to run in a DBOS context that would break its guarantees. Thrown
 * before anything is claimed or sent.
 */
export const DbosStepConfigurationError = errorClass(
  'DbosStepConfigurationError',
  'RETRYSAFE_DBOS_STEP_CONFIG',
  (problem: DbosStepConfigurationProblem, message: string) => ({ problem, message }),
);
export type DbosStepConfigurationError = InstanceType<typeof DbosStepConfigurationError>;
