// The final `succeeded` of an operation whose card has a lookup is a deferrable write
// (StatePatch.durability, completionRecoverable): the SQLite ledger commits it at synchronous=NORMAL,
// so a clean operation waits for the disk once (its claim), not twice. These tests count the fsync
// calls of a real process (strace), and show that losing such a write entirely — the state a power loss
// right after it would leave — costs no second effect: the next run looks the operation up and adopts it.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { asBusinessOperationId, LedgerError } from '@retrysafe/contract';
import { completionRecoverable } from '@retrysafe/contract/rules';
import { createRunner, verifyReceiptChain } from '@retrysafe/core';
import {
  createSandboxAdapter,
  createSandboxProvider,
  type SandboxBehaviour,
  startSandboxServer,
} from '@retrysafe/sandbox';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteLedger } from '../src/index.js';
import { claimInput } from './helpers.js';

const WORKER = fileURLToPath(new URL('./fixtures/fsync-worker.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'retrysafe-deferred-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

const behaviour = (lookup: SandboxBehaviour['lookup']): SandboxBehaviour => ({
  replays: true,
  retentionMs: null,
  parameterMatching: 'mismatch-error',
  concurrency: 'rejects-in-progress',
  lookup,
});

function strace(): string {
  for (const p of ['/usr/bin/strace', '/bin/strace']) if (existsSync(p)) return p;
  throw new Error(
    'these tests count fsync calls with strace: install it (.ci/test-env.sh does: apt-get install strace)',
  );
}

/** fsync + fdatasync calls of a process running `ops` clean operations (and opening and closing the ledger). */
function fsyncs(
  ops: number,
  lookup: SandboxBehaviour['lookup'],
  deferrableWrites?: 'defer' | 'sync',
): { syncs: number; done: number; records: number } {
  const out = join(dir, `strace-${++n}.txt`);
  const stdout = execFileSync(
    strace(),
    ['-f', '-qq', '-c', '-o', out, '-e', 'trace=fsync,fdatasync', process.execPath, WORKER],
    {
      env: {
        ...process.env,
        RETRYSAFE_FSYNC: JSON.stringify({ dbPath: join(dir, `fsync-${n}.db`), ops, lookup, deferrableWrites }),
      },
      encoding: 'utf8',
    },
  );
  let syncs = 0;
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[f.length - 1] === 'fsync' || f[f.length - 1] === 'fdatasync') syncs += Number(f[3]);
  }
  return { syncs, ...(JSON.parse(stdout) as { done: number; records: number }) };
}

