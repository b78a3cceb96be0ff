import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.UnsupportedSpecificationVersionError');

/** The runner was given an adapter whose specificationVersion it does not implement. */
export class UnsupportedSpecificationVersionError extends RetrysafeError {
  readonly [marker] = true;
  readonly specificationVersion: unknown;
  constructor(provider: string, specificationVersion: unknown) {
    super(
      'RETRYSAFE_UNSUPPORTED_SPEC',
      `adapter ${provider} declares specificationVersion ${JSON.stringify(specificationVersion)}; this runner implements 'v1'`,
    );
    this.specificationVersion = specificationVersion;
  }
  static override isInstance = markerGuard<UnsupportedSpecificationVersionError>(marker);
}
