import { errorClass } from '@retrysafe/contract/provider';

/** A DBOS context or option that would break the runner's guarantees (DBOS retries or times out the step, no
 * workflow, a bound that never ends); thrown before anything is claimed or sent. */
export const DbosStepConfigurationError = errorClass(
  'DbosStepConfigurationError',
  'RETRYSAFE_DBOS_STEP_CONFIG',
  (problem: 'engine-retries' | 'engine-timeout' | 'not-in-workflow' | 'bad-option', message: string) => ({
    problem,
    message,
  }),
);
export type DbosStepConfigurationError = InstanceType<typeof DbosStepConfigurationError>;
