import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { verifyReceiptChain } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import {
  createSandboxProvider,
  FORGETFUL_BEHAVIOUR,
  type SandboxBehaviour,
  startSandboxServer,
} from '@retrysafe/sandbox';
import { afterAll, describe, expect, it } from 'vitest';

const WORKER = fileURLToPath(new URL('./fixtures/worker.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'retrysafe-mp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Msg = { type: string; [k: string]: unknown };

function spawnWorker(
  mode: string,
  env: Record<string, unknown>,
): { child: ChildProcess; messages: Msg[]; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> } {
  const child = fork(WORKER, [mode], {
    env: { ...process.env, RETRYSAFE_WORKER: JSON.stringify(env) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: Msg[] = [];
  child.on('message', (m) => messages.push(m as Msg));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, messages, exited };
}

const until = async (cond: () => boolean) => {
  while (!cond()) await new Promise((r) => setTimeout(r, 10));
};

describe('separate OS processes on one SQLite ledger', () => {
  it('6 processes run the same business operation at once: exactly one dispatch, all 6 get the same result', async () => {
    const behaviour: SandboxBehaviour = { ...FORGETFUL_BEHAVIOUR, lookup: 'get-by-key' };
    const provider = createSandboxProvider(behaviour);
    const server = await startSandboxServer({ provider });
    try {
      const env = { dbPath: join(dir, 'concurrent.db'), baseUrl: server.url, behaviour, ref: 'same-order-1' };
      createSqliteLedger({ path: env.dbPath }).close(); // create the schema once, before the race
      const workers = Array.from({ length: 6 }, () => spawnWorker('run', env));
      await until(() => workers.every((w) => w.messages.some((m) => m.type === 'ready')));
      for (const w of workers) w.child.send('go');
      const exits = await Promise.all(workers.map((w) => w.exited));
      expect(exits.every((e) => e.code === 0)).toBe(true);
      const results = workers.map((w) => w.messages.find((m) => m.type === 'result')!);
      expect(provider.calls()).toBe(1);
      expect(provider.count()).toBe(1);
      expect(results.map((r) => r.status)).toEqual(Array(6).fill('done'));
      expect(new Set(results.map((r) => r.providerRef))).toEqual(new Set([provider.records()[0]!.id]));
      expect(results.filter((r) => r.adopted === false)).toHaveLength(1);
      const ledger = createSqliteLedger({ path: env.dbPath });
      const [rec] = await ledger.list();
      expect(rec).toMatchObject({ state: 'succeeded', attemptCount: 1 });
      const receipts = await ledger.receipts(rec!.businessOperationId);
      expect(receipts).toHaveLength(1);
      expect(verifyReceiptChain(receipts)).toEqual({ ok: true });
      await ledger.close();
    } finally {
      await server.close();
    }
  });
});

describe('crash drill: a worker SIGKILLed mid-operation, recover() in a new process', () => {
  // Loopback, no proxy: a request that reached the sandbox is applied at once, so the card can bound late applies (1 s).
  const behaviour: SandboxBehaviour = { ...FORGETFUL_BEHAVIOUR, lookup: 'get-by-key', lateApplyMs: 1000 };

  for (const [crashAt, recordsAtCrash, expectedAction] of [
    ['after-dispatched', 0, 'completed'],
    ['after-provider', 1, 'adopted'],
  ] as const) {
    it(`killed right ${crashAt.replace('-', ' ')} ⇒ recovery reconciles to exactly one provider record`, async () => {
      const provider = createSandboxProvider(behaviour);
      const server = await startSandboxServer({ provider });
      try {
        const env = {
          dbPath: join(dir, `crash-${crashAt}.db`),
          baseUrl: server.url,
          behaviour,
          ref: `crash-${crashAt}`,
          crashAt,
          leaseMs: 300,
        };
        const crasher = spawnWorker('crash', env);
        const exit = await crasher.exited;
        expect(exit.signal).toBe('SIGKILL');
        expect(crasher.messages).toEqual([]);
        expect(provider.count()).toBe(recordsAtCrash);
        const left = createSqliteLedger({ path: env.dbPath });
        expect((await left.list()).map((r) => r.state)).toEqual(['dispatched']);
        await left.close();

        const recoverer = spawnWorker('recover', { ...env, crashAt: undefined });
        expect((await recoverer.exited).code).toBe(0);
        const report = recoverer.messages.find((m) => m.type === 'result')!;
        expect(report.reports).toMatchObject([
          { from: 'dispatched', to: 'succeeded', action: expectedAction, status: 'done' },
        ]);
        expect(report.states).toEqual(['succeeded']);
        expect(provider.count()).toBe(1);
      } finally {
        await server.close();
      }
    });
  }
});
