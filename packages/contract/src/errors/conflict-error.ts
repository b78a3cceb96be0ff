import { RetrysafeError, markerGuard } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.ConflictError');

/** Same business-operation id with different intent (or, before completion, different params). Nothing was sent. */
export class ConflictError extends RetrysafeError {
  readonly [marker] = true;
  readonly businessOperationId: string;
  readonly field: 'intent' | 'params' | 'operation';
  constructor(businessOperationId: string, field: 'intent' | 'params' | 'operation', detail: string) {
    super('RETRYSAFE_CONFLICT', `business operation ${businessOperationId} already exists with a different ${field}: ${detail}; nothing was sent`);
    this.businessOperationId = businessOperationId;
    this.field = field;
  }
  static override isInstance = markerGuard<ConflictError>(marker);
}
