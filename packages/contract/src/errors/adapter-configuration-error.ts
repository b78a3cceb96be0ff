import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.AdapterConfigurationError');

/** An adapter was configured unsafely or inconsistently (e.g. an SDK client with its own retries on). */
export class AdapterConfigurationError extends RetrysafeError {
  readonly [marker] = true;
  readonly provider: string;
  constructor(provider: string, message: string) {
    super('RETRYSAFE_ADAPTER_CONFIG', `${provider}: ${message}`);
    this.provider = provider;
  }
  static override isInstance = markerGuard<AdapterConfigurationError>(marker);
}
