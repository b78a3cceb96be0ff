// A machine that stalls for longer than the client's timeout fires that timeout ahead of the answer already on its
// way: the drill must not blame a correct adapter for it.

import type { AdapterV1 } from '@retrysafe/contract';
import { expect, it } from 'vitest';
import { runDrill } from '../src/conformance.js';
import { wrapAdapter } from '../src/wrap-adapter.js';
import { forgetful, sandboxDrill } from './fixtures/sandbox-drill.js';
import { tempDir } from './fixtures/temp-dir.js';

/** changed-intent of a correct adapter on a machine that blocks the process past the client's timeout, as the provider
 * answers, in the first `stalls` runs. */
async function drillStalling(stalls: number) {
  const base = sandboxDrill('stall', forgetful, { outDir: tempDir('drill-stall-'), timeoutMs: 400 });
  let armed = false;
  // Each run builds its adapter: the stall is armed at its first send only, so a run that sends again (a retry, the
  // changed call) never spends the next run's stall.
  const adapter = (inner: AdapterV1) => {
    let first = true;
    return wrapAdapter(inner, {
      doExecute(op, params, ctx) {
        if (first) armed = stalls-- > 0;
        first = false;
        return inner.doExecute(op, params, ctx);
      },
      doLookup: (op, ctx) => inner.doLookup(op, ctx),
    });
  };
  const stallOnce = () => {
    if (armed) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 800);
    armed = false;
  };
  const report = await runDrill({
    ...base,
    startSandbox: ({ clock }) => base.startSandbox({ clock: { ...clock, now: () => (stallOnce(), clock.now()) } }),
    createAdapter: async (ctx) => adapter(await base.createAdapter(ctx)),
    scenarios: ['changed-intent'],
  });
  return report.results[0]!;
}

it('a run failed by a stall of the process is run again, not charged to a correct adapter', async () => {
  const result = await drillStalling(1);
  expect(result.failures).toEqual([]);
  expect(result.status).toBe('passed');
  expect(result.notes.join('\n')).toMatch(/inconclusive: the process stalled \d+ ms .* ran it again/);
});

it('a second stalled run still fails, saying the machine stalled, with the failures it saw', async () => {
  const result = await drillStalling(2);
  expect(result.status).toBe('failed');
  expect(result.failures[0]).toMatch(/changed-intent: inconclusive: the process stalled \d+ ms in the second run too/);
  expect(result.failures.join('\n')).toMatch(/setup run should finish 'done' but was 'handed-off'/);
});
