// Crash drill: 200 seeded runs, each a real child process SIGKILLed at a named point, recovered by a
// fresh process; the sandbox (over loopback HTTP, in this process) counts records per key.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CRASH_POINTS, type CrashDrillOptions, runCrashDrill } from '../src/index.js';
import { replaying, startCrashDrillSandbox } from './fixtures/sandbox-drill.js';
import { tempDir } from './fixtures/temp-dir.js';

const adapterModule = fileURLToPath(new URL('./fixtures/crash-sandbox-adapter.mjs', import.meta.url));

function options(runs: number, seed: number, extra: Partial<CrashDrillOptions> = {}): CrashDrillOptions {
  return {
    runs,
    seed,
    adapterModule,
    // recover() drives the killed runs one after another, each after the card's backoff: a short one, a short wait.
    adapterOptions: { behaviour: replaying, limits: { base: '5ms' } },
    operation: 'records.create',
    params: (i) => ({ ref: `crash-${seed}-${i}` }),
    startSandbox: () => startCrashDrillSandbox(replaying),
    outFile: join(tempDir('crash-drill-'), 'report.json'),
    ...extra,
  };
}

describe('crash drill', () => {
  it('200 seeded runs against the sandbox: every kill point hit, 0 duplicates, 0 lost', {
    timeout: 300_000,
  }, async () => {
    const report = await runCrashDrill(options(200, 7, { perProcess: 20, batchSize: 100 }));
    console.log(
      `crash drill: ${report.runs} runs (seed ${report.seed}), ${report.killed} stopped at their point and SIGKILLed (${report.workersKilled} processes), ${report.duplicates} duplicates, ${report.lost} lost, ${report.providerRecords} records; by point ${JSON.stringify(report.byPoint)}; recover ${JSON.stringify(report.recoverActions)}; report ${report.outFile}`,
    );
    expect(report.problems).toEqual([]);
    expect(report.duplicates).toBe(0);
    expect(report.lost).toBe(0);
    expect(report.providerRecords).toBe(200);
    for (const p of CRASH_POINTS) {
      expect(report.byPoint[p].runs, p).toBeGreaterThan(0);
      // every run was a real process killed by SIGKILL at its point
      expect(report.byPoint[p].killed, p).toBe(report.byPoint[p].runs);
    }
    expect(
      report.results.every((r) => r.exit === 'SIGKILL' && r.finalStatus === 'done' && r.providerRecords === 1),
    ).toBe(true);
    expect(report.workersKilled).toBe(10); // 200 runs, 20 per process: 10 real processes killed
    // killed after the provider committed or after recording: recovery adopted, never re-created
    expect(report.results.filter((r) => r.point === 'after-result-recorded').every((r) => r.adopted)).toBe(true);
    expect(JSON.parse(readFileSync(report.outFile, 'utf8'))).toMatchObject({
      runs: 200,
      duplicates: 0,
      lost: 0,
      ok: true,
    });
  });

  it('removes its scratch dir when the report goes to outFile, and keeps it, report inside, when none is given', {
    timeout: 120_000,
  }, async () => {
    // The drill makes its scratch dir under os.tmpdir(): point that at a dir of this test's own for the run.
    const given = options(2, 5, { perProcess: 1 });
    const none = { ...options(2, 6, { perProcess: 1 }), outFile: undefined };
    const scratch = tempDir('crash-scratch-');
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = scratch;
    try {
      const a = await runCrashDrill(given);
      expect(a.ok).toBe(true);
      expect(existsSync(a.outFile)).toBe(true);
      expect(readdirSync(scratch)).toEqual([]);
      const b = await runCrashDrill(none);
      expect(b.ok).toBe(true);
      const left = readdirSync(scratch);
      expect(left).toHaveLength(1);
      expect(left[0]).toMatch(/^retrysafe-crash-/);
      expect(b.outFile).toBe(join(scratch, left[0]!, 'crash-report.json'));
      expect(JSON.parse(readFileSync(b.outFile, 'utf8'))).toMatchObject({ runs: 2, ok: true });
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  });

  it('the same seed draws the same kill points', { timeout: 120_000 }, async () => {
    const a = await runCrashDrill(options(8, 99, { perProcess: 1, batchSize: 4 }));
    const b = await runCrashDrill(options(8, 99, { perProcess: 4 }));
    expect(a.results.map((r) => r.point)).toEqual(b.results.map((r) => r.point));
    expect(a.ok && b.ok).toBe(true);
    // one process per run: every run is its own SIGKILLed process; two recovery batches
    expect(a.workersKilled).toBe(8);
    expect(a.recoveries).toBe(2);
    expect(b.workersKilled).toBe(2);
  });

  it('reports duplicates for a broken adapter (new provider key on every attempt)', { timeout: 120_000 }, async () => {
    const broken = fileURLToPath(new URL('./fixtures/crash-broken-adapter.mjs', import.meta.url));
    const report = await runCrashDrill(
      options(8, 3, { adapterModule: broken, points: ['after-provider-committed'], perProcess: 4 }),
    );
    expect(report.ok).toBe(false);
    expect(report.killed).toBe(8);
    // each run: the first request committed under one key, the recovery re-sent under another
    expect(report.duplicates).toBe(8);
    expect(report.providerRecords).toBe(16);
    expect(report.byPoint['after-provider-committed']).toMatchObject({ runs: 8, killed: 8, duplicates: 8, lost: 0 });
    expect(report.results.every((r) => r.duplicate && r.providerRecords === 2)).toBe(true);
    expect(report.problems).toContain('the sandbox holds 16 records for 8 business operations');
  });

  it('refuses bad options with clear errors', async () => {
    await expect(runCrashDrill(options(0, 1))).rejects.toThrow(/runs must be a positive integer/);
    await expect(runCrashDrill({ ...options(1, 1), adapterModule: 'relative.mjs' })).rejects.toThrow(/absolute path/);
    // Misnamed or not saved yet: every run would end lost in children that cannot load it.
    const missing = join(tempDir('crash-missing-'), 'adapter.mjs');
    await expect(runCrashDrill({ ...options(1, 1), adapterModule: missing })).rejects.toThrow(
      `adapterModule ${missing} does not exist`,
    );
    await expect(runCrashDrill({ ...options(1, 1), points: ['after-lunch' as never] })).rejects.toThrow(
      /unknown crash point 'after-lunch'/,
    );
  });

  it('refuses a batch size that is not a positive integer (0 or less never ends, NaN runs nothing)', {
    timeout: 10_000,
  }, async () => {
    for (const batchSize of [0, -1, Number.NaN, 1.5])
      await expect(runCrashDrill(options(1, 1, { batchSize })), String(batchSize)).rejects.toThrow(
        /batchSize must be a positive integer/,
      );
  });
});

describe('crash drill: a worker whose parent is gone', () => {
  it('a job stopped at its point exits once its channel to the parent closes, instead of waiting for ever for the kill', {
    timeout: 10_000,
  }, async () => {
    const job = { index: 0, point: 'after-claim', params: { ref: 'orphan' }, businessOperationId: 'crash-orphan-0' };
    const base = { adapterModule, adapterOptions: { behaviour: replaying }, operation: 'records.create' };
    const config = { ...base, baseUrl: 'http://127.0.0.1:9', leaseMs: 5000, timeoutMs: 1000, mode: 'run', jobs: [job] };
    const worker = fileURLToPath(new URL('../dist/crash-worker.js', import.meta.url));
    const ledgerPath = join(tempDir('crash-orphan-'), 'ledger.db');
    const env = { ...process.env, RETRYSAFE_CRASH_WORKER: JSON.stringify({ ...config, ledgerPath }) };
    const child = fork(worker, [], { env, stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'json' });
    try {
      const exited = once(child, 'exit');
      expect((await once(child, 'message'))[0]).toMatchObject({ type: 'at', point: 'after-claim' });
      child.disconnect();
      await exited;
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('crash drill: a sandbox that cannot count one run', () => {
  it('is refused before any run: a duplicate in one run and a loss in another would cancel out in the total', {
    timeout: 10_000,
  }, async () => {
    let closed = false;
    const startSandbox = async () => {
      const { countFor: _countFor, ...rest } = await startCrashDrillSandbox(replaying);
      return {
        ...rest,
        close: async () => {
          closed = true;
          await rest.close();
        },
      };
    };
    await expect(runCrashDrill(options(2, 3, { startSandbox } as Partial<CrashDrillOptions>))).rejects.toThrow(
      /countFor/,
    );
    expect(closed).toBe(true);
  });
});

// The crash drill on the embedded ledger (node:sqlite), with more runs than the quick cases above.
describe('crash drill on the SQLite ledger', () => {
  it('40 seeded runs, 0 duplicates, 0 lost', { timeout: 120_000 }, async () => {
    const report = await runCrashDrill(options(40, 11, { perProcess: 10, batchSize: 20 }));
    expect(report.problems).toEqual([]);
    expect(report.duplicates).toBe(0);
    expect(report.lost).toBe(0);
    expect(report.providerRecords).toBe(40);
    expect(report.killed).toBeGreaterThan(0);
  });
});
