import type { LookupResult, Outcome } from '../outcome.js';

/**
 * What an outcome seen while reconciling (a status poll, a same-key re-send used as a lookup) says as a
 * lookup result: a stored success, a replay, work in progress or a persisted rejection is `found`;
 * not-applied and unknown answers prove nothing about an earlier attempt, so they are `cannot-tell`
 * (never `not-found`: absence is decided by the runner from the card, not by an adapter).
 */
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
