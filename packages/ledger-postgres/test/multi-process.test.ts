// 8 worker processes × the same 200 business operations on one PostgreSQL ledger, against a sandbox
// provider that has NO idempotency of its own (every request it receives is a new record): the only
// thing that keeps it at one record per operation is the ledger's claims, leases and fencing.
// One worker is SIGKILLed while its provider calls have reached the sandbox but their answers were
// never recorded. It ran with a lease longer than the others' whole run, so its operations are still
// held when they finish: only after that lease expires does recover() reconcile them, and it must
// leave nothing outside a terminal state, with still exactly one record per operation.
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { BusinessOperationId } from '@retrysafe/contract';
import { RECOVERABLE_STATES } from '@retrysafe/contract/ledger';
import { createRunner } from '@retrysafe/core';
import {
  createSandboxAdapter,
  createSandboxProvider,
  FORGETFUL_BEHAVIOUR,
  type SandboxBehaviour,
  type SandboxServer,
  startSandboxServer,
} from '@retrysafe/sandbox';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresLedger, type PostgresLedger } from '../src/index.js';
import { databaseUrl, dropSchema, freshSchema } from './pg-test-db.js';

const url = databaseUrl();
const WORKERS = 8;
const OPS = 200;
/**
 * The survivors' lease: longer than the sandbox client's timeout (5 s) and any plausible stall of a
 * loaded CI machine, because a lease is all that stops a second worker from taking over an operation
 * whose first request is still on its way (the sandbox here has no idempotency to fold the two).
 */
const LEASE_MS = 10_000;
/** The victim's lease: long enough that the survivors finish before it expires, so recover() has work. */
const VICTIM_LEASE_MS = 120_000;
const VICTIM = 3;
const behaviour: SandboxBehaviour = { ...FORGETFUL_BEHAVIOUR, lookup: 'get-by-key' };

const schema = freshSchema('multiproc');
let ledger: PostgresLedger;
let sandbox: SandboxServer;

beforeAll(async () => {
  ledger = createPostgresLedger({ connectionString: url, schema, poolSize: 4 });
  await ledger.ready();
  sandbox = await startSandboxServer({ provider: createSandboxProvider(behaviour), port: 0 });
});
afterAll(async () => {
  await ledger?.close();
  await sandbox?.close();
  await dropSchema(schema);
});

/** Ends now (on the database clock) the leases of the owners matching `owner` (a LIKE pattern). */
async function expireLeases(owner: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(
      `UPDATE "${schema}".retrysafe_operations SET lease_expires_at = (extract(epoch from clock_timestamp()) * 1000)::bigint - 1 WHERE lease_owner LIKE $1`,
      [owner],
    );
  } finally {
    await c.end();
  }
}

interface Tally {
  done: number;
  adopted: number;
  'in-progress': number;
  'handed-off': number;
  errors: string[];
}
type Msg = { hung?: string; tally?: Tally };

