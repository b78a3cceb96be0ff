import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { DBOS, DBOSClient } from '@dbos-inc/dbos-sdk';
import { fingerprint } from '@retrysafe/contract';
import { migrate } from '@retrysafe/ledger-postgres';
import {
  createSandboxProvider,
  FORGETFUL_BEHAVIOUR,
  type SandboxBehaviour,
  type SandboxProvider,
  type SandboxServer,
  startSandboxServer,
} from '@retrysafe/sandbox';
import pg from 'pg';
import { expect } from 'vitest';

/** Lookup-only (Graph sendMail-like): every POST is a new record; a lookup by the key we stamped finds it. */
// The loopback sandbox applies a request as it arrives: a request in flight when its worker is killed lands
// within a second, so that is the card's late-apply bound (unknown, a lookup miss would never prove absence).
export const LOOKUP_ONLY: SandboxBehaviour = Object.freeze({
  ...FORGETFUL_BEHAVIOUR,
  lookup: 'get-by-key',
  lateApplyMs: 1000,
});
export const CONTROL_WORKFLOWS = 40;
// Alone on 2 cores a phase takes 4–14 s; under a full parallel test run, up to ~30 s was seen.
export const PHASE_TIMEOUT_MS = 90_000;

/** One phase, ending inside the test's timeout, its report printed. */
export async function crashPhase(o: Omit<CrashPhaseOptions, 'deadlineMs'>): Promise<CrashPhaseReport> {
  const r = await runCrashPhase({ ...o, deadlineMs: PHASE_TIMEOUT_MS - 5_000 });
  console.log(`[dbos crash] ${JSON.stringify(r)}`);
  return r;
}

/** Exactly one provider record per workflow: none duplicated, none missing. */
export function expectOneRecordEach(r: CrashPhaseReport, workflows: number): void {
  const seen = { duplicated: r.duplicatedOperations, missing: r.missing, records: r.providerRecords };
  expect(seen).toEqual({ duplicated: 0, missing: 0, records: workflows });
}

export const WORKER = fileURLToPath(new URL('./fixtures/crash-worker.mjs', import.meta.url));

/** The tests need a real PostgreSQL (DATABASE_URL, loopback); without it they fail loudly, never skip. */
export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url)
    throw new Error(
      'DATABASE_URL is not set: the @retrysafe/dbos tests need a real PostgreSQL. Run `source .ci/start-postgres.sh`, then rerun.',
    );
  const host = new URL(url).hostname;
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host))
    throw new Error(`DATABASE_URL must point at loopback in tests, got host ${host}`);
  return url;
}

export interface CrashPhaseOptions {
  readonly label: string;
  readonly mode: 'retrysafe' | 'plain';
  readonly behaviour: SandboxBehaviour;
  readonly workflows: number;
  /** Worker processes alive at once (each with its own DBOS executor id). */
  readonly processes: number;
  /** Faults over the phase; each lands right after the provider committed a create, before its answer is written. */
  readonly kills: number;
  /**
   * `sigkill` (default): the process is SIGKILLed and replaced by one with its executor id. `zombie`: the
   * process lives on, its answer is held `holdMs`, and a second process with the SAME executor id starts
   * meanwhile, so DBOS recovers the first one's pending workflows while it still runs them (DBOS's
   * "concurrent executions": an executor wrongly taken for dead).
   */
  readonly fault?: 'sigkill' | 'zombie';
  readonly holdMs?: number;
  readonly seed: number;
  readonly leaseMs?: number;
  /** Give up after this long (the test fails). */
  readonly deadlineMs?: number;
}

export interface CrashPhaseReport {
  readonly label: string;
  readonly mode: 'retrysafe' | 'plain';
  readonly workflows: number;
  readonly succeeded: number;
  readonly otherStatuses: Readonly<Record<string, number>>;
  /** What the workflows that did not succeed ended with (DBOS's recorded error), to say why. */
  readonly errors: readonly string[];
  /** Processes SIGKILLed while a provider call was in flight (its response lost). */
  readonly killed: number;
  /** Second processes started under a live process's executor id while its call was in flight. */
  readonly zombies: number;
  /** Worker processes started over the phase (the first ones plus one replacement per kill). */
  readonly processesStarted: number;
  /** Workflows that executed in more than one OS process: DBOS recovered them elsewhere. */
  readonly recoveredElsewhere: number;
  /** Workflows whose function DBOS started more than once (in any process). */
  readonly reexecuted: number;
  /** Records at the provider. */
  readonly providerRecords: number;
  /** Business operations with more than one record, and how many extra records. */
  readonly duplicatedOperations: number;
  readonly extraRecords: number;
  /** Business operations without a record. */
  readonly missing: number;
  /** Workflows whose result was adopted (from the ledger or a lookup) rather than sent fresh. */
  readonly adopted: number;
  readonly ms: number;
}

