import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.InvalidStateError');

/** An action is not allowed in the operation's current ledger state (e.g. resolving one that is not handed off). */
export class InvalidStateError extends RetrysafeError {
  readonly [marker] = true;
  readonly businessOperationId: string;
  readonly state: string;
  constructor(businessOperationId: string, state: string, message: string) {
    super('RETRYSAFE_INVALID_STATE', `${businessOperationId} is ${state}: ${message}`);
    this.businessOperationId = businessOperationId;
    this.state = state;
  }
  static override isInstance = markerGuard<InvalidStateError>(marker);
}
