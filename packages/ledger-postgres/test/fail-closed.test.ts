// Connection loss mid-operation, end to end through the runner: nothing reaches the provider without
// a durable `dispatched` row, and an operation whose `dispatched` write committed but whose answer was
// lost is found and finished by recovery, still as one provider record.
import { createRunner } from '@retrysafe/core';
import { LedgerError, type Ledger } from '@retrysafe/contract';
import { createSandboxAdapter, createSandboxProvider, type SandboxBehaviour } from '@retrysafe/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresLedger, type PostgresLedger } from '../src/index.js';
import { databaseUrl, dropSchema, freshSchema, startPgRelay } from './pg-test-db.js';

const url = databaseUrl();
const schema = freshSchema('failclosed');
const behaviour: SandboxBehaviour = { replays: false, retentionMs: null, parameterMatching: 'none', concurrency: 'duplicates', lookup: 'get-by-key' };
let direct: PostgresLedger;

beforeAll(async () => {
  direct = createPostgresLedger({ connectionString: url, schema, poolSize: 4 });
  await direct.ready();
});
afterAll(async () => {
  await direct?.close();
  await dropSchema(schema);
});

/** The ledger through a relay, with `onDispatch` run just before the `dispatched` write goes out. */
function interceptDispatch(ledger: Ledger, onDispatch: () => void): Ledger {
  return new Proxy(ledger, {
    get(target, key) {
      const v = target[key as keyof Ledger];
      if (key === 'markDispatched') return (...args: Parameters<Ledger['markDispatched']>) => (onDispatch(), target.markDispatched(...args));
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

function countingAdapter() {
  const provider = createSandboxProvider(behaviour);
  const inner = createSandboxAdapter({ provider });
  let calls = 0;
  const adapter = { ...inner, doExecute: (...a: Parameters<typeof inner.doExecute>) => (calls++, inner.doExecute(...a)) };
  return { provider, adapter, calls: () => calls };
}

describe('the runner on a PostgreSQL ledger whose connection is lost', () => {
  it('does not call the provider when the connection drops as `dispatched` is written', async () => {
    const relay = await startPgRelay(url);
    const through = createPostgresLedger({ connectionString: relay.url, schema, poolSize: 2, migrate: false, queryTimeoutMs: 3_000 });
    const { provider, adapter, calls } = countingAdapter();
    try {
      const runner = createRunner({ ledger: interceptDispatch(through, () => relay.cut()), owner: 'w-cut', policy: { leaseMs: 5_000 } });
      const err = await runner.run(adapter, 'records.create', { params: { ref: 'cut-1' } }).catch((e) => e);
      expect(LedgerError.isInstance(err)).toBe(true);
      expect(calls()).toBe(0);
      expect(provider.count()).toBe(0);
      const [rec] = await direct.list({ operation: 'sandbox.records.create' }).then((all) => all.filter((r) => (r.params as { ref?: string }).ref === 'cut-1'));
      expect(rec).toMatchObject({ state: 'claimed', attemptCount: 0 });
    } finally {
      await through.close().catch(() => undefined);
      await relay.close();
    }
  });

  it('does not call the provider when `dispatched` commits but the answer is lost; recovery then finishes it once', async () => {
    const relay = await startPgRelay(url);
    const through = createPostgresLedger({ connectionString: relay.url, schema, poolSize: 2, migrate: false, queryTimeoutMs: 1_500 });
    const { provider, adapter, calls } = countingAdapter();
    try {
      const runner = createRunner({ ledger: interceptDispatch(through, () => relay.dropResponses()), owner: 'w-lost', policy: { leaseMs: 300 } });
      const err = await runner.run(adapter, 'records.create', { params: { ref: 'lost-1' } }).catch((e) => e);
      expect(LedgerError.isInstance(err)).toBe(true);
      expect(calls()).toBe(0);

      const find = async () => (await direct.list()).find((r) => (r.params as { ref?: string }).ref === 'lost-1')!;
      expect(await find()).toMatchObject({ state: 'dispatched', attemptCount: 1 });

      await new Promise((r) => setTimeout(r, 400)); // the lease (300 ms) expires
      const recovery = createRunner({ ledger: direct, owner: 'recovery', policy: { leaseMs: 300 } });
      const report = await recovery.recover({ adapters: [adapter] });
      expect(report.map((r) => r.businessOperationId)).toContain((await find()).businessOperationId);
      // The lookup proves the first "dispatch" never reached the provider, so it is sent now, once.
      expect(await find()).toMatchObject({ state: 'succeeded' });
      expect(calls()).toBe(1);
      expect(provider.count()).toBe(1);
    } finally {
      await through.close().catch(() => undefined);
      await relay.close();
    }
  });
});
