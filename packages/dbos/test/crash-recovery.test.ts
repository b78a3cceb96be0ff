import { FORGETFUL_BEHAVIOUR, REPLAYING_BEHAVIOUR, type SandboxBehaviour } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { type CrashPhaseReport, runCrashPhase } from './crash-harness.js';

// Several OS processes run one DBOS application on one PostgreSQL; processes are SIGKILLed right after
// the sandbox committed a create and before its answer is written (the response is lost); DBOS recovers
// their workflows in other processes. Counted at the provider, per business operation.

/** Key-folding: the provider replays a re-send under the same Idempotency-Key (IETF / Stripe-like). */
const KEY_FOLDING: SandboxBehaviour = REPLAYING_BEHAVIOUR;
/** Lookup-only (Graph sendMail-like): every POST is a new record; a lookup by the key we stamped finds it. */
// The loopback sandbox applies a request as it arrives: a request in flight when its worker is killed lands
// within a second, so that is the card's late-apply bound (unknown, a lookup miss would never prove absence).
const LOOKUP_ONLY: SandboxBehaviour = Object.freeze({
  ...FORGETFUL_BEHAVIOUR,
  lookup: 'get-by-key',
  lateApplyMs: 1000,
});

const WORKFLOWS = Number(process.env.RETRYSAFE_DBOS_CRASH_WORKFLOWS ?? 150);
const CONTROL_WORKFLOWS = 40;
// Alone on 2 cores a phase takes 4–14 s; under a full parallel test run, up to ~30 s was seen.
const PHASE_TIMEOUT_MS = 90_000;
const reports: CrashPhaseReport[] = [];
const show = (r: CrashPhaseReport) => {
  reports.push(r);
  console.log(`[dbos crash] ${JSON.stringify(r)}`);
};

describe('DBOS + retrysafe under real SIGKILLs: one effect per business operation', () => {
  for (const [label, card, behaviour, seed] of [
    ['fold', 'key-folding card', KEY_FOLDING, 21],
    ['look', 'lookup-only card (Graph-like)', LOOKUP_ONLY, 22],
  ] as const) {
    it(
      `${card}, ${WORKFLOWS} workflows, 3 processes: exactly one record each`,
      async () => {
        const r = await runCrashPhase({
          label,
          mode: 'retrysafe',
          behaviour,
          workflows: WORKFLOWS,
          processes: 3,
          kills: 6,
          seed,
          deadlineMs: PHASE_TIMEOUT_MS - 5_000,
        });
        show(r);
        expect(r.killed).toBeGreaterThanOrEqual(3);
        expect(r.recoveredElsewhere).toBeGreaterThan(0);
        expect(r.succeeded).toBe(WORKFLOWS);
        expect({ duplicated: r.duplicatedOperations, missing: r.missing, records: r.providerRecords }).toEqual({
          duplicated: 0,
          missing: 0,
          records: WORKFLOWS,
        });
      },
      PHASE_TIMEOUT_MS,
    );
  }

  // The same crashes without retrysafe: a plain DBOS step POSTs the request (no key: a Graph sendMail has
  // none, and a plain step has no business id to derive one from). If these found no duplicates, the
  // harness would not be able to see any, and the two tests above would prove nothing.
  for (const [label, behaviour, seed] of [
    ['plain-look', LOOKUP_ONLY, 23],
    ['plain-fold', KEY_FOLDING, 24],
  ] as const) {
    it(
      `negative control (${label}): a plain DBOS step on the same sandbox duplicates the killed calls`,
      async () => {
        const r = await runCrashPhase({
          label,
          mode: 'plain',
          behaviour,
          workflows: CONTROL_WORKFLOWS,
          processes: 3,
          kills: 4,
          seed,
          deadlineMs: PHASE_TIMEOUT_MS - 5_000,
        });
        show(r);
        expect(r.killed).toBeGreaterThanOrEqual(3);
        expect(r.succeeded).toBe(CONTROL_WORKFLOWS);
        expect(r.missing).toBe(0);
        // Every kill landed after a commit whose answer was lost: DBOS re-executed that step elsewhere.
        expect(r.duplicatedOperations).toBeGreaterThanOrEqual(r.killed);
        expect(r.providerRecords).toBeGreaterThan(CONTROL_WORKFLOWS);
      },
      PHASE_TIMEOUT_MS,
    );
  }
});
