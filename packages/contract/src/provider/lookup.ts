import type { LookupResult, Outcome } from '../outcome.js';

/** An outcome seen while reconciling, as a lookup result: never `not-found` (the runner decides absence from the card). */
export function lookupFromOutcome(outcome: Outcome, how: string): LookupResult {
  switch (outcome.kind) {
    case 'succeeded':
    case 'replayed':
    case 'in-progress':
    case 'rejected':
      return { kind: 'found', outcome };
    case 'not-applied':
    case 'unknown': {
      const refs = {
        ...(outcome.status !== undefined ? { status: outcome.status } : {}),
        ...(outcome.code !== undefined ? { code: outcome.code } : {}),
        ...(outcome.requestId !== undefined ? { requestId: outcome.requestId } : {}),
        ...(outcome.retryAfterMs !== undefined ? { retryAfterMs: outcome.retryAfterMs } : {}),
      };
      return { kind: 'cannot-tell', reason: `${how}: ${outcome.message}`, ...refs };
    }
  }
}
