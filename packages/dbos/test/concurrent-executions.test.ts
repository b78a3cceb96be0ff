import { describe, expect, it } from 'vitest';
import { CONTROL_WORKFLOWS, crashPhase, expectOneRecordEach, LOOKUP_ONLY, PHASE_TIMEOUT_MS } from './crash-harness.js';

// An executor wrongly taken for dead: a second process starts under a LIVE process's executor id while
// that process waits for a provider answer, so DBOS runs the same pending workflows in two processes at
// once. retrysafe's lease keeps it to one provider call; a plain step sends twice.
describe('DBOS concurrent executions (an executor recovered while still alive)', () => {
  it(
    'retrysafe, lookup-only card: the twin execution waits for the live one and adopts; one record each',
    async () => {
      const r = await crashPhase({
        label: 'twin',
        mode: 'retrysafe',
        behaviour: LOOKUP_ONLY,
        workflows: CONTROL_WORKFLOWS,
        processes: 2,
        kills: 2,
        fault: 'zombie',
        seed: 25,
      });
      expect(r.zombies).toBe(2);
      expect(r.reexecuted).toBeGreaterThan(0);
      expect(r.succeeded).toBe(CONTROL_WORKFLOWS);
      expectOneRecordEach(r, CONTROL_WORKFLOWS);
    },
    PHASE_TIMEOUT_MS,
  );

  it(
    'negative control: a plain DBOS step sends again from the twin',
    async () => {
      const r = await crashPhase({
        label: 'twin-plain',
        mode: 'plain',
        behaviour: LOOKUP_ONLY,
        workflows: CONTROL_WORKFLOWS,
        processes: 2,
        kills: 2,
        fault: 'zombie',
        seed: 26,
      });
      // Plain steps finish fast: the phase can end before the second twin starts. One twin is enough to show
      // the harness sees the duplicates a plain step makes.
      expect(r.zombies).toBeGreaterThanOrEqual(1);
      expect(r.succeeded).toBe(CONTROL_WORKFLOWS);
      expect(r.duplicatedOperations).toBeGreaterThan(0);
    },
    PHASE_TIMEOUT_MS,
  );
});