describe('SQLite ledger at synchronous=FULL: deferrable completions', () => {
  const OPS = 60;

  it('a clean operation whose card has a lookup waits for the disk once: its claim', () => {
    const r = fsyncs(OPS, 'get-by-key');
    expect(r).toMatchObject({ done: OPS, records: OPS });
    // One per claim, plus opening, closing and any checkpoint; two per operation would be 2 × OPS.
    expect(r.syncs).toBeGreaterThanOrEqual(OPS);
    expect(r.syncs).toBeLessThan(OPS * 1.3);
  });

  it("deferrableWrites: 'sync' waits for every commit, the completion too", () => {
    const r = fsyncs(OPS, 'get-by-key', 'sync');
    expect(r).toMatchObject({ done: OPS, records: OPS });
    expect(r.syncs).toBeGreaterThanOrEqual(2 * OPS);
  });

  it('a card without a lookup keeps its completion synced: a lost one would need a person', () => {
    const r = fsyncs(OPS, 'none');
    expect(r).toMatchObject({ done: OPS, records: OPS });
    expect(r.syncs).toBeGreaterThanOrEqual(2 * OPS);
  });

  it('a completion lost after the caller was told (the files as they were before it) is looked up and adopted, never sent again', async () => {
    const provider = createSandboxProvider(behaviour('get-by-key'));
    const server = await startSandboxServer({ provider });
    const path = join(dir, 'lost.db');
    const snapshot = join(dir, 'lost-snapshot');
    try {
      const adapter = createSandboxAdapter({
        baseUrl: server.url,
        behaviour: behaviour('get-by-key'),
        timeoutMs: 5000,
      });
      expect(completionRecoverable(adapter.operations['records.create']!.card)).toBe(true);
      // The files as the disk holds them once the claim's commit returned: copied as the request goes out.
      const copying = {
        ...adapter,
        async doExecute(...args: Parameters<typeof adapter.doExecute>) {
          copyFileSync(path, `${snapshot}.db`);
          copyFileSync(`${path}-wal`, `${snapshot}.db-wal`);
          return adapter.doExecute(...args);
        },
      };
      const first = createSqliteLedger({ path });
      const r1 = await createRunner({ ledger: first, owner: 'w1', policy: { leaseMs: 200 } }).run(
        copying,
        'records.create',
        { params: { ref: 'lost-1' } },
      );
      expect(r1).toMatchObject({ status: 'done', adopted: false, attempts: 1 });
      await first.close();
      // Power loss: nothing after the claim reached the disk (the deferred completion and its receipt are gone).
      for (const f of [path, `${path}-wal`, `${path}-shm`]) rmSync(f, { force: true });
      copyFileSync(`${snapshot}.db`, path);
      copyFileSync(`${snapshot}.db-wal`, `${path}-wal`);
      const second = createSqliteLedger({ path });
      const stored = await second.get(r1.businessOperationId);
      expect(stored).toMatchObject({ state: 'dispatched', attemptCount: 1 });
      await new Promise((resolve) => setTimeout(resolve, 250)); // the dead worker's lease ends
      const r2 = await createRunner({ ledger: second, owner: 'w2', policy: { leaseMs: 200 } }).run(
        adapter,
        'records.create',
        { params: { ref: 'lost-1' } },
      );
      expect(r2).toMatchObject({
        status: 'done',
        adopted: true,
        providerRef: r1.status === 'done' ? r1.providerRef : null,
      });
      expect(provider.calls()).toBe(1);
      expect(provider.count()).toBe(1);
      expect(provider.lookups()).toBeGreaterThanOrEqual(1);
      const receipts = await second.receipts(r1.businessOperationId);
      expect(verifyReceiptChain(receipts)).toEqual({ ok: true });
      expect(receipts.map((r) => r.kind)).toContain('lookup');
      expect(await second.get(r1.businessOperationId)).toMatchObject({ state: 'succeeded', attemptCount: 1 });
      await second.close();
    } finally {
      await server.close();
    }
  });

  it('deferrableWrites other than defer or sync is a typed error, and nothing is opened', () => {
    const path = join(dir, 'bad-option.db');
    expect(() => createSqliteLedger({ path, deferrableWrites: 'sometimes' as 'defer' })).toThrow(LedgerError);
    expect(existsSync(path)).toBe(false);
  });
});

