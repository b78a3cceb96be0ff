import { type ChildProcess, fork } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DrillOperation, DrillSandbox } from '@retrysafe/contract';
import type { CrashWorkerMessage } from './crash-worker.js';
import { seededRandom } from './drill-clock.js';
import type { ConformanceOptions } from './drill-types.js';
import { startFaultProxy } from './fault-proxy.js';

/** Where the crash drill kills the worker (SIGKILL). */
export const CRASH_POINTS = [
  'after-claim',
  'after-dispatched',
  'after-provider-committed',
  'after-result-recorded',
] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

export interface CrashDrillSandbox extends Omit<DrillSandbox, 'expireKeys'> {
  /** Records the provider holds for one run, by params if you can: a per-key count misses a duplicate made under another
   * key. Required: with the total alone, a duplicate in one run and a loss in another cancel out. */
  countFor(run: { readonly providerKey: string | null; readonly params: unknown }): number | Promise<number>;
}

export interface CrashDrillOptions
  extends Pick<ConformanceOptions, 'seed' | 'timeoutMs'>,
    Pick<DrillOperation, 'params'> {
  /** Seeded runs, each SIGKILLed at its point (or finishing if it never reaches it). */
  readonly runs: number;
  /** Kill points to draw from (default all four). */
  readonly points?: readonly CrashPoint[];
  /** Absolute path of an ESM module exporting `createAdapter({ baseUrl, timeoutMs, options })`, loaded in the child. */
  readonly adapterModule: string;
  /** JSON options handed to that `createAdapter`. */
  readonly adapterOptions?: unknown;
  readonly operation: string;
  startSandbox(): Promise<CrashDrillSandbox>;
  /** Runs killed before one recovery process takes over the batch (default 50). */
  readonly batchSize?: number;
  /** Runs executed concurrently in one worker process (default 10; 1 = one process per run). */
  readonly perProcess?: number;
  /** Lease of the killed workers; the recovering process's clock runs this far ahead (default 5000). */
  readonly leaseMs?: number;
  /** Where the JSON report goes; default a temp dir. */
  readonly outFile?: string;
  /** A proxy holds a seeded `share` (0–1) of first creates past timeout and lease (`holdMs`), then applies them late. */
  readonly slowNetwork?: { readonly share: number; readonly holdMs?: number };
}

function workerPath(): string {
  const here = fileURLToPath(import.meta.url);
  // From source (vitest), the built worker: a child process cannot load TypeScript.
  const built = join(dirname(here), here.endsWith('.js') ? '' : '../dist', 'crash-worker.js');
  if (existsSync(built)) return built;
  throw new Error(`crash drill: the worker script is not built (${built}); run tsc -b packages/testkit`);
}

