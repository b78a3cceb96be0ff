// Connection loss mid-operation, end to end through the runner: nothing reaches the provider without
// a durable `dispatched` row, and an operation whose `dispatched` write committed but whose answer was
// lost is found and finished by recovery, still as one provider record.

import {
  asBusinessOperationId,
  type ClaimInput,
  fingerprint,
  type Ledger,
  LedgerError,
  pickIntent,
} from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import {
  createSandboxAdapter,
  createSandboxProvider,
  FORGETFUL_BEHAVIOUR,
  type SandboxBehaviour,
} from '@retrysafe/sandbox';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresLedger, type PostgresLedger } from '../src/index.js';
import { claimOf, databaseUrl, dropSchema, freshSchema, startPgRelay } from './pg-test-db.js';

const url = databaseUrl();
const schema = freshSchema('failclosed');
// lateApplyMs 0: the in-process sandbox applies a request when it is called; nothing can land later.
const behaviour: SandboxBehaviour = { ...FORGETFUL_BEHAVIOUR, lookup: 'get-by-key', lateApplyMs: 0 };
let direct: PostgresLedger;

beforeAll(async () => {
  direct = createPostgresLedger({
    connectionString: url,
    schema,
    poolSize: 4,
    leaseClock: 'caller' /* writes a dead worker's claim from the past */,
  });
  await direct.ready();
});
afterAll(async () => {
  await direct?.close();
  await dropSchema(schema);
});

/**
 * The ledger through a relay, with `onDispatch` run just before the `dispatched` write goes out:
 * `claim` for a new operation the claim creates already dispatched (`dispatch: true`), or `markDispatched`.
 */
