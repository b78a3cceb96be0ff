import { type ChildProcess, fork } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CRASH_POINTS, type CrashPoint, type CrashWorkerConfig, type CrashWorkerMessage } from './crash-types.js';
import { seededRandom } from './drill-clock.js';
import type { DrillPolicy } from './drill-types.js';
import { startFaultProxy } from './fault-proxy.js';

export type { CrashPoint } from './crash-types.js';
export { CRASH_POINTS } from './crash-types.js';

export interface CrashDrillSandbox {
  readonly url: string;
  /** Records the provider holds for the operation. */
  count(operation: string): number | Promise<number>;
  /**
   * Records the provider holds for one run's business operation (match by request params or by key,
   * whichever the provider can see): lets the drill name each duplicate and each loss. Count by params
   * when you can: a duplicate made under another key is invisible to a per-key count.
   */
  countFor?(run: { readonly providerKey: string | null; readonly params: unknown }): number | Promise<number>;
  close(): void | Promise<void>;
}

export interface CrashDrillOptions {
  /** How many seeded runs (each one real process killed with SIGKILL, or finishing if its point is never reached). */
  readonly runs: number;
  readonly seed?: number;
  /** Kill points to draw from (default all four). */
  readonly points?: readonly CrashPoint[];
  /** Absolute path of an ESM module exporting `createAdapter({ baseUrl, timeoutMs, options })`; it runs in the child. */
  readonly adapterModule: string;
  /** JSON-serialisable options handed to that `createAdapter`. */
  readonly adapterOptions?: unknown;
  /** The adapter's operation name. */
  readonly operation: string;
  /** Params of run i (each run is a distinct business operation). */
  params(i: number): unknown;
  startSandbox(): Promise<CrashDrillSandbox>;
  /** Runs killed before one recovery process takes over the batch (default 50). */
  readonly batchSize?: number;
  /** Runs (distinct business operations) executed concurrently in one worker process, which is SIGKILLed once each has stopped at its own point (default 10; 1 = one process per run). */
  readonly perProcess?: number;
  /** Worker processes alive at once (default 2). */
  readonly parallel?: number;
  /** Lease of the killed workers; the recovering process's clock runs this far ahead (default 5000). */
  readonly leaseMs?: number;
  readonly timeoutMs?: number;
  readonly policy?: DrillPolicy;
  /** Where the report goes (JSON); default a temp dir. */
  readonly outFile?: string;
  /**
   * Slow network: a loopback fault proxy sits between the workers and the sandbox and holds a seeded
   * `share` (0–1) of the business operations' first create requests past the client timeout and the
   * lease (`holdMs`, default lease + timeout + 500 ms); the provider applies each one late, before the
   * first later request that arrives once it is due, or when the drill ends. A "not found" asked in the
   * meantime must not lead to a second record.
   */
  readonly slowNetwork?: { readonly share: number; readonly holdMs?: number };
}

export interface CrashRunResult {
  readonly index: number;
  readonly point: CrashPoint;
  /** True when the run stopped at its point and its process was then SIGKILLed. */
  readonly killed: boolean;
  /** How the worker exited: `SIGKILL`, or `exit 0` when it finished before the point. */
  readonly exit: string;
  readonly businessOperationId: string | null;
  readonly finalStatus: string | null;
  readonly adopted: boolean;
  readonly providerRecords: number | null;
  readonly duplicate: boolean;
  readonly lost: boolean;
}

export interface CrashDrillReport {
  readonly ok: boolean;
  readonly runs: number;
  readonly seed: number;
  /** Runs that stopped at their point inside a process that was then SIGKILLed. */
  readonly killed: number;
  /** Worker processes SIGKILLed. */
  readonly workersKilled: number;
  readonly duplicates: number;
  readonly lost: number;
  readonly byPoint: Readonly<
    Record<
      CrashPoint,
      { readonly runs: number; readonly killed: number; readonly duplicates: number; readonly lost: number }
    >
  >;
  /** Records the sandbox holds for the operation at the end (expected: `runs`). */
  readonly providerRecords: number;
  readonly recoveries: number;
  readonly recoverActions: Readonly<Record<string, number>>;
  /** Wall time spent in the killed workers and in the recovery processes (informational; no assertion). */
  readonly timings: { readonly workersMs: number; readonly recoveryMs: number };
  readonly problems: readonly string[];
  readonly results: readonly CrashRunResult[];
  readonly outFile: string;
  /** Slow-network mode: first requests held and applied late. */
  readonly slowNetwork?: { readonly share: number; readonly holdMs: number; readonly held: number };
}

