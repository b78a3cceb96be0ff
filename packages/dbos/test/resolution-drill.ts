import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DBOS, DBOSClient } from '@dbos-inc/dbos-sdk';
import { type BusinessOperationId, fingerprint } from '@retrysafe/contract';
import {
  type DbosResolutionMessage,
  type DbosResolutionSender,
  handoffEventKey,
  sendResolution,
} from '@retrysafe/dbos';
import { createPostgresLedger, migrate } from '@retrysafe/ledger-postgres';
import {
  createSandboxProvider,
  type SandboxBehaviour,
  type SandboxProvider,
  startSandboxServer,
} from '@retrysafe/sandbox';
import pg from 'pg';
import { databaseUrl, dropSchemas, WORKER } from './crash-harness.js';

/**
 * Where the worker process dies while a handed-off operation waits for a person (`awaitResolution`):
 * - `waiting`: in `DBOS.recv`, before any decision;
 * - `decided`: the decision received (DBOS checkpointed the recv), before the runner acts on it;
 * - `claimed`: the runner claimed the resume and sent it, the provider has not seen it;
 * - `sent`: the provider applied the resume, its answer never reaches the worker;
 * - `recorded`: the runner wrote the outcome to the ledger, DBOS has not checkpointed the step;
 * - `ending`: the wait timed out while the decision lay in its mailbox (sent during its last poll of the ledger),
 *   and is closing, before it takes it.
 */
export type KillPoint = 'waiting' | 'decided' | 'claimed' | 'sent' | 'recorded' | 'ending';

export interface ResolutionDrillOptions {
  readonly killAt: KillPoint;
  readonly decision: DbosResolutionMessage;
  readonly behaviour: SandboxBehaviour;
  readonly leaseMs?: number;
  readonly deadlineMs?: number;
}

export interface ResolutionDrillReport {
  readonly killAt: KillPoint;
  readonly action: DbosResolutionMessage['action'];
  /** Worker processes SIGKILLed at the kill point, and OS processes the workflow executed in. */
  readonly killed: number;
  readonly processes: number;
  /** What `sendResolution(…, { awaitSeconds })` came back with (`applied`), or the refusal it threw. */
  readonly answer: string;
  readonly workflowStatus: string;
  readonly output: unknown;
  /** Records of this operation at the provider, and create requests it received. */
  readonly records: number;
  readonly calls: number;
  readonly rowState: string | null;
  readonly leaseOwner: string | null;
  /** Receipts of a person's decision in the ledger: one per decision applied. */
  readonly resolveReceipts: number;
  readonly ms: number;
}

/**
 * One workflow, one worker process at a time: the first call is rejected, so the operation is handed off and the
 * workflow waits in `awaitResolution`; a person's decision is sent with a `DBOSClient`; the worker is SIGKILLed at
 * `killAt` and replaced by a process with the same executor id, in which DBOS recovers the workflow.
 */
