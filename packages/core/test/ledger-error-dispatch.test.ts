// Issue 15 item 6: a LedgerError says whether the provider may have been called, set from what the call
// did; a garbage adapter object is a typed error, never a TypeError.

import {
  AdapterConfigurationError,
  type AdapterV1,
  type Ledger,
  LedgerError,
  RetrysafeError,
  UnsupportedSpecificationVersionError,
} from '@retrysafe/contract';
import { createMemoryLedger, createRunner, type Runner, RunnerConfigurationError } from '@retrysafe/core';
import { operationStatus, pendingHandoffs } from '@retrysafe/core/agent';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';

/** Fails the n-th call of `method` (1-based) with a LedgerError, as a full disk or a cut connection would (or `error`). */
function failing(inner: Ledger, method: string, nth = 1, error?: () => unknown): Ledger {
  let calls = 0;
  return new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (prop === method && ++calls === nth)
          return Promise.reject(error ? error() : new LedgerError(`${method}: disk full (injected)`));
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

const reject = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );

describe('LedgerError.providerMayHaveBeenCalled', () => {
  it('false when the claim fails: nothing was sent', async () => {
    const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
    const adapter = createSandboxAdapter({ provider });
    const err = await reject(
      createRunner({ ledger: failing(createMemoryLedger(), 'claim') }).run(adapter, 'records.create', {
        params: { ref: 'c-1' },
      }),
    );
    expect(LedgerError.isInstance(err) && err.providerMayHaveBeenCalled).toBe(false);
    expect(provider.calls()).toBe(0);
  });

  it('true once this call sent a request, even when the write that fails comes before the re-send', async () => {
    // First send answers 429 (not applied); the write before the second send fails: this call did send one request.
    const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
    const adapter = createSandboxAdapter({ provider });
    provider.failNext({ kind: 'not-applied', retryAfterMs: 1 });
    const err = await reject(
      createRunner({ ledger: failing(createMemoryLedger(), 'markDispatched'), random: () => 0.5 }).run(
        adapter,
        'records.create',
        { params: { ref: 'd-1' } },
      ),
    );
    expect(LedgerError.isInstance(err)).toBe(true);
    expect((err as LedgerError).providerMayHaveBeenCalled).toBe(true);
    expect(provider.calls()).toBe(1);
    expect(provider.count()).toBe(0);
  });

  it('true when the write of the outcome fails after the provider applied it, and JSON shows it', async () => {
    const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
    const adapter = createSandboxAdapter({ provider });
    const ledger = createMemoryLedger();
    const err = await reject(
      createRunner({ ledger: failing(ledger, 'setState') }).run(adapter, 'records.create', { params: { ref: 's-1' } }),
    );
    expect(LedgerError.isInstance(err)).toBe(true);
    expect((err as LedgerError).providerMayHaveBeenCalled).toBe(true);
    expect(JSON.parse(JSON.stringify(err))).toMatchObject({
      code: 'RETRYSAFE_LEDGER',
      providerMayHaveBeenCalled: true,
    });
    expect(provider.count()).toBe(1);
    // Running the same operation again once the ledger works does not send it twice.
    const again = await createRunner({ ledger }).run(adapter, 'records.create', { params: { ref: 's-1' } });
    expect(again.status).toBe('done');
    expect(provider.count()).toBe(1);
  });
});

describe('garbage adapters are typed errors, not TypeErrors', () => {
  // A well-formed adapter frame without operations; each case breaks one part of it.
  const frame = {
    specificationVersion: 'v1',
    provider: 'x',
    deriveProviderKey: () => null,
    doExecute: async () => ({}),
    doLookup: async () => ({}),
  };
  const cases: Array<[string, unknown]> = [
    ['null', null],
    ['a string', 'stripe'],
    ['no operations', frame],
    ['operations not an object', { ...frame, operations: 7 }],
    ['no doExecute', { ...frame, operations: {}, doExecute: undefined }],
    ['a garbage spec', { ...frame, operations: { 'records.create': 5 } }],
    ['no provider name', { ...frame, provider: undefined, operations: {} }],
    ['wrong spec version', { specificationVersion: 'v9', provider: 'x' }],
  ];
  it.each(cases)('run() with %s', async (_label, adapter) => {
    const err = await reject(
      createRunner({ ledger: createMemoryLedger() }).run(adapter as never, 'records.create', { params: { ref: 'g' } }),
    );
    expect(err).not.toBeInstanceOf(TypeError);
    expect(RetrysafeError.isInstance(err)).toBe(true);
    expect(
      RunnerConfigurationError.isInstance(err) ||
        AdapterConfigurationError.isInstance(err) ||
        UnsupportedSpecificationVersionError.isInstance(err),
    ).toBe(true);
  });
  // A spec is checked when a record needs it (a garbage spec is then handed off by recover's per-record guard).
  it.each(cases.filter(([l]) => l !== 'a garbage spec'))('recover() with %s', async (_label, adapter) => {
    const err = await reject(createRunner({ ledger: createMemoryLedger() }).recover({ adapters: [adapter as never] }));
    expect(err).not.toBeInstanceOf(TypeError);
    expect(RetrysafeError.isInstance(err)).toBe(true);
  });
});

