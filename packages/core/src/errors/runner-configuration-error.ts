import { RetrysafeError } from '@retrysafe/contract';
import { markerGuard } from '@retrysafe/contract/provider';

const marker = Symbol.for('retrysafe.error.RunnerConfigurationError');

/** The runner (or one of its ledgers/sinks) was given options that cannot work, e.g. a negative maxAttempts. */
export class RunnerConfigurationError extends RetrysafeError {
  readonly [marker] = true;
  readonly option: string;
  constructor(option: string, message: string) {
    super('RETRYSAFE_RUNNER_CONFIG', `${option}: ${message}`);
    this.option = option;
  }
  static override isInstance = markerGuard<RunnerConfigurationError>(marker);
  /** `instanceof` by the marker too: the bundled root and the ./agent and ./internal entries each hold a copy of this class. */
  static [Symbol.hasInstance] = RunnerConfigurationError.isInstance;
}