function spawnWorker(config: CrashWorkerConfig, onMessage: (m: CrashWorkerMessage, child: ChildProcess) => void) {
  const child = fork(workerPath(), [], {
    env: { ...process.env, RETRYSAFE_CRASH_WORKER: JSON.stringify(config) },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    serialization: 'json',
  });
  const s = {
    messages: [] as CrashWorkerMessage[],
    stderr: '',
    exit: new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    ),
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

type PlannedRun = ReturnType<typeof planRuns>[number];
type RunEnd = { killed: boolean; exit: string };
type Recovered = Extract<CrashWorkerMessage, { type: 'recovered' }>;
type WorkerBase = ReturnType<typeof workerBase>;

/** Passed to the child as JSON in RETRYSAFE_CRASH_WORKER. */
export type CrashWorkerConfig = WorkerBase & {
  readonly mode: 'run' | 'recover';
  readonly jobs: readonly (Omit<PlannedRun, 'point'> & { readonly point: CrashPoint | null })[];
};

function workerBase(o: CrashDrillOptions, baseUrl: string, ledgerPath: string, leaseMs: number, timeoutMs: number) {
  const { adapterModule, adapterOptions, operation } = o;
  return { adapterModule, adapterOptions, operation, baseUrl, ledgerPath, leaseMs, timeoutMs };
}

const errorIn = (messages: readonly CrashWorkerMessage[]) =>
  messages.find((m): m is Extract<CrashWorkerMessage, { type: 'error' }> => m.type === 'error');

/** One process runs the group's jobs at once, SIGKILLed once each stopped at its point or finished; true if killed. */
async function runGroup(base: WorkerBase, group: readonly PlannedRun[], runs: Map<number, RunEnd>, problems: string[]) {
  const reached = new Map<number, string>();
  const finished = new Set<number>();
  let killed = false;
  const w = spawnWorker({ ...base, mode: 'run', jobs: group }, (m, child) => {
    if (m.type === 'at') reached.set(m.index, m.point);
    if (m.type === 'finished') finished.add(m.index);
    if (!killed && reached.size + finished.size === group.length && reached.size > 0) killed = child.kill('SIGKILL');
  });
  const exit = await w.exit;
  const how = exit.signal ?? `exit ${exit.code}`;
  const who = `worker for runs ${group[0]!.index}–${group.at(-1)!.index}`;
  const err = errorIn(w.messages);
  if (err) problems.push(`${who}: ${err.message.split('\n')[0]}`);
  if (killed && exit.signal !== 'SIGKILL') problems.push(`${who}: expected SIGKILL, got ${how}`);
  if (!killed && exit.code !== 0)
    problems.push(`${who} exited ${exit.signal ?? exit.code}: ${w.stderr.split('\n')[0] ?? ''}`);
  for (const job of group) {
    const at = reached.get(job.index);
    const first = finished.has(job.index) ? ' (finished first)' : '';
    const missed = at === undefined ? `never reached ${job.point}${first}` : `stopped at ${at}, planned ${job.point}`;
    if (at !== job.point) problems.push(`run ${job.index}: ${missed}`);
    runs.set(job.index, { killed: at === job.point && exit.signal === 'SIGKILL', exit: how });
  }
  return killed && exit.signal === 'SIGKILL';
}

/** The runs of one seed: a kill point drawn for each, and its params. */
function planRuns(options: CrashDrillOptions, seed: number, perProcess: number, batchSize: number) {
  for (const [name, n] of Object.entries({ runs: options.runs, perProcess, batchSize }))
    if (!Number.isInteger(n) || n <= 0) throw new TypeError(`${name} must be a positive integer`);
  if (typeof options.adapterModule !== 'string' || !isAbsolute(options.adapterModule))
    throw new TypeError('adapterModule must be an absolute path to an ESM module exporting createAdapter');
  // Else every run ends lost, in children that cannot load it.
  if (!existsSync(options.adapterModule)) throw new TypeError(`adapterModule ${options.adapterModule} does not exist`);
  const points = options.points ?? CRASH_POINTS;
  for (const p of points)
    if (!CRASH_POINTS.includes(p))
      throw new TypeError(`unknown crash point '${String(p)}'; known: ${CRASH_POINTS.join(', ')}`);
  const random = seededRandom(seed);
  return Array.from({ length: options.runs }, (_, index) => ({
    index,
    point: points[Math.floor(random() * points.length)]!,
    params: options.params(index),
    businessOperationId: `crash-drill-${seed}-${index}`,
  }));
}

async function startSlowProxy(target: string, share: number, holdMs: number, seed: number) {
  const random = seededRandom(seed ^ 0x5eed);
  const seenKeys = new Set<string>();
  const slow = { held: 0 };
  const proxy = await startFaultProxy({
    target,
    faults: (_n, req) => {
      if (req.method === 'GET') return 'pass';
      const key = String(req.headers['idempotency-key'] ?? '');
      const first = key === '' || !seenKeys.has(key);
      if (key) seenKeys.add(key);
      if (!first || random() >= share) return 'pass';
      slow.held += 1;
      return { kind: 'late-commit', afterMs: holdMs };
    },
  });
  return Object.assign(slow, { proxy });
}

/** One run's end: how its worker died, where recovery left it, and the records the provider holds for it. */
function runResult(job: PlannedRun, run: RunEnd, records: number, res?: Recovered['results'][number]) {
  return {
    index: job.index,
    point: job.point,
    killed: run.killed,
    /** `SIGKILL`, or `exit 0` when it finished before its point. */
    exit: run.exit,
    businessOperationId: res?.businessOperationId ?? job.businessOperationId,
    finalStatus: res?.status ?? null,
    adopted: res?.adopted ?? false,
    providerRecords: records,
    duplicate: records > 1,
    lost: res?.status !== 'done' || records === 0,
  };
}

export type CrashRunResult = ReturnType<typeof runResult>;

function countRuns(rs: readonly CrashRunResult[]) {
  const n = (f: (r: CrashRunResult) => boolean) => rs.filter(f).length;
  return { runs: rs.length, killed: n((r) => r.killed), duplicates: n((r) => r.duplicate), lost: n((r) => r.lost) };
}

/**
 * Each run executes in a child process SIGKILLed at a seeded point; after each batch a fresh process recovers
 * the ledger and re-runs every job as its caller would. Reports duplicates and losses (no record, or not done).
 */
export async function runCrashDrill(options: CrashDrillOptions) {
  const { seed = 1, leaseMs = 5_000, batchSize = 50, perProcess = 10, timeoutMs = 5_000, slowNetwork: slow } = options;
  const plan = planRuns(options, seed, perProcess, batchSize);
  if (options.outFile !== undefined) mkdirSync(dirname(options.outFile), { recursive: true });
  if (slow !== undefined && !(typeof slow.share === 'number' && slow.share >= 0 && slow.share <= 1))
    throw new TypeError('slowNetwork.share must be a number from 0 to 1');
  const holdMs = slow?.holdMs ?? leaseMs + timeoutMs + 500;
  const sandbox = await options.startSandbox();
  if (typeof sandbox?.countFor !== 'function') {
    await sandbox?.close?.();
    throw new TypeError(
      'startSandbox must return countFor: with the total alone, a duplicate in one run and a loss in another cancel out',
    );
  }
  const late = slow ? await startSlowProxy(sandbox.url, slow.share, holdMs, seed) : null;
  // The batches' ledgers; kept at the end only when the report was written into it (no outFile given).
  const work = mkdtempSync(join(tmpdir(), 'retrysafe-crash-'));
  const outFile = options.outFile ?? join(work, 'crash-report.json');
  let reportInWork = false;
  const url = late?.proxy.url ?? sandbox.url;
  const problems: string[] = [];
  const results: CrashRunResult[] = [];
  const recoverActions: Record<string, number> = {};
  let workersKilled = 0;
  try {
    for (let b = 0; b * batchSize < plan.length; b += 1) {
      const batch = plan.slice(b * batchSize, (b + 1) * batchSize);
      const base = workerBase(options, url, join(work, `ledger-${b}.db`), leaseMs, timeoutMs);
      const runs = new Map<number, RunEnd>();
      const groups: PlannedRun[][] = [];
      for (let g = 0; g < batch.length; g += perProcess) groups.push(batch.slice(g, g + perProcess));
      const nextGroups = async () => {
        for (let group = groups.shift(); group; group = groups.shift())
          if (await runGroup(base, group, runs, problems)) workersKilled += 1;
      };
      await Promise.all([nextGroups(), nextGroups()]); // two worker processes at a time
      // A fresh process, its clock past the dead workers' leases, recovers the batch and re-runs every job.
      const jobs = batch.map((r) => ({ ...r, point: null }));
      const r = spawnWorker({ ...base, mode: 'recover', jobs }, () => {});
      const exit = await r.exit;
      const recovered = r.messages.find((m): m is Recovered => m.type === 'recovered');
      if (!recovered) {
        const why = errorIn(r.messages)?.message.split('\n').slice(0, 3).join(' | ') ?? r.stderr.split('\n')[0];
        problems.push(`batch ${b}: recovery process failed (${exit.signal ?? exit.code}): ${why}`);
      }
      for (const { from, to, action } of recovered?.reports ?? []) {
        const key = `${from}→${to} (${action})`;
        recoverActions[key] = (recoverActions[key] ?? 0) + 1;
      }
      if (late) await late.proxy.flushLate();
      for (const job of batch) {
        const res = recovered?.results.find((x) => x.index === job.index);
        const providerKey = res?.providerKey ?? null;
        const records = await sandbox.countFor({ providerKey, params: job.params });
        results.push(runResult(job, runs.get(job.index)!, records, res));
      }
      for (const suffix of ['', '-wal', '-shm']) rmSync(base.ledgerPath + suffix, { force: true });
    }
    const providerRecords = await sandbox.count(options.operation);
    // Also catches a duplicate made under another key, which a per-key count cannot see.
    if (providerRecords !== options.runs)
      problems.push(`the sandbox holds ${providerRecords} records for ${options.runs} business operations`);
    const all = countRuns(results);
    const duplicates = Math.max(all.duplicates, providerRecords - options.runs);
    const byPoint = CRASH_POINTS.map((p) => [p, countRuns(results.filter((r) => r.point === p))] as const);
    const report = {
      ok: duplicates === 0 && all.lost === 0 && problems.length === 0,
      runs: options.runs,
      seed,
      killed: all.killed,
      workersKilled,
      duplicates,
      lost: all.lost,
      byPoint: Object.fromEntries(byPoint) as Record<CrashPoint, ReturnType<typeof countRuns>>,
      providerRecords,
      recoveries: Math.ceil(plan.length / batchSize),
      recoverActions,
      problems,
      results,
      outFile,
      ...(slow ? { slowNetwork: { share: slow.share, holdMs, held: late!.held } } : {}),
    };
    writeFileSync(outFile, JSON.stringify(report, null, 2) + '\n');
    reportInWork = options.outFile === undefined;
    return report;
  } finally {
    await late?.proxy.close();
    await sandbox.close();
    if (!reportInWork) rmSync(work, { recursive: true, force: true });
  }
}
