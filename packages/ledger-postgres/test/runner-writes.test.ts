// The runner's clean path on PostgreSQL: two ledger writes (each one statement, one commit) — the claim
// that creates the operation already dispatched, then `succeeded` with the attempt's receipt — and nothing
// else sent to the server.

import { createRunner, verifyReceiptChain } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { logJsonCalls } from '../../ledger-sqlite/test/json-calls.js';
import { recording } from '../../ledger-sqlite/test/recording.js';
import { fileLedger } from './pg-test-db.js';

const ledger = fileLedger('runner_writes');

describe('the runner on the PostgreSQL ledger', () => {
  it('a clean run is two writes, and the operation ends succeeded with its one receipt', async () => {
    const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
    const adapter = createSandboxAdapter({ provider });
    const { ledger: proxy, writes } = recording(ledger());
    const r = await createRunner({ ledger: proxy, owner: 'w-clean' }).run(adapter, 'records.create', {
      params: { ref: 'pg-clean-1' },
    });
    expect(r.status).toBe('done');
    if (r.status !== 'done') return;
    expect(writes).toEqual([
      { method: 'claim', dispatch: true },
      { method: 'setState', state: 'succeeded', receiptSeq: 1 },
    ]);
    expect(provider.count()).toBe(1);
    expect(await ledger().get(r.businessOperationId)).toMatchObject({
      state: 'succeeded',
      attemptCount: 1,
      providerRef: r.providerRef,
      leaseOwner: null,
    });
    const stored = await ledger().receipts(r.businessOperationId);
    expect(stored.map((x) => [x.seq, x.kind, x.outcome])).toEqual([[1, 'dispatch', 'succeeded']]);
    expect(stored).toEqual(r.receipts);
    expect(verifyReceiptChain(stored)).toEqual({ ok: true });
  });

  it('a clean run sends the server two statements, each its own commit, the completion deferred: no read, no BEGIN; each value serialised once', async () => {
    const adapter = createSandboxAdapter({ provider: createSandboxProvider(REPLAYING_BEHAVIOUR) });
    const runner = createRunner({ ledger: ledger(), owner: 'w-trips' });
    // The first claim probes the database clock; the next ones within seconds do not.
    await runner.run(adapter, 'records.create', { params: { ref: 'pg-trips-0' } });
    const prefix = `rs:${ledger().schema}:`;
    // A statement's name as `rs:<schema>:<name>`, or `rs:<name>#<schema hash>` past 63 bytes; BEGIN and the like by text.
    const named = (name: string) =>
      name.startsWith(prefix) ? name.slice(prefix.length) : name.slice(3).split('#')[0]!;
    const sent: string[] = [];
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const q = args[0] as { name?: string; text?: string } | string;
      sent.push(typeof q === 'string' ? q : q.name ? named(q.name) : (q.text ?? '?'));
      return Reflect.apply(query, this, args);
    } as typeof query;
    const restoreJson = logJsonCalls(sent);
    try {
      const r = await runner.run(adapter, 'records.create', { params: { ref: 'pg-trips-1' } });
      expect(r.status).toBe('done');
    } finally {
      restoreJson();
      pg.Client.prototype.query = query;
    }
    expect(sent).toEqual([
      'JSON.stringify', // the params, for their json column
      'JSON.parse', // the params as the column reads them back, for the record
      'claim-insert-dispatched',
      'JSON.stringify', // the result
      'JSON.stringify', // the receipt
      'set-state-terminal.orp+receipt:deferred:known',
      'JSON.parse', // the record handed out shares no json value with the one the ledger held: params
      'JSON.parse', // and result
    ]);
  });
});
