import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.UnsupportedCapabilityError');

/** An adapter was asked for a capability it does not have. Never a silent no-op. */
export class UnsupportedCapabilityError extends RetrysafeError {
  readonly [marker] = true;
  readonly capability: string;
  constructor(provider: string, capability: string, detail?: string) {
    super(
      'RETRYSAFE_UNSUPPORTED_CAPABILITY',
      `${provider} does not support ${capability}${detail ? ': ' + detail : ''}`,
    );
    this.capability = capability;
  }
  static override isInstance = markerGuard<UnsupportedCapabilityError>(marker);
}
