/**
 * Duplicates in flight: an agent that fires the same call twice in one turn, or a host that re-issues while the
 * first call still runs, waits for the first one's result — in one fence process, and across two fence processes
 * on one PostgreSQL ledger — for as long as the caller asks (`_meta["retrysafe/waitMs"]`), so both calls answer
 * `done` with the same result, and there is one effect.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createMemoryLedger } from '@retrysafe/core';
import { claimOf } from '@retrysafe/testkit/ledger';
import { describe, expect, it } from 'vitest';
import { createCoalescer } from '../src/index.js';
import { type Answer, onCleanup, ordersServer, tempDir, wrapped, writeFence } from './fence-helpers.js';

const fence = (dir: string, extra: Record<string, unknown> = {}) =>
  writeFence(dir, {
    name: 'orders',
    timeoutMs: 5000,
    // The fence file's wait is short; the caller asks for a longer one on its call.
    policy: { waitForOtherMs: 100, baseMs: 10, capMs: 50 },
    tools: { create_order: { kind: 'create', intent: ['customer', 'ref'], resultRef: 'id', toolErrors: 'rejected' } },
    ...extra,
  });
const call = (client: Client, args: Record<string, unknown>) =>
  client.callTool({ name: 'create_order', arguments: args, _meta: { 'retrysafe/waitMs': 15_000 } }, undefined, {
    timeout: 30_000,
  }) as Promise<Answer>;
const count = async (client: Client, ref: string) =>
  (
    (await client.callTool({ name: 'list_orders', arguments: {} })).structuredContent as { orders: { ref: string }[] }
  ).orders.filter((o) => o.ref === ref).length;

function expectOneAnswer(answers: Answer[]) {
  for (const a of answers) expect(a._meta?.retrysafe?.status).toBe('done');
  expect(answers[1]!.structuredContent).toEqual(answers[0]!.structuredContent);
  expect(new Set(answers.map((a) => a._meta?.retrysafe?.businessOperationId)).size).toBe(1);
}

describe('a duplicate in flight waits for the first call', () => {
  it('in one fence process: two identical calls at once answer done with the same order, and there is one', async () => {
    const dir = tempDir('retrysafe-coalesce-');
    const client = await wrapped(fence(dir), ['--', process.execPath, ordersServer, '--reply-delay-ms', '800']);
    const args = { customer: 'cus_c', ref: `PO-${randomBytes(3).toString('hex')}`, sku: 'sku_1', quantity: 1 };
    const answers = await Promise.all([call(client, args), call(client, { ...args })]);
    expectOneAnswer(answers);
    expect(await count(client, args.ref)).toBe(1);
  });

  it('across two fence processes on one PostgreSQL ledger: both answer done with the same order, and there is one', async () => {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('DATABASE_URL is not set: this test needs the PostgreSQL that .ci/test-env.sh starts');
    const dir = tempDir('retrysafe-coalesce-pg-');
    const upstream = spawn(process.execPath, [ordersServer, '--http', '0', '--reply-delay-ms', '800'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    onCleanup(() => upstream.kill());
    const upstreamUrl = await new Promise<string>((resolve, reject) => {
      let err = '';
      upstream.stderr.on('data', (d) => {
        err += String(d);
        const m = /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(err);
        if (m) resolve(m[1]!);
      });
      upstream.on('exit', () => reject(new Error(`orders server exited: ${err}`)));
    });
    const file = fence(dir, { ledger: url });
    const [a, b] = await Promise.all([wrapped(file, ['--url', upstreamUrl]), wrapped(file, ['--url', upstreamUrl])]);
    const args = { customer: 'cus_cp', ref: `PO-${randomBytes(3).toString('hex')}`, sku: 'sku_1', quantity: 1 };
    const answers = await Promise.all([call(a, args), call(b, { ...args })]);
    expectOneAnswer(answers);
    expect(await count(a, args.ref)).toBe(1);
  });
});

describe('a call with other non-intent arguments while the first is in flight', () => {
  it('is a conflict that says the first may still land: not to be redone under other intent fields', async () => {
    const dir = tempDir('retrysafe-inflight-conflict-');
    const client = await wrapped(fence(dir), ['--', process.execPath, ordersServer, '--reply-delay-ms', '3000']);
    const args = { customer: 'cus_i', ref: `PO-${randomBytes(3).toString('hex')}`, sku: 'sku_1', quantity: 1 };
    const first = call(client, args);
    await expect.poll(() => count(client, args.ref)).toBe(1); // committed, answer held
    const other = await call(client, { ...args, sku: 'sku_2' });
    expect(other.structuredContent).toMatchObject({ retrysafe: { status: 'conflict', storedMayApply: true } });
    const { message } = (other.structuredContent as { retrysafe: { message: string } }).retrysafe;
    expect(message).toMatch(/do not redo it under other intent fields/i);
    expect(message).toMatch(/call again with the original arguments/);
    expect((await first)._meta?.retrysafe?.status).toBe('done');
    expect((await call(client, args))._meta?.retrysafe).toMatchObject({ status: 'done', adopted: true });
    expect(await count(client, args.ref)).toBe(1);
  });
});

describe('arguments too deep to compare', () => {
  it("are not coalesced but run, so the runner refuses them with its typed answer (not the compare's stack overflow)", async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 20_000; i++) deep = { d: deep };
    const refusal = {
      status: 'invalid-input',
      businessOperationId: null,
      fields: [],
      message: 'nests too deep',
    } as const;
    const coalescer = createCoalescer(createMemoryLedger());
    await expect(coalescer.call('create_order', { ref: 'PO-1', deep }, undefined, async () => refusal)).resolves.toBe(
      refusal,
    );
  });

  it('a run followed in the ledger that ends given back (not-sent) is run again, not answered from the ledger', async () => {
    const ledger = createMemoryLedger();
    const claim = await ledger.claim(claimOf('given-back'));
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    await ledger.setState(
      { businessOperationId: claim.record.businessOperationId, fence: 1 },
      { state: 'not-sent', lastOutcome: 'not-applied', now: Date.now() },
    );
    const businessOperationId = claim.record.businessOperationId;
    const answers = [
      { status: 'in-progress', businessOperationId, retryAfterMs: 0, message: 'elsewhere' },
      {
        status: 'done',
        businessOperationId,
        result: null,
        providerRef: null,
        adopted: false,
        attempts: 1,
        message: 'Done.',
      },
    ] as const;
    let runs = 0;
    const answer = await createCoalescer(ledger).call(
      'create_order',
      { ref: 'PO-9' },
      undefined,
      async () => answers[runs++]!,
    );
    expect(answer).toMatchObject({ status: 'done' });
    expect(runs).toBe(2);
  });
});
