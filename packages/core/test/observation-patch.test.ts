// observationPatch (src/decide.ts): what an observation means for the ledger state, one row per kind
// of observation, beside the decision table it feeds.

import type { LookupResult, Outcome } from '@retrysafe/contract';
import { FORGETFUL_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { type DecisionState, MAYBE_APPLIED_STATES, type Observation, observationPatch } from '../src/decide.js';
import { decisionState, T0 } from './helpers.js';

// The lookup proves absence 1 s after the last dispatch (late-apply bound 1s, consistency delay none).
const card = sandboxCreateCard({ ...FORGETFUL_BEHAVIOUR, lookup: 'get-by-key', lateApplyMs: 1000 });
const at = (over: Partial<DecisionState>) =>
  decisionState({ ledgerState: 'dispatched', now: T0 + 5000, observedAt: T0 + 5000, lastDispatchedAt: T0, ...over });

const unknown: Outcome = { kind: 'unknown', cause: 'timeout', message: 'timed out' };
const notApplied: Outcome = { kind: 'not-applied', message: 'refused' };
const inProgress: Outcome = { kind: 'in-progress', statusRef: '/jobs/1', providerRef: 'job_1' };
const foundInProgress: LookupResult = { kind: 'found', outcome: { kind: 'in-progress' } };
const notFound: LookupResult = { kind: 'not-found', reason: 'no such key' };
const cannotTell: LookupResult = { kind: 'cannot-tell', reason: 'lookup timed out' };
const succeeded: Outcome = { kind: 'succeeded', result: { id: 'r1' }, providerRef: 'r1' };
const rejected: Outcome = { kind: 'rejected', reason: 'validation', message: 'bad amount' };

// name, the state it was judged in, the observation, maybeApplied after it, the patch to write.
const rows: [string, Partial<DecisionState>, Exclude<Observation, null>, boolean, object | null][] = [
  ['unknown: may have been applied, stays unknown', {}, unknown, true, { state: 'unknown', lastOutcome: 'unknown' }],
  [
    'in-progress: its refs kept',
    {},
    inProgress,
    true,
    { state: 'in-progress', lastOutcome: 'in-progress', statusRef: '/jobs/1', providerRef: 'job_1' },
  ],
  [
    'found in progress: written as found, no refs invented',
    { ledgerState: 'reconciling' },
    foundInProgress,
    true,
    { state: 'in-progress', lastOutcome: 'found' },
  ],
  [
    'not applied, nothing earlier in doubt: back to claimed',
    { maybeApplied: false },
    notApplied,
    false,
    { state: 'claimed', lastOutcome: 'not-applied' },
  ],
  [
    'not applied after an earlier unknown: speaks for this attempt only, stays unknown',
    { maybeApplied: true },
    notApplied,
    true,
    { state: 'unknown', lastOutcome: 'not-applied' },
  ],
  [
    'authoritative not-found clears the doubt: claimed',
    { ledgerState: 'reconciling', maybeApplied: true },
    notFound,
    false,
    { state: 'claimed', lastOutcome: 'not-found' },
  ],
  [
    'not-found asked inside the late-apply bound proves nothing: stays unknown',
    { ledgerState: 'reconciling', maybeApplied: true, observedAt: T0 + 500 },
    notFound,
    true,
    { state: 'unknown', lastOutcome: 'not-found' },
  ],
  [
    'cannot tell while reconciling: reconciling',
    { ledgerState: 'reconciling', maybeApplied: true },
    cannotTell,
    true,
    { state: 'reconciling', lastOutcome: 'cannot-tell' },
  ],
  [
    'cannot tell while in progress: stays in progress',
    { ledgerState: 'in-progress', maybeApplied: true },
    cannotTell,
    true,
    { state: 'in-progress', lastOutcome: 'cannot-tell' },
  ],
  ['succeeded: nothing now, the terminal write follows', {}, succeeded, false, null],
  ['rejected: nothing now, the handoff follows', { maybeApplied: true }, rejected, true, null],
];

describe('observationPatch: what an observation means for the ledger state', () => {
  it.each(rows)('%s', (_name, state, obs, maybeApplied, patch) => {
    expect(observationPatch(card, at(state), obs)).toEqual({ maybeApplied, patch });
  });

  it('is pure: the state it was given is not changed', () => {
    const s = at({ maybeApplied: false });
    const copy = structuredClone(s);
    observationPatch(card, s, unknown);
    expect(s).toEqual(copy);
  });

  it('the maybe-applied states are those a dispatched attempt leaves before its outcome is known', () => {
    expect([...MAYBE_APPLIED_STATES].sort()).toEqual(['dispatched', 'in-progress', 'reconciling', 'unknown']);
  });
});
