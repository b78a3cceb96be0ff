import { REPLAYING_BEHAVIOUR, type SandboxBehaviour } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { CONTROL_WORKFLOWS, crashPhase, expectOneRecordEach, LOOKUP_ONLY, PHASE_TIMEOUT_MS } from './crash-harness.js';

// Several OS processes run one DBOS application on one PostgreSQL; processes are SIGKILLed right after
// the sandbox committed a create and before its answer is written (the response is lost); DBOS recovers
// their workflows in other processes. Counted at the provider, per business operation.

/** Key-folding: the provider replays a re-send under the same Idempotency-Key (IETF / Stripe-like). */
const KEY_FOLDING: SandboxBehaviour = REPLAYING_BEHAVIOUR;
const WORKFLOWS = Number(process.env.RETRYSAFE_DBOS_CRASH_WORKFLOWS ?? 150);

describe('DBOS + retrysafe under real SIGKILLs: one effect per business operation', () => {
  for (const [label, card, behaviour, seed] of [
    ['fold', 'key-folding card', KEY_FOLDING, 21],
    ['look', 'lookup-only card (Graph-like)', LOOKUP_ONLY, 22],
  ] as const) {
    it(
      `${card}, ${WORKFLOWS} workflows, 3 processes: exactly one record each`,
      async () => {
        const r = await crashPhase({
          label,
          mode: 'retrysafe',
          behaviour,
          workflows: WORKFLOWS,
          processes: 3,
          kills: 6,
          seed,
        });
        expect(r.killed).toBeGreaterThanOrEqual(3);
        expect(r.recoveredElsewhere).toBeGreaterThan(0);
        expect(r.succeeded).toBe(WORKFLOWS);
        expectOneRecordEach(r, WORKFLOWS);
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
        const r = await crashPhase({
          label,
          mode: 'plain',
          behaviour,
          workflows: CONTROL_WORKFLOWS,
          processes: 3,
          kills: 4,
          seed,
        });
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