function workerPath(): string {
  const here = fileURLToPath(import.meta.url);
  // Built: dist/crash-drill.js beside dist/crash-worker.js. From source (vitest): the built worker.
  const sibling = join(dirname(here), 'crash-worker.js');
  if (here.endsWith('.js') && existsSync(sibling)) return sibling;
  const built = join(dirname(here), '..', 'dist', 'crash-worker.js');
  if (existsSync(built)) return built;
  throw new Error(`crash drill: the worker script is not built (${built}); run tsc -b packages/testkit`);
}

interface Spawned {
  readonly messages: CrashWorkerMessage[];
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly child: ChildProcess;
  stderr: string;
}

function spawnWorker(
  config: CrashWorkerConfig,
  onMessage: (m: CrashWorkerMessage, child: ChildProcess) => void,
): Spawned {
  const child = fork(workerPath(), [], {
    env: { ...process.env, RETRYSAFE_CRASH_WORKER: JSON.stringify(config) },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    serialization: 'json',
  });
  const s: Spawned = {
    messages: [],
    child,
    stderr: '',
    exit: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  child.stderr?.on('data', (d: Buffer) => {
    if (s.stderr.length < 4000) s.stderr += d.toString('utf8');
  });
  child.on('message', (m) => {
    s.messages.push(m as CrashWorkerMessage);
    onMessage(m as CrashWorkerMessage, child);
  });
  return s;
}

async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
    }
  });
  await Promise.all(workers);
}

type PlannedRun = {
  readonly index: number;
  readonly point: CrashPoint;
  readonly params: unknown;
  readonly businessOperationId: string;
};
type RunEnd = { killed: boolean; exit: string; businessOperationId: string | null };

/**
 * One worker process runs the group's jobs concurrently; once every job has stopped at its own point
 * (or finished), the process is SIGKILLed. Records each job's end in `runs`; true when the kill landed.
 */
async function runGroupToItsPoints(
  base: Omit<CrashWorkerConfig, 'mode' | 'jobs'>,
  group: readonly PlannedRun[],
  runs: Map<number, RunEnd>,
  problems: string[],
): Promise<boolean> {
  const reached = new Map<number, string>();
  const finished = new Set<number>();
  let killed = false;
  const w = spawnWorker(
    {
      ...base,
      mode: 'run',
      jobs: group.map((j) => ({
        index: j.index,
        params: j.params,
        businessOperationId: j.businessOperationId,
        point: j.point,
      })),
    },
    (m, child) => {
      if (m.type === 'at') reached.set(m.index, m.point);
      if (m.type === 'finished') finished.add(m.index);
      if (!killed && reached.size + finished.size === group.length && reached.size > 0) killed = child.kill('SIGKILL');
    },
  );
  const exit = await w.exit;
  const err = w.messages.find((m): m is Extract<CrashWorkerMessage, { type: 'error' }> => m.type === 'error');
  if (err) problems.push(`worker for runs ${group[0]!.index}–${group.at(-1)!.index}: ${err.message.split('\n')[0]}`);
  if (killed && exit.signal !== 'SIGKILL')
    problems.push(
      `worker for runs ${group[0]!.index}–${group.at(-1)!.index}: expected SIGKILL, got ${exit.signal ?? `exit ${exit.code}`}`,
    );
  if (!killed && exit.code !== 0)
    problems.push(
      `worker for runs ${group[0]!.index}–${group.at(-1)!.index} exited ${exit.signal ?? exit.code}: ${w.stderr.split('\n')[0] ?? ''}`,
    );
  for (const job of group) {
    const at = reached.get(job.index);
    if (at !== undefined && at !== job.point) problems.push(`run ${job.index}: stopped at ${at}, planned ${job.point}`);
    if (at === undefined)
      problems.push(
        `run ${job.index}: never reached ${job.point}${finished.has(job.index) ? ' (finished first)' : ''}`,
      );
    runs.set(job.index, {
      killed: at === job.point && exit.signal === 'SIGKILL',
      exit: exit.signal ?? `exit ${exit.code}`,
      businessOperationId: job.businessOperationId,
    });
  }
  return killed && exit.signal === 'SIGKILL';
}