function startWorker(
  worker: number,
  hangAt: number,
): { child: ChildProcess; messages: Msg[]; exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }> } {
  const child = fork(fileURLToPath(new URL('./fixtures/mp-worker.mjs', import.meta.url)), [], {
    env: {
      ...process.env,
      DATABASE_URL: url,
      SCHEMA: schema,
      SANDBOX_URL: sandbox.url,
      OPS: String(OPS),
      WORKER: String(worker),
      LEASE_MS: String(hangAt ? VICTIM_LEASE_MS : LEASE_MS),
      BEHAVIOUR: JSON.stringify(behaviour),
      ...(hangAt ? { HANG_AT: String(hangAt) } : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: Msg[] = [];
  child.on('message', (m: Msg) => messages.push(m));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, messages, exit };
}

describe('8 worker processes on one PostgreSQL ledger', () => {
  it('make exactly one provider record per business operation; after a SIGKILL and lease expiry, recover() leaves nothing stuck', {
    timeout: 180_000,
  }, async () => {
    const t0 = Date.now();
    // The victim starts first: on a loaded machine a late victim could find every operation already done by
    // the others and exit before its 3rd provider call (seen in 2 of 6 loaded runs). The others start the
    // moment it hangs, so they still collide with it on the operations it holds.
    const victim = startWorker(VICTIM, 3);
    let workers: ReturnType<typeof startWorker>[] = [];

    // From its 3rd provider call on, the victim's calls reach the sandbox and hang; kill it shortly after the first.
    const hungId = await new Promise<string>((resolve, reject) => {
      victim.child.on('message', (m: Msg) => {
        if (m.hung && victim.child.exitCode === null && !victim.child.killed) {
          if (workers.length > 0) return; // its other lanes hang too: act on the first
          workers = Array.from({ length: WORKERS }, (_, w) => (w === VICTIM ? victim : startWorker(w, 0)));
          setTimeout(() => victim.child.kill('SIGKILL'), 200);
          resolve(m.hung);
        }
      });
      void victim.exit.then(() => reject(new Error('the victim exited before it was killed')));
    });
    expect(await victim.exit).toEqual({ code: null, signal: 'SIGKILL' });
    const killedAt = Date.now() - t0;

    const exits = await Promise.all(workers.filter((_, w) => w !== VICTIM).map((w) => w.exit));
    const survivorsDone = Date.now() - t0;
    expect(exits.every((e) => e.code === 0)).toBe(true);
    const tallies = workers.filter((_, w) => w !== VICTIM).map((w) => w.messages.find((m) => m.tally)!.tally!);
    expect(tallies.flatMap((t) => t.errors)).toEqual([]);
    expect(tallies.reduce((n, t) => n + t['handed-off'], 0)).toBe(0);
    for (const t of tallies) expect(t.done + t['in-progress']).toBe(OPS);

    // The operation the victim died on: dispatched, its record at the provider, its response never recorded.
    const stuck = await ledger.get(hungId as BusinessOperationId);
    expect(stuck).toMatchObject({
      state: 'dispatched',
      attemptCount: 1,
      leaseOwner: expect.stringMatching(new RegExp(`^mp-worker-${VICTIM}:`)),
    });

    // What the dead worker still holds: nothing else is left unfinished.
    const held = await ledger.list({ states: RECOVERABLE_STATES });
    if (held.some((r) => (r.leaseExpiresAt ?? 0) <= Date.now())) {
      throw new Error(
        `the survivors took ${survivorsDone} ms, past the victim's lease (${VICTIM_LEASE_MS} ms): this machine is too slow for the test as set; raise VICTIM_LEASE_MS`,
      );
    }
    expect(held.length).toBeGreaterThan(0);
    for (const r of held) expect(r.leaseOwner).toMatch(new RegExp(`^mp-worker-${VICTIM}:`));
    expect(await ledger.recoverCandidates(Date.now())).toEqual([]); // leases still live: recovery must not touch them yet

    // Those leases run out, then recovery runs: their end is moved to now on the database clock that wrote them,
    // as waiting them out would (the victim's lease is long so that slow survivors still finish inside it).
    await expireLeases(`mp-worker-${VICTIM}:%`);
    expect((await ledger.recoverCandidates(Date.now())).length).toBe(held.length);
    const adapter = createSandboxAdapter({ baseUrl: sandbox.url, behaviour, timeoutMs: 5_000 });
    const runner = createRunner({ ledger, owner: 'recovery', policy: { leaseMs: LEASE_MS } });
    const report = await runner.recover({ adapters: [adapter] });
    expect(report.map((x) => x.businessOperationId).sort()).toEqual(held.map((r) => r.businessOperationId).sort());

    const all = await ledger.list();
    expect(all).toHaveLength(OPS);
    expect(await ledger.list({ states: RECOVERABLE_STATES })).toEqual([]);
    expect(all.filter((r) => r.state !== 'succeeded').map((r) => `${r.businessOperationId}:${r.state}`)).toEqual([]);
    expect((await ledger.get(hungId as BusinessOperationId))!.state).toBe('succeeded');

    // Exactly one record per business operation at the provider, and the ledger points at it.
    expect(sandbox.provider.count()).toBe(OPS);
    const records = sandbox.provider.records();
    expect(new Set(records.map((r) => r.key)).size).toBe(OPS);
    expect(new Set(all.map((r) => r.providerRef))).toEqual(new Set(records.map((r) => r.id)));
    // More than one provider call happens only where the victim's call never reached the sandbox
    // (killed between `dispatched` and the request): the lookup said not-found, so it was sent again.
    const resent = all.filter((r) => r.attemptCount > 1);
    for (const r of resent) {
      const receipts = await ledger.receipts(r.businessOperationId);
      expect(receipts[0]?.outcome, r.businessOperationId).toBe('not-found');
      expect(
        receipts.filter((x) => (x.kind === 'dispatch' || x.kind === 'resend') && x.outcome === 'succeeded'),
      ).toHaveLength(1);
    }
    // The operation the victim died on had reached the provider: it is adopted by lookup, never re-sent.
    const hung = await ledger.get(hungId as BusinessOperationId);
    expect(hung!.attemptCount).toBe(1);
    expect((await ledger.receipts(hungId as BusinessOperationId)).map((x) => x.outcome)).toContain('found');
    console.log(
      `multi-process: victim killed at ${killedAt} ms, survivors done at ${survivorsDone} ms, recovered at ${Date.now() - t0} ms; ${report.length} recovered; ${resent.length} re-sent after a not-found lookup; victim's operation: ${(await ledger.receipts(hungId as BusinessOperationId)).map((x) => `${x.kind}:${x.outcome}`).join(', ')}`,
    );
  });
});