describe('SQLite ledger: a deferred write on a connection that breaks', () => {
  // node:sqlite made to fail below the ledger: its write with an I/O error, its restoring
  // `PRAGMA synchronous = FULL` too, as on a connection whose file went away. The error must say what broke.
  type Proto = {
    exec(this: unknown, sql: string): unknown;
    prepare(this: unknown, sql: string): { run(...a: unknown[]): unknown };
  };
  // The class the ledger opens its connection with, patched below the ledger.
  const proto = DatabaseSync.prototype as unknown as Proto;

  /**
   * Opens a ledger whose driver fails once `arm` is called: its next write (when `begin`) — a BEGIN
   * IMMEDIATE, or a write statement that is its own transaction (the UPDATE of a row the ledger knows) —
   * and every restore of FULL (exec'd or prepared). Runs `fn`; the driver is itself again afterwards.
   */
  async function broken<T>(
    path: string,
    begin: boolean,
    fn: (ledger: ReturnType<typeof createSqliteLedger>, arm: () => void, path: string) => Promise<T>,
  ): Promise<T> {
    const { exec, prepare } = proto;
    let armed = false;
    let beginFails = begin;
    const ioError = () => {
      beginFails = false;
      return Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
    };
    const notOpen = () => Object.assign(new Error('the database connection is not open'), { code: 'SQLITE_MISUSE' });
    proto.exec = function (sql) {
      if (armed && beginFails && sql === 'BEGIN IMMEDIATE') throw ioError();
      if (armed && sql === 'PRAGMA synchronous = FULL') throw notOpen();
      return exec.call(this, sql);
    };
    proto.prepare = function (sql) {
      const st = prepare.call(this, sql) as {
        run(...a: unknown[]): unknown;
        get(...a: unknown[]): unknown;
        all(...a: unknown[]): unknown;
      };
      if (sql === 'PRAGMA synchronous = FULL') {
        return {
          run: (...a: unknown[]) => {
            if (armed) throw notOpen();
            return st.run(...a);
          },
        };
      }
      if (!/^\s*(INSERT|UPDATE)\b/.test(sql)) return st;
      return {
        get: (...a: unknown[]) => st.get(...a),
        all: (...a: unknown[]) => st.all(...a),
        run: (...a: unknown[]) => {
          if (armed && beginFails) throw ioError();
          return st.run(...a);
        },
      };
    };
    try {
      const ledger = createSqliteLedger({ path });
      return await fn(ledger, () => (armed = true), path);
    } finally {
      proto.exec = exec;
      proto.prepare = prepare;
    }
  }
  /**
   * Claims `id`, arms the failure, then completes it deferred. `known`: through the ledger that claimed
   * it (it knows the row: its lone UPDATE); else the claim is another connection's, so the completion
   * reads the row in BEGIN IMMEDIATE first.
   */
  const finish =
    (id: string, known = true) =>
    async (ledger: ReturnType<typeof createSqliteLedger>, arm: () => void, path: string) => {
      const claimer = known ? ledger : createSqliteLedger({ path });
      const c = await claimer.claim(claimInput(id));
      if (!known) await claimer.close();
      if (c.kind !== 'claimed') throw new Error(c.kind);
      arm();
      return ledger
        .setState(
          { businessOperationId: c.record.businessOperationId, fence: c.record.fence },
          { state: 'succeeded', now: 1_001, lastOutcome: 'succeeded', durability: 'deferrable' },
        )
        .then(
          () => null,
          (e: unknown) => e,
        );
    };

  it.each([
    ['its lone UPDATE (a row the ledger knows)', true],
    ['its BEGIN (a row it reads first)', false],
  ])(
    'a write that fails to start — %s — is reported as itself, with nothing written, and the ledger closes',
    async (_, known) => {
      const path = join(dir, `broken-begin-${known}.db`);
      const err = await broken(path, true, finish('begin', known));
      expect(err).toBeInstanceOf(LedgerError);
      const e = err as LedgerError;
      expect(e.message).toMatch(/setState/);
      expect(e.message).toMatch(/nothing written: disk I\/O error/);
      expect(e.message).toMatch(
        /synchronous = FULL could not be restored \(the database connection is not open\): the ledger is closed/,
      );
      expect((e.cause as { code?: string }).code).toBe('SQLITE_IOERR');
      // The claim stands as it was: the operation is still dispatched, reconcilable by the next run.
      const again = createSqliteLedger({ path });
      try {
        expect(await again.get(asBusinessOperationId('begin'))).toMatchObject({ state: 'dispatched', fence: 1 });
      } finally {
        await again.close();
      }
    },
  );

  it('a committed write whose restore fails says it is committed', async () => {
    const path = join(dir, 'broken-restore.db');
    const err = await broken(path, false, finish('restore'));
    expect(err).toBeInstanceOf(LedgerError);
    expect((err as Error).message).toMatch(/\(the write is committed\); then synchronous = FULL could not be restored/);
    const again = createSqliteLedger({ path });
    try {
      expect(await again.get(asBusinessOperationId('restore'))).toMatchObject({ state: 'succeeded' });
    } finally {
      await again.close();
    }
  });
});
