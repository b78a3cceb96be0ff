// observationPatch (src/decide.ts): what an observation means for the ledger state, one row per kind
// of observation, beside the decision table it feeds.

import type { LookupResult, Outcome } from '@retrysafe/contract';
import { FORGETFUL_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { type DecisionState, MAYBE_APPLIED_STATES, type Observation, observationPatch } from '../src/decide.js';

const T0 = Date.UTC(2026, 0, 1);
// The lookup proves absence 1 s after the last dispatch (late-apply bound 1s, consistency delay none).
const card = sandboxCreateCard({ ...FORGETFUL_BEHAVIOUR, lookup: 'get-by-key', lateApplyMs: 1000 });
const at = (over: Partial<DecisionState>): DecisionState => ({
  ledgerState: 'dispatched',
  now: T0 + 5000,
  observedAt: T0 + 5000,
  firstDispatchedAt: T0,
  lastDispatchedAt: T0,
  runAttempts: 1,
  runStartedAt: T0,
  windowStartedAt: null,
  polls: 0,
  ...over,
});

const unknown: Outcome = { kind: 'unknown', cause: 'timeout', message: 'timed out' };
const notApplied: Outcome = { kind: 'not-applied', message: 'refused' };
const inProgress: Outcome = { kind: 'in-progress', statusRef: '/jobs/1', providerRef: 'job_1' };
const foundInProgress: LookupResult = { kind: 'found', outcome: { kind: 'in-progress' } };
const notFound: LookupResult = { kind: 'not-found', reason: 'no such key' };
const cannotTell: LookupResult = { kind: 'cannot-tell', reason: 'lookup timed out' };
const succeeded: Outcome = { kind: 'succeeded', result: { id: 'r1' }, providerRef: 'r1' };
const rejected: Outcome = { kind: 'rejected', reason: 'validation', message: 'bad amount' };

const rows: {
  name: string;
  state: Partial<DecisionState>;
  obs: Exclude<Observation, null>;
  maybeApplied: boolean;
  patch: object | null;
}[] = [
  {
    name: 'unknown: may have been applied, stays unknown',
    state: {},
    obs: unknown,
    maybeApplied: true,
    patch: { state: 'unknown', lastOutcome: 'unknown' },
  },
  {
    name: 'in-progress: its refs kept',
    state: {},
    obs: inProgress,
    maybeApplied: true,
    patch: { state: 'in-progress', lastOutcome: 'in-progress', statusRef: '/jobs/1', providerRef: 'job_1' },
  },
  {
    name: 'found in progress: written as found, no refs invented',
    state: { ledgerState: 'reconciling' },
    obs: foundInProgress,
    maybeApplied: true,
    patch: { state: 'in-progress', lastOutcome: 'found' },
  },
  {
    name: 'not applied, nothing earlier in doubt: back to claimed',
    state: { maybeApplied: false },
    obs: notApplied,
    maybeApplied: false,
    patch: { state: 'claimed', lastOutcome: 'not-applied' },
  },
  {
    name: 'not applied after an earlier unknown: speaks for this attempt only, stays unknown',
    state: { maybeApplied: true },
    obs: notApplied,
    maybeApplied: true,
    patch: { state: 'unknown', lastOutcome: 'not-applied' },
  },
  {
    name: 'authoritative not-found clears the doubt: claimed',
    state: { ledgerState: 'reconciling', maybeApplied: true },
    obs: notFound,
    maybeApplied: false,
    patch: { state: 'claimed', lastOutcome: 'not-found' },
  },
  {
    name: 'not-found asked inside the late-apply bound proves nothing: stays unknown',
    state: { ledgerState: 'reconciling', maybeApplied: true, observedAt: T0 + 500 },
    obs: notFound,
    maybeApplied: true,
    patch: { state: 'unknown', lastOutcome: 'not-found' },
  },
  {
    name: 'cannot tell while reconciling: reconciling',
    state: { ledgerState: 'reconciling', maybeApplied: true },
    obs: cannotTell,
    maybeApplied: true,
    patch: { state: 'reconciling', lastOutcome: 'cannot-tell' },
  },
  {
    name: 'cannot tell while in progress: stays in progress',
    state: { ledgerState: 'in-progress', maybeApplied: true },
    obs: cannotTell,
    maybeApplied: true,
    patch: { state: 'in-progress', lastOutcome: 'cannot-tell' },
  },
  {
    name: 'succeeded: nothing now, the terminal write follows',
    state: {},
    obs: succeeded,
    maybeApplied: false,
    patch: null,
  },
  {
    name: 'rejected: nothing now, the handoff follows',
    state: { maybeApplied: true },
    obs: rejected,
    maybeApplied: true,
    patch: null,
  },
];

describe('observationPatch: what an observation means for the ledger state', () => {
  for (const row of rows) {
    it(row.name, () => {
      expect(observationPatch(card, at(row.state), row.obs, 0)).toEqual({
        maybeApplied: row.maybeApplied,
        patch: row.patch,
      });
    });
  }

  it('is pure: the state it was given is not changed', () => {
    const s = at({ maybeApplied: false });
    const copy = structuredClone(s);
    observationPatch(card, s, unknown, 0);
    expect(s).toEqual(copy);
  });

  it('the maybe-applied states are those a dispatched attempt leaves before its outcome is known', () => {
    expect([...MAYBE_APPLIED_STATES].sort()).toEqual(['dispatched', 'in-progress', 'reconciling', 'unknown']);
  });
});
