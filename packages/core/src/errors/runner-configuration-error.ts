import { errorClass } from '@retrysafe/contract/provider';

/** The runner (or one of its ledgers/sinks) was given options that cannot work, e.g. a negative maxAttempts. */
export const RunnerConfigurationError = errorClass(
  'RunnerConfigurationError',
  'RETRYSAFE_RUNNER_CONFIG',
  (option: string, message: string) => ({ option, message: `${option}: ${message}` }),
);
export type RunnerConfigurationError = InstanceType<typeof RunnerConfigurationError>;
