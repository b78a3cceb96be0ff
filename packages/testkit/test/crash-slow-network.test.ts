// The crash drill's slow-network mode — a share of first requests held
// past the client timeout and the lease, applied by the provider late — on a key-folding provider and on
// the negative control (a lookup without key folding, whose card bounds no late apply).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSandboxAdapter, type SandboxBehaviour } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { type CrashDrillOptions, runCrashDrill } from '../src/index.js';
import { replaying, startCrashDrillSandbox } from './fixtures/sandbox-drill.js';
import { tempDir } from './fixtures/temp-dir.js';

const adapterModule = fileURLToPath(new URL('./fixtures/crash-sandbox-adapter.mjs', import.meta.url));
const lookupNoFolding: SandboxBehaviour = {
  replays: false,
  retentionMs: null,
  parameterMatching: 'none',
  concurrency: 'duplicates',
  lookup: 'get-by-key',
};

function options(behaviour: SandboxBehaviour, runs: number, seed: number): CrashDrillOptions {
  return {
    runs,
    seed,
    adapterModule,
    adapterOptions: { behaviour },
    operation: 'records.create',
    params: (i) => ({ ref: `slow-${seed}-${i}` }),
    startSandbox: () => startCrashDrillSandbox(behaviour),
    perProcess: 8,
    batchSize: 16,
    timeoutMs: 500,
    // Held past the client timeout and this lease (holdMs defaults to both and a margin): a short lease, a short hold.
    leaseMs: 2_000,
    slowNetwork: { share: 0.5 },
    outFile: join(tempDir('crash-slow-'), 'report.json'),
  };
}

// The two drills have their own sandbox, proxy, ledgers and processes, and mostly wait for held requests to land:
// they run side by side.
describe.concurrent('crash drill, slow-network mode', () => {
  it('a key-folding provider: 0 duplicates, 0 lost, with half the first requests applied late', {
    timeout: 180_000,
  }, async () => {
    const report = await runCrashDrill(options(replaying, 32, 11));
    console.log(
      `slow-network crash drill (replaying): ${report.runs} runs, ${report.slowNetwork?.held} first requests held ${report.slowNetwork?.holdMs} ms, ${report.killed} killed, ${report.duplicates} duplicates, ${report.lost} lost; recover ${JSON.stringify(report.recoverActions)}`,
    );
    expect(report.slowNetwork?.held).toBeGreaterThan(0);
    expect(report.problems).toEqual([]);
    expect(report.duplicates).toBe(0);
    expect(report.lost).toBe(0);
    expect(report.providerRecords).toBe(32);
  });

  it('negative control: a lookup without key folding — duplicates while decide trusts an early not-found (main), none with the late-apply row', {
    timeout: 180_000,
  }, async () => {
    const report = await runCrashDrill({
      ...options(lookupNoFolding, 32, 11),
      points: ['after-provider-committed', 'after-result-recorded'],
    });
    const card = createSandboxAdapter({
      baseUrl: 'http://127.0.0.1:9',
      behaviour: lookupNoFolding,
      intentFields: ['ref'],
    }).operations['records.create']!.card;
    const declaresBound = 'lateApplyBound' in (card.lookup as object);
    console.log(
      `slow-network crash drill (lookup, no folding; card bound declared: ${declaresBound}): ${report.runs} runs, ${report.slowNetwork?.held} held, ${report.duplicates} duplicates, ${report.lost} lost`,
    );
    expect(report.slowNetwork?.held).toBeGreaterThan(0);
    if (declaresBound) expect(report.duplicates).toBe(0);
    else expect(report.duplicates).toBeGreaterThan(0);
  });
});