function interceptDispatch(ledger: Ledger, via: 'claim' | 'markDispatched', onDispatch: () => void): Ledger {
  return new Proxy(ledger, {
    get(target, key) {
      const v = target[key as keyof Ledger];
      if (key === 'markDispatched' && via === 'markDispatched')
        return (...args: Parameters<Ledger['markDispatched']>) => (onDispatch(), target.markDispatched(...args));
      if (key === 'claim' && via === 'claim')
        return (input: ClaimInput) => (expect(input.dispatch).toBe(true), onDispatch(), target.claim(input));
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/** `calls(id)` counts the sends of one operation; `calls()` all of them. */
function countingAdapter() {
  const provider = createSandboxProvider(behaviour);
  const inner = createSandboxAdapter({ provider });
  const sent: string[] = [];
  const adapter = {
    ...inner,
    doExecute: (...a: Parameters<typeof inner.doExecute>) => (
      sent.push(a[2].businessOperationId), inner.doExecute(...a)
    ),
  };
  const calls = (id?: string) => sent.filter((x) => id === undefined || x === id).length;
  return { provider, adapter, calls };
}

/**
 * How the runner reaches its `dispatched` write: for a new operation the claim itself creates it
 * dispatched; for one left `claimed` by a worker that died before dispatching (lease expired), the
 * runner takes it over and calls markDispatched.
 */
const paths = [
  { path: 'a new operation (dispatched by its claim)', leftClaimed: false },
  { path: 'an operation left claimed by a dead worker (markDispatched)', leftClaimed: true },
] as const;

/** Leaves `ref` claimed by a worker whose lease has expired, as the runner would have claimed it. */
async function leaveClaimed(adapter: ReturnType<typeof countingAdapter>['adapter'], ref: string): Promise<void> {
  const spec = adapter.operations['records.create']!;
  const params = { ref };
  const id = asBusinessOperationId(ref);
  const claim = await direct.claim({
    businessOperationId: id,
    provider: adapter.provider,
    operation: spec.card.operation,
    intentFingerprint: fingerprint({ operation: spec.card.operation, intent: pickIntent(params, spec.intentFields) }),
    paramsFingerprint: fingerprint(params),
    params,
    providerKey: adapter.deriveProviderKey('records.create', id),
    owner: 'dead-before-dispatch',
    leaseMs: 1,
    now: Date.now() - 60_000,
  });
  expect(claim).toMatchObject({ kind: 'claimed', record: { state: 'claimed', attemptCount: 0 } });
}

const rowsFor = async (ref: string) =>
  (await direct.list({ operation: 'sandbox.records.create' })).filter(
    (r) => (r.params as { ref?: string }).ref === ref,
  );

/**
 * Runs `ref` on a ledger behind a relay whose fault strikes just as `dispatched` is written: the run
 * fails with LedgerError and the provider is not called; `then` checks what is left.
 */
async function runThroughFault(
  ref: string,
  leftClaimed: boolean,
  fault: 'cut' | 'dropResponses',
  then: (counted: ReturnType<typeof countingAdapter>) => Promise<void>,
): Promise<void> {
  const relay = await startPgRelay(url);
  const through = createPostgresLedger({
    connectionString: relay.url,
    schema,
    poolSize: 2,
    migrate: false,
    queryTimeoutMs: fault === 'cut' ? 3_000 : 1_500,
    // No clock probe before the claim whose answer is dropped.
    leaseClock: fault === 'cut' ? 'database' : 'caller',
  });
  const counted = countingAdapter();
  try {
    if (leftClaimed) await leaveClaimed(counted.adapter, ref);
    await through.get(asBusinessOperationId(ref)); // the connection is up until the dispatched write
    const runner = createRunner({
      ledger: interceptDispatch(through, leftClaimed ? 'markDispatched' : 'claim', () => relay[fault]()),
      owner: `w-${fault}`,
      policy: { leaseMs: fault === 'cut' ? 5_000 : 300 },
    });
    const err = await runner
      .run(counted.adapter, 'records.create', { params: { ref }, businessOperationId: ref })
      .catch((e) => e);
    expect(LedgerError.isInstance(err)).toBe(true);
    expect(counted.calls()).toBe(0);
    await then(counted);
  } finally {
    await through.close().catch(() => undefined);
    await relay.close();
  }
}

describe('the runner on a PostgreSQL ledger whose connection is lost', () => {
  for (const { path, leftClaimed } of paths) {
    it(`does not call the provider when the connection drops as \`dispatched\` is written: ${path}`, async () => {
      const ref = `cut-${leftClaimed ? 'taken' : 'new'}`;
      await runThroughFault(ref, leftClaimed, 'cut', async ({ provider }) => {
        expect(provider.count()).toBe(0);
        // Nothing was written: no operation at all, or the one left claimed, never dispatched.
        expect(await rowsFor(ref)).toEqual(
          leftClaimed ? [expect.objectContaining({ state: 'claimed', attemptCount: 0 })] : [],
        );
      });
    });

    it(`does not call the provider when \`dispatched\` commits but the answer is lost; recovery then finishes it once: ${path}`, async () => {
      const ref = `lost-${leftClaimed ? 'taken' : 'new'}`;
      await runThroughFault(ref, leftClaimed, 'dropResponses', async ({ provider, adapter, calls }) => {
        const find = async () => (await rowsFor(ref))[0]!;
        expect(await find()).toMatchObject({ state: 'dispatched', attemptCount: 1 });

        await new Promise((r) => setTimeout(r, 400)); // the lease (300 ms) expires
        // One process, one clock: no skew to wait out after the dead worker's lease (leases on the caller's clock).
        const recovery = createRunner({
          ledger: direct,
          owner: 'recovery',
          policy: { leaseMs: 300, clockSkewMarginMs: 0 },
        });
        const report = await recovery.recover({ adapters: [adapter] });
        const { businessOperationId, providerKey } = await find();
        expect(report.map((r) => r.businessOperationId)).toContain(businessOperationId);
        // The lookup proves the first "dispatch" never reached the provider, so it is sent now, once. Counted for
        // this operation: the pass also recovers what an earlier test left claimed once its 5 s lease has run out
        // (a slow machine), through the same adapter, and that is another operation sent once.
        expect(await find()).toMatchObject({ state: 'succeeded' });
        expect(provider.records().filter((r) => r.key === providerKey)).toHaveLength(1);
        expect(calls(businessOperationId)).toBe(1);
        // And nothing the pass drove was sent twice or left two records.
        for (const r of report) expect(calls(r.businessOperationId)).toBeLessThanOrEqual(1);
        const keys = provider.records().map((r) => r.key);
        expect(new Set(keys).size).toBe(keys.length);
      });
    });
  }
});

/** `pool`, whose client stops for good once the row lock of a claim is taken (a GC pause, a suspended VM, a network
 * that stops answering): its transaction stays open at the server. `frozen` resolves then; `end()` drops that client. */
function pausingAfterRowLock(pool: pg.Pool) {
  let stopped: pg.PoolClient | undefined;
  let stop = () => {};
  const frozen = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const paused = new Proxy(pool, {
    get(target, key) {
      if (key !== 'connect') return Reflect.get(target, key).bind?.(target) ?? Reflect.get(target, key);
      return async () => {
        const client = await target.connect();
        client.on('error', () => undefined); // the server may end the session meanwhile
        const query = client.query.bind(client) as (q: pg.QueryConfig) => Promise<unknown>;
        return Object.assign(Object.create(client), {
          query: async (q: pg.QueryConfig) => {
            if (stopped === client) return new Promise(() => undefined);
            const r = await query(q);
            if (q.text.endsWith('FOR UPDATE')) {
              stopped = client;
              stop();
            }
            return r;
          },
        });
      };
    },
  });
  return { paused, frozen, end: () => stopped?.release(new Error('test over')) };
}

describe('a worker that stops inside a claim, holding the row lock', () => {
  it('holds it no longer than its query time limit: another worker then takes the operation over', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    const { paused, frozen, end } = pausingAfterRowLock(pool);
    const stopping = createPostgresLedger({
      pool: paused,
      schema,
      migrate: false,
      queryTimeoutMs: 1_000,
      leaseClock: 'caller',
    });
    const other = createPostgresLedger({
      connectionString: url,
      schema,
      migrate: false,
      queryTimeoutMs: 4_000,
      leaseClock: 'caller',
    });
    try {
      const now = Date.now();
      await direct.claim(claimOf('paused-takeover', 'dead', now - 60_000, 1));
      void stopping.claim(claimOf('paused-takeover', 'stops', now)).catch(() => undefined);
      await frozen;
      const claim = await other.claim(claimOf('paused-takeover', 'live', now)).catch((e: unknown) => e);
      expect(claim).toMatchObject({ kind: 'claimed', takenOver: true, record: { leaseOwner: 'live' } });
    } finally {
      end();
      await other.close();
      await stopping.close();
      await pool.end();
    }
  });
});
