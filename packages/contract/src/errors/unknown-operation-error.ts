import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.UnknownOperationError');

/** The adapter does not declare the requested operation. */
export class UnknownOperationError extends RetrysafeError {
  readonly [marker] = true;
  readonly operation: string;
  constructor(provider: string, operation: string, known: readonly string[]) {
    super(
      'RETRYSAFE_UNKNOWN_OPERATION',
      `${provider} has no operation ${JSON.stringify(operation)} (known: ${known.join(', ')})`,
    );
    this.operation = operation;
  }
  static override isInstance = markerGuard<UnknownOperationError>(marker);
}
