import { FORGETFUL_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { type CrashPhaseReport, runCrashPhase } from './crash-harness.js';

// Lookup-only (Graph sendMail-like): every POST is a new record; a lookup by the key we stamped finds it.
// The loopback sandbox applies a request as it arrives: a request in flight when its worker is killed lands
// within a second, so that is the card's late-apply bound (unknown, a lookup miss would never prove absence).
const LOOKUP_ONLY = Object.freeze({ ...FORGETFUL_BEHAVIOUR, lookup: 'get-by-key', lateApplyMs: 1000 } as const);
const CONTROL_WORKFLOWS = 40;
const PHASE_TIMEOUT_MS = 90_000;
const show = (r: CrashPhaseReport) => console.log(`[dbos crash] ${JSON.stringify(r)}`);

// An executor wrongly taken for dead: a second process starts under a LIVE process's executor id while
// that process waits for a provider answer, so DBOS runs the same pending workflows in two processes at
// once. retrysafe's lease keeps it to one provider call; a plain step sends twice.
describe('DBOS concurrent executions (an executor recovered while still alive)', () => {
  it(
    'retrysafe, lookup-only card: the twin execution waits for the live one and adopts; one record each',
    async () => {
      const r = await runCrashPhase({
        label: 'twin',
        mode: 'retrysafe',
        behaviour: LOOKUP_ONLY,
        workflows: CONTROL_WORKFLOWS,
        processes: 2,
        kills: 2,
        fault: 'zombie',
        seed: 25,
        deadlineMs: PHASE_TIMEOUT_MS - 5_000,
      });
      show(r);
      expect(r.zombies).toBe(2);
      expect(r.reexecuted).toBeGreaterThan(0);
      expect(r.succeeded).toBe(CONTROL_WORKFLOWS);
      expect({ duplicated: r.duplicatedOperations, missing: r.missing, records: r.providerRecords }).toEqual({
        duplicated: 0,
        missing: 0,
        records: CONTROL_WORKFLOWS,
      });
    },
    PHASE_TIMEOUT_MS,
  );

  it(
    'negative control: a plain DBOS step sends again from the twin',
    async () => {
      const r = await runCrashPhase({
        label: 'twin-plain',
        mode: 'plain',
        behaviour: LOOKUP_ONLY,
        workflows: CONTROL_WORKFLOWS,
        processes: 2,
        kills: 2,
        fault: 'zombie',
        seed: 26,
        deadlineMs: PHASE_TIMEOUT_MS - 5_000,
      });
      show(r);
      // Plain steps finish fast: the phase can end before the second twin starts. One twin is enough to show
      // the harness sees the duplicates a plain step makes.
      expect(r.zombies).toBeGreaterThanOrEqual(1);
      expect(r.succeeded).toBe(CONTROL_WORKFLOWS);
      expect(r.duplicatedOperations).toBeGreaterThan(0);
    },
    PHASE_TIMEOUT_MS,
  );
});
