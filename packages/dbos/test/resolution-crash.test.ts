import type { DbosResolutionMessage } from '@retrysafe/dbos';
import { REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { LOOKUP_ONLY } from './crash-harness.js';
import { type KillPoint, resolutionDrill } from './resolution-drill.js';

// A handed-off operation waits in awaitResolution for a person; the worker process is SIGKILLed at each point of
// the wait and of acting on the decision, and DBOS recovers the workflow in a new process. What testers must never
// find: a second provider effect, a lost effect, a stuck ledger row, a decision lost or applied twice.
// Each case has its own schemas, sandbox and worker processes, and mostly waits on them: they run side by side.

const RESUME: DbosResolutionMessage = { action: 'resume', force: true, by: 'alice' }; // a rejected packet: forced
const TIMEOUT_MS = 90_000;

describe.concurrent('DBOS awaitResolution under real SIGKILLs: the decision applied once, one effect, the row at rest', () => {
  // On a key-folding card too: the resume taken over after the crash re-sends under the same key, and the provider
  // folds it.
  it.each([
    ...(['waiting', 'decided', 'claimed', 'sent', 'recorded', 'ending'] as const).map(
      (k) => [k, 'lookup-only', LOOKUP_ONLY] as const,
    ),
    ...(['claimed', 'sent'] as const).map((k) => [k, 'key-folding', REPLAYING_BEHAVIOUR] as const),
  ])(
    'resume, killed %s, %s card: one record at the provider, one resolve receipt, succeeded, workflow done',
    async (killAt: KillPoint, _card, behaviour) => {
      const r = await resolutionDrill({ killAt, decision: RESUME, behaviour });
      expect({ killed: r.killed, status: r.workflowStatus, answer: r.answer }).toEqual({
        killed: 1,
        status: 'SUCCESS',
        answer: 'applied',
      });
      expect(r.processes).toBe(2); // recovered by DBOS in the replacement process
      expect(r.output).toMatchObject({ status: 'done' });
      expect({ records: r.records, row: r.rowState, lease: r.leaseOwner, decisions: r.resolveReceipts }).toEqual({
        records: 1,
        row: 'succeeded',
        lease: null,
        decisions: 1,
      });
    },
    TIMEOUT_MS,
  );

  it.each([
    ['waiting', { action: 'abandon', by: 'bob' }, 'abandoned'],
    ['decided', { action: 'abandon', by: 'bob' }, 'abandoned'],
    ['decided', { action: 'mark-done', providerRef: 'rec_checked_by_hand', by: 'carol' }, 'succeeded'],
    ['recorded', { action: 'abandon', by: 'bob' }, 'abandoned'],
    ['recorded', { action: 'mark-done', providerRef: 'rec_checked_by_hand', by: 'carol' }, 'succeeded'],
  ] as const)(
    'killed %s, %o: closed once, nothing sent, workflow resolved',
    async (killAt, decision, state) => {
      const r = await resolutionDrill({ killAt, decision, behaviour: LOOKUP_ONLY });
      expect({ killed: r.killed, status: r.workflowStatus, processes: r.processes, answer: r.answer }).toEqual({
        killed: 1,
        status: 'SUCCESS',
        processes: 2,
        answer: 'applied',
      });
      expect(r.output).toMatchObject({ status: 'resolved', state });
      expect({ records: r.records, calls: r.calls, row: r.rowState, lease: r.leaseOwner }).toEqual({
        records: 0,
        calls: 1,
        row: state,
        lease: null,
      });
      expect(r.resolveReceipts).toBe(1);
    },
    TIMEOUT_MS,
  );
});