export async function resolutionDrill(o: ResolutionDrillOptions): Promise<ResolutionDrillReport> {
  const url = databaseUrl();
  const t0 = Date.now();
  const tag = `res_${o.killAt}_${o.decision.action.replace('-', '')}_${randomBytes(3).toString('hex')}`;
  const dbosSchema = `dbos_${tag}`;
  const ledgerSchema = `rs_${tag}`;
  const appName = `drill-${tag}`;
  const marker = join(tmpdir(), `retrysafe-${tag}.died`);
  const ref = `drill-${tag}`;
  const workflowID = `${tag}-wf`;
  await DBOS.migrate(url, { schemaName: dbosSchema });
  const setup = new pg.Pool({ connectionString: url, max: 1 });
  await migrate(setup, ledgerSchema);
  await setup.end();
  const ledger = createPostgresLedger({ connectionString: url, schema: ledgerSchema, poolSize: 2 });
  const provider: SandboxProvider = createSandboxProvider(o.behaviour);
  provider.failNext({ kind: 'rejected', message: 'amount must be positive' }); // the first call: handed off

  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();
  let ready: Promise<void> = Promise.resolve();
  let killed = 0;
  let stopping = false;
  let polled = () => {};
  const polling = new Promise<void>((r) => {
    polled = r;
  });
  const pids = new Set<number>();
  const problems: string[] = [];

  function spawn(): void {
    const worker = fork(WORKER, [], {
      env: {
        ...process.env,
        RETRYSAFE_DBOS_WORKER: JSON.stringify({
          mode: 'retrysafe',
          databaseUrl: url,
          dbosSchema,
          ledgerSchema,
          appName,
          executorId: `${tag}-w0`,
          sandboxUrl: server.url,
          behaviour: o.behaviour,
          leaseMs: o.leaseMs ?? 1500,
          ...(o.killAt === 'decided' ? { dieAroundResolve: { when: 'before', marker } } : {}),
          ...(o.killAt === 'recorded' ? { dieAroundResolve: { when: 'after', marker } } : {}),
          // The wait's first ledger poll follows its first receive (pollSeconds): held this long more, and until the
          // decision is sent, it returns past the wait's timeout.
          ...(o.killAt === 'ending' ? { dieAtWaitEnd: { marker, pollMs: 1_500 }, awaitTimeoutSeconds: 2 } : {}),
        }),
      },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'json',
    });
    child = worker;
    let stderr = '';
    worker.stderr?.on('data', (d: Buffer) => {
      if (stderr.length < 4000) stderr += d.toString('utf8');
    });
    ready = new Promise((resolve) =>
      worker.on('message', (m: { type: string; pid?: number }) => {
        if (m.type === 'ready') resolve();
        if (m.type === 'executing' && m.pid) pids.add(m.pid);
        if (m.type === 'polling') polled();
      }),
    );
    // A process killed at the kill point is replaced at once by one with its executor id: DBOS recovers there.
    exited = new Promise((resolve) =>
      worker.once('exit', (code, signal) => {
        if (!stopping && signal === 'SIGKILL') {
          killed++;
          spawn();
        } else if (!stopping) problems.push(`worker exited ${code ?? signal}: ${stderr.slice(0, 800)}`);
        resolve();
      }),
    );
  }

  async function kill(): Promise<void> {
    const died = exited;
    child?.kill('SIGKILL');
    await died;
  }

  // The resume's provider call (the second create) is where `claimed` and `sent` kill the worker.
  let armed = false;
  const server = await startSandboxServer({
    provider: {
      ...provider,
      execute: async (req): ReturnType<SandboxProvider['execute']> => {
        const resumeCall = armed && (o.killAt === 'claimed' || o.killAt === 'sent');
        if (resumeCall) armed = false;
        if (resumeCall && o.killAt === 'claimed') {
          await kill(); // the provider never sees this request
          return { type: 'server-error', status: 503, committed: false };
        }
        const res = await provider.execute(req);
        if (resumeCall) await kill(); // applied; the answer goes to a dead socket
        return res;
      },
    },
  });

  const client = await DBOSClient.create({
    systemDatabaseUrl: url,
    systemDatabaseSchemaName: dbosSchema,
    applicationName: appName,
  });
  const deadline = t0 + (o.deadlineMs ?? 60_000);
  const until = async <T>(what: string, fn: () => Promise<T | null | undefined>): Promise<T> => {
    for (;;) {
      const v = await fn();
      if (v !== null && v !== undefined) return v;
      if (problems.length > 0) throw new Error(problems.join('\n'));
      if (Date.now() > deadline) throw new Error(`drill ${tag}: timed out waiting for ${what} (killed ${killed})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  try {
    spawn();
    await ready;
    await client.enqueue(
      { workflowName: 'awaitOrder', queueName: 'orders', workflowID, appVersion: 'crash-test' },
      { ref },
    );
    const bo = await until('the hand-off', async () => {
      const open = await ledger.list({ states: ['handed-off'] });
      return open.find((r) => (r.params as { ref?: string }).ref === ref)?.businessOperationId;
    });
    await until('the published hand-off', () => client.getEvent(workflowID, handoffEventKey(bo), 1));
    if (o.killAt === 'waiting') {
      await kill();
      await ready;
    }
    if (o.killAt === 'ending') await polling; // the wait polls the ledger past its timeout: now the decision comes
    armed = true;
    // The person waits for the workflow's answer: a decision applied before a crash is never answered as refused.
    // The worker told once the decision is sent: its slowed poll (`ending`) returns only after it lies in the mailbox.
    const told = () => void (o.killAt === 'ending' && child?.connected && child.send({ type: 'sent' }, () => {}));
    const answer = await sendResolution(notifyingSent(client, told), workflowID, bo, o.decision, {
      awaitSeconds: 60,
    }).catch((e: Error) => e.message);
    const status = await until('the workflow to finish', async () => {
      const s = await client.getWorkflow(workflowID);
      return s && s.status !== 'PENDING' && s.status !== 'ENQUEUED' ? s : null;
    });
    const run = { killed, processes: pids.size, status, answer, ms: Date.now() - t0 };
    return await report(o, ledger, provider, bo, ref, run);
  } finally {
    stopping = true;
    await kill();
    await client.destroy().catch(() => undefined);
    await server.close().catch(() => undefined);
    await ledger.close().catch(() => undefined);
    rmSync(marker, { force: true });
    await dropSchemas(url, dbosSchema, ledgerSchema);
  }
}

/** The client, telling the drill when its decision was sent. */
function notifyingSent(client: DBOSClient, sent: () => void): DbosResolutionSender {
  return {
    send: async (...args) => {
      await client.send(...args);
      sent();
    },
    getWorkflow: (id) => client.getWorkflow(id),
    getEvent: (id, key, o) => client.getEvent(id, key, o),
  };
}

async function report(
  o: ResolutionDrillOptions,
  ledger: ReturnType<typeof createPostgresLedger>,
  provider: SandboxProvider,
  bo: BusinessOperationId,
  ref: string,
  run: {
    killed: number;
    processes: number;
    status: { status: string; output?: unknown; error?: unknown };
    answer: string;
    ms: number;
  },
): Promise<ResolutionDrillReport> {
  const row = await ledger.get(bo);
  const receipts = await ledger.receipts(bo);
  const mine = provider.records().filter((r) => r.paramsFingerprint === fingerprint({ ref }));
  const r: ResolutionDrillReport = {
    killAt: o.killAt,
    action: o.decision.action,
    killed: run.killed,
    processes: run.processes,
    answer: run.answer,
    workflowStatus: run.status.status,
    output: run.status.output ?? String(run.status.error ?? ''),
    records: mine.length,
    calls: provider.calls(),
    rowState: row?.state ?? null,
    leaseOwner: row?.leaseOwner ?? null,
    resolveReceipts: receipts.filter((x) => x.kind === 'resolve').length,
    ms: run.ms,
  };
  console.log(`[dbos resolution drill] ${JSON.stringify(r)}`);
  return r;
}
