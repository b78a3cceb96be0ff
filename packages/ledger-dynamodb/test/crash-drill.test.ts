// The crash drill on DynamoDB: 6 worker processes × the same 60 business operations on one table in
// dynalite, against a sandbox provider with NO idempotency of its own (every request it receives is a
// new record): only the ledger's claims, leases and fences keep it at one record per operation.
// Three workers, drawn by a seeded random, start first and are SIGKILLed at random points: at a random
// provider call, either before the request leaves (dispatched, nothing sent) or after the provider committed it (the
// answer never recorded), a random moment later. Once their leases expire, recover() must leave
// nothing stuck and no duplicate: exactly one record per operation.
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { RECOVERABLE_STATES } from '@retrysafe/contract/ledger';
import { createRunner } from '@retrysafe/core';
import {
  createSandboxAdapter,
  createSandboxProvider,
  FORGETFUL_BEHAVIOUR,
  type SandboxBehaviour,
  startSandboxServer,
} from '@retrysafe/sandbox';
import { afterAll, expect, it } from 'vitest';
import { createDynamoDbLedger } from '../src/index.js';
import { startDynalite } from './dynalite.js';

const WORKERS = 6;
const OPS = 60;
/** The survivors' lease: longer than their whole run, so none takes over from another living worker. */
const LEASE_MS = 10_000;
/** The victims' lease: the survivors finish long before it ends, so the dead workers' operations wait for recovery. */
const VICTIM_LEASE_MS = 30_000;
/** A request reaches the loopback sandbox within a second or never: a later "not found" proves absence. */
const behaviour: SandboxBehaviour = { ...FORGETFUL_BEHAVIOUR, lookup: 'get-by-key', lateApplyMs: 1_000 };

const db = await startDynalite();
const sandbox = await startSandboxServer({ provider: createSandboxProvider(behaviour), port: 0 });
afterAll(async () => {
  await sandbox.close();
  await db.close();
});

let seed = Number(process.env.CRASH_SEED ?? 43);
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};

type Msg = { hung?: string; tally?: { done: number; 'in-progress': number; 'handed-off': number; errors: string[] } };

function startWorker(
  table: string,
  worker: number,
  victim: { hangAt: number; phase: string; killAfterMs: number } | null,
) {
  const child: ChildProcess = fork(fileURLToPath(new URL('./fixtures/crash-worker.mjs', import.meta.url)), [], {
    env: {
      ...process.env,
      DYNAMODB_ENDPOINT: db.endpoint,
      TABLE: table,
      SANDBOX_URL: sandbox.url,
      OPS: String(OPS),
      WORKER: String(worker),
      LEASE_MS: String(victim ? VICTIM_LEASE_MS : LEASE_MS),
      BEHAVIOUR: JSON.stringify(behaviour),
      ...(victim ? { HANG_AT: String(victim.hangAt), PHASE: victim.phase } : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: Msg[] = [];
  let onHung: () => void = () => undefined;
  const hung = new Promise<void>((resolve) => {
    onHung = resolve;
  });
  child.on('message', (m: Msg) => {
    messages.push(m);
    if (m.hung && victim && messages.filter((x) => x.hung).length === 1) {
      onHung();
      setTimeout(() => child.kill('SIGKILL'), victim.killAfterMs);
    }
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { messages, exit, hung };
}

it('workers SIGKILLed at random points: after recovery, 0 duplicates and 0 stuck', { timeout: 180_000 }, async () => {
  const table = await db.table('crash');
  const victims = new Map<number, { hangAt: number; phase: string; killAfterMs: number }>();
  while (victims.size < 3)
    victims.set(Math.floor(random() * WORKERS), {
      hangAt: 1 + Math.floor(random() * 4),
      phase: random() < 0.5 ? 'before-send' : 'after-send',
      killAfterMs: Math.floor(random() * 150),
    });
  // The victims start first and the others once every victim has hung: on a loaded machine a late victim could find
  // its operations done by the others and exit before its call (as the PostgreSQL drill saw). Each victim hangs by
  // its 7th call (its four lanes stop at the HANG_AT-th), so three use at most 21 of the 60 operations.
  const started = new Map([...victims].map(([w, v]) => [w, startWorker(table, w, v)]));
  await Promise.race([
    Promise.all([...started.values()].map((v) => v.hung)),
    Promise.all([...started.values()].map((v) => v.exit)).then(() => {
      throw new Error('a victim exited before it hung');
    }),
  ]);
  const workers = Array.from({ length: WORKERS }, (_, w) => started.get(w) ?? startWorker(table, w, null));
  const exits = await Promise.all(workers.map((w) => w.exit));
  for (const [w, e] of exits.entries())
    expect(e, `worker ${w}`).toEqual(victims.has(w) ? { code: null, signal: 'SIGKILL' } : { code: 0, signal: null });
  const tallies = workers.filter((_, w) => !victims.has(w)).map((w) => w.messages.find((m) => m.tally)!.tally!);
  expect(tallies.flatMap((t) => t.errors)).toEqual([]);
  expect(tallies.reduce((sum, t) => sum + t['handed-off'], 0)).toBe(0);

  // What the dead workers left, still leased: nobody may take it yet.
  const ledger = createDynamoDbLedger({ table, client: db.client() });
  const held = await ledger.list({ states: RECOVERABLE_STATES });
  expect(held.length).toBeGreaterThan(0);
  expect(await ledger.recoverCandidates(Date.now())).toEqual([]);
  // A recovering worker whose clock reads past the dead workers' leases (leases are judged on the workers'
  // clocks) and past the card's clock-skew margin on top (a minute by default): another clock wrote those
  // leases, so only then does a "not found" prove that a dead worker's request never arrived.
  const later = VICTIM_LEASE_MS + 2 * 60_000;
  const clock = {
    now: () => Date.now() + later,
    sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms))),
  };
  const runner = createRunner({ ledger, clock, owner: 'recovery', policy: { leaseMs: LEASE_MS } });
  const recoverStart = Date.now();
  const report = await runner.recover({
    adapters: [createSandboxAdapter({ baseUrl: sandbox.url, behaviour, timeoutMs: 5_000 })],
  });

  const all = await ledger.list();
  expect(all).toHaveLength(OPS);
  expect(await ledger.list({ states: RECOVERABLE_STATES })).toEqual([]); // 0 stuck
  expect(all.filter((r) => r.state !== 'succeeded').map((r) => `${r.businessOperationId}:${r.state}`)).toEqual([]);
  // 0 duplicates: one record per operation at the provider, and the ledger points at it.
  const records = sandbox.provider.records();
  expect(records).toHaveLength(OPS);
  expect(new Set(records.map((r) => r.key)).size).toBe(OPS);
  expect(new Set(all.map((r) => r.providerRef))).toEqual(new Set(records.map((r) => r.id)));
  console.log(
    `dynamodb crash drill: victims ${[...victims].map(([w, v]) => `w${w}@call${v.hangAt}/${v.phase}+${v.killAfterMs}ms`).join(', ')}; ${held.length} held by the dead, ${report.length} recovered in ${Date.now() - recoverStart} ms; ${all.filter((r) => r.attemptCount > 1).length} re-sent after a not-found lookup`,
  );
  await ledger.close();
});
