import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { seededRandom } from './drill-clock.js';
import type { DrillPolicy } from './drill-types.js';
import { CRASH_POINTS, type CrashPoint, type CrashWorkerConfig, type CrashWorkerMessage } from './crash-types.js';

export { CRASH_POINTS } from './crash-types.js';
export type { CrashPoint } from './crash-types.js';

export interface CrashDrillSandbox {
  readonly url: string;
  /** Records the provider holds for the operation. */
  count(operation: string): number | Promise<number>;
  /** Records held under one provider key: lets the drill name each duplicate. */
  countFor?(providerKey: string): number | Promise<number>;
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
  /** Runs killed before one recovery process takes over the batch (default 25). */
  readonly batchSize?: number;
  /** Worker processes alive at once (default 4). */
  readonly parallel?: number;
  /** Lease of the killed workers; the recovering process's clock runs this far ahead (default 5000). */
  readonly leaseMs?: number;
  readonly timeoutMs?: number;
  readonly policy?: DrillPolicy;
  /** Where the report goes (JSON); default a temp dir. */
  readonly outFile?: string;
}

export interface CrashRunResult {
  readonly index: number;
  readonly point: CrashPoint;
  /** True when the worker reached the point and was SIGKILLed there. */
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
  readonly killed: number;
  readonly duplicates: number;
  readonly lost: number;
  readonly byPoint: Readonly<Record<CrashPoint, { readonly runs: number; readonly killed: number; readonly duplicates: number; readonly lost: number }>>;
  /** Records the sandbox holds for the operation at the end (expected: `runs`). */
  readonly providerRecords: number;
  readonly recoveries: number;
  readonly recoverActions: Readonly<Record<string, number>>;
  readonly problems: readonly string[];
  readonly results: readonly CrashRunResult[];
  readonly outFile: string;
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

function spawnWorker(config: CrashWorkerConfig, onMessage: (m: CrashWorkerMessage, child: ChildProcess) => void): Spawned {
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

/**
 * The crash drill: each run executes the operation in a child process, which is SIGKILLed at a
 * seeded, named point (after claim, after dispatched, after the provider committed, after the result
 * is recorded). After each batch, a fresh process recovers the ledger and re-runs every job as its
 * caller would. Reports duplicates (more than one provider record for one business operation) and
 * losses (no record, or not done after recovery).
 */
export async function runCrashDrill(options: CrashDrillOptions): Promise<CrashDrillReport> {
  if (!Number.isInteger(options.runs) || options.runs <= 0) throw new TypeError('runs must be a positive integer');
  if (typeof options.adapterModule !== 'string' || !isAbsolute(options.adapterModule)) throw new TypeError('adapterModule must be an absolute path to an ESM module exporting createAdapter');
  const points = options.points ?? CRASH_POINTS;
  for (const p of points) if (!CRASH_POINTS.includes(p)) throw new TypeError(`unknown crash point '${String(p)}'; known: ${CRASH_POINTS.join(', ')}`);
  const seed = options.seed ?? 1;
  const random = seededRandom(seed);
  const leaseMs = options.leaseMs ?? 5_000;
  const batchSize = options.batchSize ?? 25;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const work = mkdtempSync(join(tmpdir(), 'retrysafe-crash-'));
  const outFile = options.outFile ?? join(work, 'crash-report.json');
  mkdirSync(dirname(outFile), { recursive: true });
  const plan = Array.from({ length: options.runs }, (_, index) => ({ index, point: points[Math.floor(random() * points.length)]!, params: options.params(index) }));

  const sandbox = await options.startSandbox();
  const problems: string[] = [];
  const results: CrashRunResult[] = [];
  const recoverActions: Record<string, number> = {};
  let recoveries = 0;
  try {
    for (let b = 0; b < plan.length; b += batchSize) {
      const batch = plan.slice(b, b + batchSize);
      const ledgerPath = join(work, `ledger-${b / batchSize}.db`);
      const base = { adapterModule: options.adapterModule, adapterOptions: options.adapterOptions, baseUrl: sandbox.url, timeoutMs, ledgerPath, operation: options.operation, leaseMs, ...(options.policy ? { policy: options.policy } : {}) };
      const runs = new Map<number, { killed: boolean; exit: string; businessOperationId: string | null }>();

      // Phase 1: one process per run, killed at its point.
      await pool(batch, options.parallel ?? 4, async (job) => {
        let killed = false;
        let at: string | null = null;
        const w = spawnWorker({ ...base, mode: 'run', point: job.point, jobs: [{ index: job.index, params: job.params }] }, (m, child) => {
          if (m.type === 'at' && m.point === job.point) {
            at = m.businessOperationId ?? null;
            killed = child.kill('SIGKILL');
          }
        });
        const exit = await w.exit;
        const err = w.messages.find((m): m is Extract<CrashWorkerMessage, { type: 'error' }> => m.type === 'error');
        if (err) problems.push(`run ${job.index} (${job.point}): worker error: ${err.message.split('\n')[0]}`);
        if (!killed && exit.code !== 0) problems.push(`run ${job.index} (${job.point}): worker exited ${exit.code ?? exit.signal} without reaching its point: ${w.stderr.split('\n')[0] ?? ''}`);
        if (killed && exit.signal !== 'SIGKILL') problems.push(`run ${job.index}: expected SIGKILL, got ${exit.signal ?? exit.code}`);
        const finished = w.messages.find((m): m is Extract<CrashWorkerMessage, { type: 'finished' }> => m.type === 'finished');
        runs.set(job.index, { killed: killed && exit.signal === 'SIGKILL', exit: exit.signal ?? `exit ${exit.code}`, businessOperationId: at ?? finished?.businessOperationId ?? null });
      });

      // Phase 2: a fresh process, its clock past the dead workers' leases, recovers and re-runs.
      recoveries += 1;
      const r = spawnWorker({ ...base, mode: 'recover', point: null, clockSkewMs: leaseMs + 1_000, jobs: batch.map((j) => ({ index: j.index, params: j.params })) }, () => {});
      const exit = await r.exit;
      const recovered = r.messages.find((m): m is Extract<CrashWorkerMessage, { type: 'recovered' }> => m.type === 'recovered');
      if (!recovered) {
        const err = r.messages.find((m): m is Extract<CrashWorkerMessage, { type: 'error' }> => m.type === 'error');
        problems.push(`batch ${b / batchSize}: recovery process failed (${exit.signal ?? exit.code}): ${err?.message.split('\n').slice(0, 3).join(' | ') ?? r.stderr.split('\n')[0]}`);
      }
      for (const rep of recovered?.reports ?? []) recoverActions[`${rep.from}→${rep.to} (${rep.action})`] = (recoverActions[`${rep.from}→${rep.to} (${rep.action})`] ?? 0) + 1;

      for (const job of batch) {
        const run = runs.get(job.index)!;
        const res = recovered?.results.find((x) => x.index === job.index);
        let providerRecords: number | null = null;
        if (res?.providerKey && sandbox.countFor) providerRecords = await sandbox.countFor(res.providerKey);
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
    if (!sandbox.countFor && providerRecords !== options.runs) problems.push(`the sandbox holds ${providerRecords} records for ${options.runs} business operations`);
    const byPoint = Object.fromEntries(
      CRASH_POINTS.map((p) => {
        const rs = results.filter((r) => r.point === p);
        return [p, { runs: rs.length, killed: rs.filter((r) => r.killed).length, duplicates: rs.filter((r) => r.duplicate).length, lost: rs.filter((r) => r.lost).length }];
      }),
    ) as unknown as CrashDrillReport['byPoint'];
    const duplicates = results.filter((r) => r.duplicate).length + (sandbox.countFor ? 0 : Math.max(0, providerRecords - options.runs));
    const lost = results.filter((r) => r.lost).length;
    const report: CrashDrillReport = {
      ok: duplicates === 0 && lost === 0 && problems.length === 0,
      runs: options.runs,
      seed,
      killed: results.filter((r) => r.killed).length,
      duplicates,
      lost,
      byPoint,
      providerRecords,
      recoveries,
      recoverActions,
      problems,
      results,
      outFile,
    };
    writeFileSync(outFile, JSON.stringify(report, null, 2) + '\n');
    return report;
  } finally {
    await sandbox.close();
  }
}
