import { RetrysafeError } from '@retrysafe/contract';
import { markerGuard } from '@retrysafe/contract/provider';

const marker = Symbol.for('retrysafe.error.AdapterContractError');

/**
 * An adapter handed the runner something its contract does not allow (a provider key that is not a
 * non-empty string, a derivation that threw). Raised before the claim: nothing was written or sent.
 */
export class AdapterContractError extends RetrysafeError {
  readonly [marker] = true;
  readonly provider: string;
  readonly operation: string;
  constructor(provider: string, operation: string, problem: string, options?: { cause?: unknown }) {
    super(
      'RETRYSAFE_ADAPTER_CONTRACT',
      `adapter ${provider}, operation ${operation}: ${problem}; nothing claimed, nothing sent`,
      options,
    );
    this.provider = provider;
    this.operation = operation;
  }
  static override isInstance = markerGuard<AdapterContractError>(marker);
  /** `instanceof` by the marker too: the bundled root and the subpath entries each hold a copy of this class. */
  static [Symbol.hasInstance] = AdapterContractError.isInstance;
}