/** The error JSON.parse throws on a row edited by hand: its message quotes the text around the break. */
const parseError = () => {
  try {
    JSON.parse('{"params":{"apiKey":sk_live_4eC39HqLyjWDarjtT1zdp7dc}}');
  } catch (e) {
    return e;
  }
};

describe("a ledger's raw JSON parse error (a row edited by hand, read by a ledger of one's own)", () => {
  it('is a LedgerError that quotes no part of the row, in its message, its cause or the log', async () => {
    const secret = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';
    const parse = () => {
      try {
        JSON.parse(`{"params":{"apiKey":${secret}}}`);
      } catch (e) {
        return e;
      }
    };
    const adapter = createSandboxAdapter({ provider: createSandboxProvider(REPLAYING_BEHAVIOUR) });
    const ledger = failing(createMemoryLedger(), 'setState', 1, parse);
    const logs: string[] = [];
    const runner = createRunner({ ledger, logger: (e) => void logs.push(e.message) });
    const err = await reject(runner.run(adapter, 'records.create', { params: { ref: 'r-1' } }));
    expect(LedgerError.isInstance(err) && err.providerMayHaveBeenCalled, String(err)).toBe(true);
    const shown = [...logs];
    for (let e = err; e; e = (e as Error).cause) shown.push(String((e as Error).message));
    for (const line of shown) expect(line).not.toContain('sk_live_4e');
  });

  it.each([
    ['run(): the claim', 'claim', (r: Runner, a: AdapterV1) => r.run(a, 'records.create', { params: { ref: 'r-2' } })],
    ['recover(): the listing', 'recoverCandidates', (r: Runner, a: AdapterV1) => r.recover({ adapters: [a] })],
    [
      'resolve(): the read',
      'get',
      (r: Runner, a: AdapterV1) => r.resolve('r-3', { action: 'abandon' }, { adapters: [a] }),
    ],
  ])('%s: a LedgerError (nothing sent) that quotes no part of the row', async (_name, method, call) => {
    const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
    const runner = createRunner({ ledger: failing(createMemoryLedger(), method, 1, parseError) });
    const err = await reject(call(runner, createSandboxAdapter({ provider })));
    expect(LedgerError.isInstance(err) && err.providerMayHaveBeenCalled === false, String(err)).toBe(true);
    for (let e = err; e; e = (e as Error).cause) expect(String((e as Error).message)).not.toContain('sk_live_4e');
    expect(provider.calls()).toBe(0);
  });
});

describe("the agent lookups on a ledger of one's own that throws a raw JSON parse error", () => {
  it.each([
    ['operationStatus', 'get', (l: Ledger) => operationStatus(l, 'r-4')],
    ['pendingHandoffs', 'list', (l: Ledger) => pendingHandoffs(l)],
  ])('%s: a LedgerError that quotes no part of the row', async (_name, method, call) => {
    const err = await reject(call(failing(createMemoryLedger(), method, 1, parseError)));
    expect(LedgerError.isInstance(err), String(err)).toBe(true);
    for (let e = err; e; e = (e as Error).cause) expect(String((e as Error).message)).not.toContain('sk_live_4e');
  });
});

describe('a SQLite write that fails after the provider call (the write lock held by another process past busyTimeoutMs)', () => {
  // The record is one JSON document, so a deeply nested result is stored too; the failure is a lock
  // that does not come free in time, as another process holding the file would cause.
  it('is a LedgerError with providerMayHaveBeenCalled, not a raw SqliteError', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { createSqliteLedger } = await import('@retrysafe/ledger-sqlite');
    const { DatabaseSync } = await import('node:sqlite');
    const dir = mkdtempSync(join(tmpdir(), 'retrysafe-locked-'));
    try {
      const path = join(dir, 'locked.db');
      const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
      const base = createSandboxAdapter({ provider });
      const ledger = createSqliteLedger({ path, busyTimeoutMs: 50 });
      const other = new DatabaseSync(path);
      // The provider performs the create; then another connection takes the write lock and keeps it.
      const adapter = {
        ...base,
        doExecute: async (...args: Parameters<typeof base.doExecute>) => {
          const out = await base.doExecute(...args);
          other.exec('BEGIN IMMEDIATE');
          return out;
        },
      } as typeof base;
      const err = await reject(
        createRunner({ ledger }).run(adapter, 'records.create', { params: { ref: 'locked-result' } }),
      );
      other.exec('ROLLBACK');
      other.close();
      expect(LedgerError.isInstance(err), String(err)).toBe(true);
      expect((err as LedgerError).providerMayHaveBeenCalled).toBe(true);
      expect(provider.count()).toBe(1);
      // A deeply nested result is stored.
      let deep: Record<string, unknown> = { leaf: 1 };
      for (let i = 0; i < 1200; i++) deep = { a: deep };
      const deepAdapter = {
        ...base,
        doExecute: async (...args: Parameters<typeof base.doExecute>) => ({
          ...(await base.doExecute(...args)),
          result: deep,
        }),
      } as typeof base;
      expect(
        (await createRunner({ ledger }).run(deepAdapter, 'records.create', { params: { ref: 'deep-result' } })).status,
      ).toBe('done');
      await ledger.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
