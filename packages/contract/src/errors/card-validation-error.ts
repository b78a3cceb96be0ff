import type { CardProblem } from '../card-validate.js';
import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.CardValidationError');

/** A retry safety card failed validation; `problems` lists every problem with its field path. */
export class CardValidationError extends RetrysafeError {
  readonly [marker] = true;
  readonly problems: readonly CardProblem[];
  constructor(operation: string, problems: readonly CardProblem[]) {
    super(
      'RETRYSAFE_INVALID_CARD',
      `invalid retry safety card for ${operation}: ${problems.length} problem(s): ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
    );
    this.problems = problems;
  }
  static override isInstance = markerGuard<CardValidationError>(marker);
}