function seeded(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Slot {
  readonly index: number;
  readonly executorId: string;
  server: SandboxServer | null;
  child: ChildProcess | null;
  exited: Promise<void> | null;
  /** Commits left before this slot's process is killed; null when not armed. */
  countdown: number | null;
  /** While set, every answer to this slot's process waits for it (the process looks stalled). */
  hold: Promise<void> | null;
}

/**
 * One phase of the crash test: `processes` OS processes run the same DBOS application on one PostgreSQL,
 * `workflows` workflows are enqueued, and `kills` times a process is SIGKILLed right after the sandbox
 * committed one of its creates (the response is never written). A replacement process with the dead
 * one's executor id is started at once: DBOS re-enqueues the dead executor's workflows, any live process
 * picks them up. Counts are taken at the provider, per business operation (by request params).
 */
export async function runCrashPhase(o: CrashPhaseOptions): Promise<CrashPhaseReport> {
  const url = databaseUrl();
  const t0 = Date.now();
  const tag = `${o.label.replace(/[^a-z0-9]/g, '_')}_${randomBytes(3).toString('hex')}`;
  const dbosSchema = `dbos_${tag}`;
  const ledgerSchema = `rs_${tag}`;
  const appName = `crash-${tag}`;
  const leaseMs = o.leaseMs ?? 1500;
  const random = seeded(o.seed);
  const provider: SandboxProvider = createSandboxProvider(o.behaviour);

  await DBOS.migrate(url, { schemaName: dbosSchema });
  if (o.mode === 'retrysafe') {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    await migrate(pool, ledgerSchema);
    await pool.end();
  }

  const executions = new Map<string, Set<number>>();
  const starts = new Map<string, number>();
  let killed = 0;
  let zombieCount = 0;
  const extras: Slot[] = [];
  let started = 0;
  let stopping = false;
  const problems: string[] = [];
  const arm = () => 3 + Math.floor(random() * 12);
  let killsLeft = o.kills;
  let respawning = 0;
  const slots: Slot[] = Array.from({ length: o.processes }, (_, index) => ({
    index,
    executorId: `${tag}-w${index}`,
    server: null,
    child: null,
    exited: null,
    countdown: null,
    hold: null,
  }));

  function spawn(slot: Slot): Promise<void> {
    const child = fork(WORKER, [], {
      env: {
        ...process.env,
        RETRYSAFE_DBOS_WORKER: JSON.stringify({
          mode: o.mode,
          databaseUrl: url,
          dbosSchema,
          ledgerSchema,
          appName,
          executorId: slot.executorId,
          sandboxUrl: slot.server!.url,
          behaviour: o.behaviour,
          leaseMs,
        }),
      },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'json',
    });
    started++;
    slot.child = child;
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      if (stderr.length < 4000) stderr += d.toString('utf8');
    });
    slot.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        if (signal !== 'SIGKILL' && code !== 0 && !stopping)
          problems.push(`worker ${slot.executorId} exited ${code ?? signal}: ${stderr.slice(0, 800)}`);
        resolve();
      }),
    );
    return new Promise<void>((resolve, reject) => {
      child.on('message', (m: { type: string; workflowId?: string; pid?: number }) => {
        if (m.type === 'ready') resolve();
        if (m.type === 'executing' && m.workflowId && m.pid) {
          const seen = executions.get(m.workflowId) ?? new Set<number>();
          seen.add(m.pid);
          executions.set(m.workflowId, seen);
          starts.set(m.workflowId, (starts.get(m.workflowId) ?? 0) + 1);
        }
      });
      child.once('exit', (code, signal) =>
        reject(
          new Error(
            `worker ${slot.executorId} exited before it was ready (${code ?? signal}): ${stderr.slice(0, 800)}`,
          ),
        ),
      );
    });
  }

  // One sandbox server per slot, all in front of the same provider: the server knows which process it
  // serves, so it can kill exactly the process whose call is in flight, after the provider committed.
  async function serve(slot: Slot): Promise<void> {
    const wrapped: SandboxProvider = {
      ...provider,
      execute: async (req) => {
        const res = await provider.execute(req);
        if (slot.hold) await slot.hold;
        const due =
          slot.countdown !== null && --slot.countdown <= 0 && slot.child !== null && !stopping && killsLeft > 0;
        if (due && o.fault === 'zombie') {
          slot.countdown = null;
          killsLeft--;
          zombieCount++;
          respawning++;
          const twin: Slot = {
            index: slot.index,
            executorId: slot.executorId,
            server: null,
            child: null,
            exited: null,
            countdown: null,
            hold: null,
          };
          // The twin is a live process like any other: it can be the next one whose executor is taken for dead
          // (when one process dequeued most of the work, the next fault would otherwise have nowhere to land).
          await serve(twin);
          // Armed at once with a short countdown: the twin re-runs the recovered workflows first, and those few
          // calls may be all that is left of the phase by the time the first process's hold ends.
          if (killsLeft > 0) twin.countdown = 1 + Math.floor(random() * 3);
          extras.push(twin);
          // The first process keeps running, its answers held, while its twin recovers its workflows.
          slot.hold = (async () => {
            await spawn(twin).catch((e: Error) => problems.push(e.message));
            await new Promise((r) => setTimeout(r, o.holdMs ?? 3000));
          })();
          await slot.hold;
          slot.hold = null;
          respawning--;
          if (killsLeft > 0 && !stopping) slot.countdown = arm();
          return res;
        }
        if (due) {
          slot.countdown = null;
          const victim = slot.child!;
          const exited = slot.exited;
          victim.kill('SIGKILL');
          await exited; // the answer below goes to a dead socket: the response is lost
          killed++;
          killsLeft--;
          respawning++;
          void spawn(slot)
            .then(() => {
              if (killsLeft > 0 && !stopping) slot.countdown = arm();
            })
            .catch((e: Error) => problems.push(e.message))
            .finally(() => respawning--);
        }
        return res;
      },
    };
    slot.server = await startSandboxServer({ provider: wrapped });
  }
  for (const slot of slots) await serve(slot);

  const client = await DBOSClient.create({
    systemDatabaseUrl: url,
    systemDatabaseSchemaName: dbosSchema,
    applicationName: appName,
  });
  try {
    await Promise.all(slots.map((s) => spawn(s)));
    // Spread the kills over the slots: each armed slot dies after a few commits of its own.
    for (const s of slots) if (killsLeft > s.index) s.countdown = arm();
    const ids: string[] = [];
    for (let i = 0; i < o.workflows; i++) {
      const workflowID = `${tag}-wf-${i}`;
      ids.push(workflowID);
      await client.enqueue(
        { workflowName: 'order', queueName: 'orders', workflowID, appVersion: 'crash-test' },
        { ref: `${o.label}-${i}` },
      );
    }

    const deadline = t0 + (o.deadlineMs ?? 90_000);
    let statuses: Record<string, number> = {};
    let outputs: { status: string; output?: unknown; error?: unknown }[] = [];
    for (;;) {
      outputs = (await client.listWorkflows({ workflowName: 'order', loadOutput: true })) as typeof outputs;
      statuses = {};
      for (const w of outputs) statuses[w.status] = (statuses[w.status] ?? 0) + 1;
      const settled = outputs.filter((w) => w.status !== 'PENDING' && w.status !== 'ENQUEUED').length;
      if (settled === o.workflows && respawning === 0) break;
      if (problems.length > 0) throw new Error(problems.join('\n'));
      if (Date.now() > deadline)
        throw new Error(
          `phase ${o.label}: only ${JSON.stringify(statuses)} of ${o.workflows} after ${o.deadlineMs ?? 90_000} ms (killed ${killed})`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }

    const perOp = new Map<string, number>();
    for (const r of provider.records()) perOp.set(r.paramsFingerprint, (perOp.get(r.paramsFingerprint) ?? 0) + 1);
    let duplicatedOperations = 0;
    let extraRecords = 0;
    let missing = 0;
    for (let i = 0; i < o.workflows; i++) {
      const c = perOp.get(fingerprint({ ref: `${o.label}-${i}` })) ?? 0;
      if (c === 0) missing++;
      if (c > 1) {
        duplicatedOperations++;
        extraRecords += c - 1;
      }
    }
    const { SUCCESS = 0, ...otherStatuses } = statuses;
    return {
      label: o.label,
      mode: o.mode,
      workflows: o.workflows,
      succeeded: SUCCESS,
      otherStatuses,
      errors: outputs.filter((w) => w.status !== 'SUCCESS').map((w) => String(w.error ?? w.status).slice(0, 500)),
      killed,
      zombies: zombieCount,
      processesStarted: started,
      recoveredElsewhere: [...executions.values()].filter((s) => s.size > 1).length,
      reexecuted: [...starts.values()].filter((n) => n > 1).length,
      providerRecords: provider.count(),
      duplicatedOperations,
      extraRecords,
      missing,
      adopted: outputs.filter((w) => (w.output as { adopted?: boolean } | undefined)?.adopted === true).length,
      ms: Date.now() - t0,
    };
  } finally {
    stopping = true;
    for (const s of [...slots, ...extras]) s.child?.kill('SIGKILL');
    await Promise.all([...slots, ...extras].map((s) => s.exited));
    await client.destroy().catch(() => undefined);
    for (const s of [...slots, ...extras]) await s.server?.close().catch(() => undefined);
    await dropSchemas(url, dbosSchema, ledgerSchema);
  }
}

/** Drops what a drill made in the shared database (DBOS's schema, the ledger's). */
export async function dropSchemas(url: string, ...schemas: string[]): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    for (const schema of schemas) await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await c.end();
  }
}