/**
 * The crash drill: each run executes the operation in a child process, which is SIGKILLed at a
 * seeded, named point (after claim, after dispatched, after the provider committed, after the result
 * is recorded). After each batch, a fresh process recovers the ledger and re-runs every job as its
 * caller would. Reports duplicates (more than one provider record for one business operation) and
 * losses (no record, or not done after recovery).
 */
export async function runCrashDrill(options: CrashDrillOptions): Promise<CrashDrillReport> {
  if (!Number.isInteger(options.runs) || options.runs <= 0) throw new TypeError('runs must be a positive integer');
  if (typeof options.adapterModule !== 'string' || !isAbsolute(options.adapterModule))
    throw new TypeError('adapterModule must be an absolute path to an ESM module exporting createAdapter');
  const points = options.points ?? CRASH_POINTS;
  for (const p of points)
    if (!CRASH_POINTS.includes(p))
      throw new TypeError(`unknown crash point '${String(p)}'; known: ${CRASH_POINTS.join(', ')}`);
  const seed = options.seed ?? 1;
  const random = seededRandom(seed);
  const leaseMs = options.leaseMs ?? 5_000;
  const batchSize = options.batchSize ?? 50;
  const timeoutMs = options.timeoutMs ?? 5_000;
  if (options.outFile !== undefined) mkdirSync(dirname(options.outFile), { recursive: true });
  const perProcess = options.perProcess ?? 10;
  if (!Number.isInteger(perProcess) || perProcess <= 0) throw new TypeError('perProcess must be a positive integer');
  const plan = Array.from({ length: options.runs }, (_, index) => ({
    index,
    point: points[Math.floor(random() * points.length)]!,
    params: options.params(index),
    businessOperationId: `crash-drill-${seed}-${index}`,
  }));

  const slow = options.slowNetwork;
  if (slow !== undefined && !(typeof slow.share === 'number' && slow.share >= 0 && slow.share <= 1))
    throw new TypeError('slowNetwork.share must be a number from 0 to 1');
  const holdMs = slow?.holdMs ?? leaseMs + timeoutMs + 500;
  const sandbox = await options.startSandbox();
  // Slow network: the first create request of a seeded share of the operations is held and applied late.
  const slowRandom = seededRandom(seed ^ 0x5eed);
  const seenKeys = new Set<string>();
  let held = 0;
  const proxy = slow
    ? await startFaultProxy({
        target: sandbox.url,
        faults: (_n, req) => {
          if (req.method === 'GET') return 'pass';
          const key = String(req.headers['idempotency-key'] ?? '');
          const first = key === '' || !seenKeys.has(key);
          if (key) seenKeys.add(key);
          if (!first || slowRandom() >= slow.share) return 'pass';
          held += 1;
          return { kind: 'late-commit', afterMs: holdMs };
        },
      })
    : null;
  const upstreamUrl = proxy?.url ?? sandbox.url;
  // Scratch for the batches' ledgers (each removed after its batch). Removed at the end too, unless the
  // report was written into it (no outFile given): report.outFile then points inside it.
  const work = mkdtempSync(join(tmpdir(), 'retrysafe-crash-'));
  const outFile = options.outFile ?? join(work, 'crash-report.json');
  let reportInWork = false;
  const problems: string[] = [];
  const results: CrashRunResult[] = [];
  const recoverActions: Record<string, number> = {};
  let recoveries = 0;
  let workersKilled = 0;
  const timings = { workersMs: 0, recoveryMs: 0 };
  try {
    for (let b = 0; b < plan.length; b += batchSize) {
      const batch = plan.slice(b, b + batchSize);
      const ledgerPath = join(work, `ledger-${b / batchSize}.db`);
      const base = {
        adapterModule: options.adapterModule,
        adapterOptions: options.adapterOptions,
        baseUrl: upstreamUrl,
        timeoutMs,
        ledgerPath,
        operation: options.operation,
        leaseMs,
        ...(options.policy ? { policy: options.policy } : {}),
      };
      const runs = new Map<number, RunEnd>();

      // Phase 1: worker processes, each running `perProcess` jobs concurrently; once every job in a
      // process has stopped at its own point, the process is SIGKILLed.
      const t0 = Date.now();
      const groups: (typeof batch)[] = [];
      for (let g = 0; g < batch.length; g += perProcess) groups.push(batch.slice(g, g + perProcess));
      await pool(groups, options.parallel ?? 2, async (group) => {
        if (await runGroupToItsPoints(base, group, runs, problems)) workersKilled += 1;
      });

      // Phase 2: a fresh process, its clock past the dead workers' leases, recovers and re-runs.
      const t1 = Date.now();
      timings.workersMs += t1 - t0;
      recoveries += 1;
      const r = spawnWorker(
        {
          ...base,
          mode: 'recover',
          clockSkewMs: leaseMs + 1_000,
          jobs: batch.map((j) => ({
            index: j.index,
            params: j.params,
            businessOperationId: j.businessOperationId,
            point: null,
          })),
        },
        () => {},
      );
      const exit = await r.exit;
      timings.recoveryMs += Date.now() - t1;
      const recovered = r.messages.find(
        (m): m is Extract<CrashWorkerMessage, { type: 'recovered' }> => m.type === 'recovered',
      );
      if (!recovered) {
        const err = r.messages.find((m): m is Extract<CrashWorkerMessage, { type: 'error' }> => m.type === 'error');
        problems.push(
          `batch ${b / batchSize}: recovery process failed (${exit.signal ?? exit.code}): ${err?.message.split('\n').slice(0, 3).join(' | ') ?? r.stderr.split('\n')[0]}`,
        );
      }
      for (const rep of recovered?.reports ?? [])
        recoverActions[`${rep.from}→${rep.to} (${rep.action})`] =
          (recoverActions[`${rep.from}→${rep.to} (${rep.action})`] ?? 0) + 1;

      // The provider applies every request still held (late), before anything is counted.
      if (proxy) await proxy.flushLate();
      for (const job of batch) {
        const run = runs.get(job.index)!;
        const res = recovered?.results.find((x) => x.index === job.index);
        let providerRecords: number | null = null;
        if (sandbox.countFor)
          providerRecords = await sandbox.countFor({ providerKey: res?.providerKey ?? null, params: job.params });
        const duplicate = providerRecords !== null && providerRecords > 1;
        const lost = !res || res.status !== 'done' || providerRecords === 0;
        results.push({
          index: job.index,
          point: job.point,
          killed: run.killed,
          exit: run.exit,
          businessOperationId: res?.businessOperationId ?? run.businessOperationId,
          finalStatus: res?.status ?? null,
          adopted: res?.adopted ?? false,
          providerRecords,
          duplicate,
          lost,
        });
      }
      rmSync(ledgerPath, { force: true });
      rmSync(ledgerPath + '-wal', { force: true });
      rmSync(ledgerPath + '-shm', { force: true });
    }
    const providerRecords = await sandbox.count(options.operation);
    // Also catches a duplicate made under another key, which a per-key count cannot see.
    if (providerRecords !== options.runs)
      problems.push(`the sandbox holds ${providerRecords} records for ${options.runs} business operations`);
    const byPoint = Object.fromEntries(
      CRASH_POINTS.map((p) => {
        const rs = results.filter((r) => r.point === p);
        return [
          p,
          {
            runs: rs.length,
            killed: rs.filter((r) => r.killed).length,
            duplicates: rs.filter((r) => r.duplicate).length,
            lost: rs.filter((r) => r.lost).length,
          },
        ];
      }),
    ) as unknown as CrashDrillReport['byPoint'];
    const duplicates = Math.max(results.filter((r) => r.duplicate).length, providerRecords - options.runs);
    const lost = results.filter((r) => r.lost).length;
    const report: CrashDrillReport = {
      ok: duplicates === 0 && lost === 0 && problems.length === 0,
      runs: options.runs,
      seed,
      killed: results.filter((r) => r.killed).length,
      workersKilled,
      duplicates,
      lost,
      byPoint,
      providerRecords,
      recoveries,
      recoverActions,
      timings,
      problems,
      results,
      outFile,
      ...(slow ? { slowNetwork: { share: slow.share, holdMs, held } } : {}),
    };
    writeFileSync(outFile, JSON.stringify(report, null, 2) + '\n');
    reportInWork = options.outFile === undefined;
    return report;
  } finally {
    await proxy?.close();
    await sandbox.close();
    if (!reportInWork) rmSync(work, { recursive: true, force: true });
  }
}
