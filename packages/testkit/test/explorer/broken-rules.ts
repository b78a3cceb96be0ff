import type { DecisionState } from '@retrysafe/core';
import { decide } from '@retrysafe/core/internal';
import { sandboxCreateCard } from '@retrysafe/sandbox';
import type { DecideFn } from '@retrysafe/testkit/explorer';

/** A provider with a lookup and no key folding: the sandbox-forgetful flow with a get-by-key lookup. */
export const lookupOnly = sandboxCreateCard({
  replays: false,
  retentionMs: null,
  parameterMatching: 'none',
  concurrency: 'duplicates',
  lookup: 'get-by-key',
});

/** A deliberately broken rule: every lookup "not found" is trusted, whenever it was asked. */
export const trustsEveryNotFound: DecideFn = (card, state: DecisionState, obs, budget) =>
  obs !== null && obs.kind === 'not-found'
    ? { action: 'send', delayMs: 0, why: 'BROKEN: trusts every not-found' }
    : decide(card, state, obs, budget);
