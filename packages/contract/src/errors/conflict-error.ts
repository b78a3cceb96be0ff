import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.ConflictError');

/**
 * Same business-operation id with a different intent or operation, or with params that differ where
 * the declaration compares them (exactly unless it says otherwise) while some attempt may have been
 * applied. Nothing was sent. `paths` lists where the params differ (never the values).
 */
export class ConflictError extends RetrysafeError {
  readonly [marker] = true;
  readonly businessOperationId: string;
  readonly field: 'intent' | 'params' | 'operation';
  /** Dot paths (`[i]` for array items) where the new params differ from the stored ones; empty when not known (intent/operation conflicts). */
  readonly paths: readonly string[];
  constructor(
    businessOperationId: string,
    field: 'intent' | 'params' | 'operation',
    detail: string,
    paths: readonly string[] = [],
  ) {
    const where = paths.length ? ` at ${paths.join(', ')}` : '';
    super(
      'RETRYSAFE_CONFLICT',
      `business operation ${businessOperationId} already exists with a different ${field}${where}: ${detail}; nothing was sent`,
    );
    this.businessOperationId = businessOperationId;
    this.field = field;
    this.paths = Object.freeze([...paths]);
  }
  static override isInstance = markerGuard<ConflictError>(marker);
}
