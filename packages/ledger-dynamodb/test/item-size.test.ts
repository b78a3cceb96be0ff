import { LedgerError } from '@retrysafe/contract';
import { createRunner, createVirtualClock } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { claimOf, packetOf } from '@retrysafe/testkit/ledger';
import { afterAll, describe, expect, it } from 'vitest';
import { createDynamoDbLedger } from '../src/index.js';
import { newId, onTables, startDynalite, T0 } from './dynalite.js';

const db = await startDynalite();
afterAll(() => db.close());
const { ledgers, rawItem } = onTables(db);

/** A receipt of `id` carrying `kb` KB of message (the ledger stores the chain it is given; it does not check hashes). */
const bigReceipt = (id: string, seq: number, kb: number) =>
  ({
    businessOperationId: id,
    seq,
    kind: 'lookup',
    prevHash: null,
    hash: `${seq}`.repeat(64),
    message: 'm'.repeat(kb * 1024),
  }) as never;

/** An open operation with `paramsKb` of params whose receipts, of each size in `kbs` until one is refused, filled its item. */
async function filledToTheRoom(name: string, paramsKb: number, kbs: number[]) {
  const l = await ledgers(1);
  const id = newId(name);
  await l.first.claim(claimOf(id, { params: { ref: id, blob: 'y'.repeat(paramsKb * 1024) }, dispatch: true }));
  const ref = { businessOperationId: id, fence: 1 };
  let seq = 0;
  const append = (kb: number) =>
    l.first.appendReceipt(ref, bigReceipt(id, seq + 1, kb)).then(
      () => ++seq,
      () => 0,
    );
  for (const kb of kbs) while ((await append(kb)) > 0);
  return { l, id, ref, next: () => ++seq };
}

describe('the DynamoDB ledger item limit', () => {
  it('refuses, before the claim, an operation whose item would be too large: a typed error and nothing written', async () => {
    const l = await ledgers(1);
    const id = newId('large');
    const huge = { ref: id, blob: 'x'.repeat(300 * 1024) };
    const err = await l.first.claim(claimOf(id, { params: huge, dispatch: true })).catch((e: unknown) => e);
    expect(LedgerError.isInstance(err)).toBe(true);
    expect((err as LedgerError).providerMayHaveBeenCalled).toBe(false);
    expect((err as Error).message).toMatch(/bytes, more than the \d+ this DynamoDB ledger writes/);
    expect(await rawItem(l.table, id)).toBeUndefined();
    expect(await l.first.list()).toEqual([]);
    await l.close();
  });

  it('refuses a later write that would outgrow the item, writing nothing of it (never a half-written item)', async () => {
    const l = await ledgers(1);
    const id = newId('large-result');
    const c = await l.first.claim(claimOf(id, { params: { ref: id, blob: 'y'.repeat(200 * 1024) }, dispatch: true }));
    expect(c.kind).toBe('claimed');
    const ref = { businessOperationId: id, fence: 1 };
    const before = await rawItem(l.table, id);
    await expect(
      l.first.setState(ref, { state: 'succeeded', receipt: bigReceipt(id, 1, 200), now: T0 + 1 }),
    ).rejects.toSatisfy(LedgerError.isInstance);
    expect(await rawItem(l.table, id)).toEqual(before);
    // The operation carries on within the limit.
    expect(await l.first.setState(ref, { state: 'succeeded', result: { id: 'rec_1' }, now: T0 + 2 })).toMatchObject({
      state: 'succeeded',
    });
    await l.close();
  });

  it('a write mid-run refused for the item size: run() says the provider may have applied it, and recover() finishes it with one record at the provider', async () => {
    const ledger = createDynamoDbLedger({ table: await db.table('size-mid-run'), client: db.client() });
    const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
    const sandbox = createSandboxAdapter({ provider });
    // The provider applies the request; its answer is lost, with a message the open item has no room for.
    const doExecute = async (...args: Parameters<typeof sandbox.doExecute>) => {
      await sandbox.doExecute(...args);
      return { kind: 'unknown', cause: 'timeout', message: 'x'.repeat(160 * 1024) };
    };
    const lost = Object.create(sandbox, { doExecute: { value: doExecute } }) as typeof sandbox;
    const clock = createVirtualClock(Date.now());
    const runner = createRunner({ ledger, owner: 'w-size', clock });
    const params = { ref: 'order-size', blob: 'b'.repeat(200 * 1024) };
    const err = await runner.run(lost, 'records.create', { params }).catch((e: unknown) => e);
    expect(LedgerError.isInstance(err) && err.providerMayHaveBeenCalled, String(err)).toBe(true);
    expect(String(err)).toMatch(/more than the \d+ this DynamoDB ledger writes[\s\S]*recover\(\)/);
    clock.advance(3_600_000);
    const [report] = await runner.recover({ adapters: [sandbox] });
    expect(report).toMatchObject({ action: 'adopted', to: 'succeeded' });
    // Finished by the card's own path (a replay under the same key): one record at the provider.
    expect(provider.count()).toBe(1);
    await ledger.close();
  });

  it('a lookup whose receipt no longer fits the open item: recover() hands it off (its last message left to the receipts), never left in flight for ever', async () => {
    const ledger = createDynamoDbLedger({ table: await db.table('size-lookup'), client: db.client() });
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, replays: false, retentionMs: null });
    const sandbox = createSandboxAdapter({ provider });
    // Applied, its answer lost with a long message; every lookup cannot tell, at a length the open item has no room for.
    const doExecute = async (...args: Parameters<typeof sandbox.doExecute>) => {
      await sandbox.doExecute(...args);
      return { kind: 'unknown', cause: 'timeout', message: 'x'.repeat(100 * 1024) };
    };
    const doLookup = async () => ({ kind: 'cannot-tell', reason: 'r'.repeat(47 * 1024) });
    const props = { doExecute: { value: doExecute }, doLookup: { value: doLookup } };
    const lost = Object.create(sandbox, props) as typeof sandbox;
    const clock = createVirtualClock(Date.now());
    const runner = createRunner({ ledger, owner: 'w-lookup', clock });
    const params = { ref: 'order-lookup', blob: 'b'.repeat(200 * 1024) };
    const err = await runner.run(lost, 'records.create', { params }).catch((e: unknown) => e);
    expect(LedgerError.isInstance(err) && err.providerMayHaveBeenCalled, String(err)).toBe(true);
    clock.advance(3_600_000);
    const [report] = await runner.recover({ adapters: [lost] });
    expect(report).toMatchObject({ action: 'handed-off', to: 'handed-off' });
    const [handed] = await ledger.list();
    expect(handed!.handoff!.lastKnown).not.toHaveProperty('message');
    expect(handed!.handoff!.explanation).toMatch(/last message .*receipts/);
    expect(provider.count()).toBe(1);
    await ledger.close();
  });

  it('a provider result too large for the item: the operation is stored succeeded with a note in place of the result, never left in flight', async () => {
    const l = await ledgers(2);
    const id = newId('huge-result');
    await l.first.claim(claimOf(id, { params: { ref: id, blob: 'y'.repeat(200 * 1024) }, dispatch: true }));
    const done = await l.first.setState(
      { businessOperationId: id, fence: 1 },
      { state: 'succeeded', result: { body: 'z'.repeat(200 * 1024) }, providerRef: 'rec_9', now: T0 + 1 },
    );
    expect(done).toMatchObject({ state: 'succeeded', providerRef: 'rec_9', result: { notStored: 'result' } });
    // Another process running the same id again is answered from the stored record, the note telling why.
    const again = await l.all[1]!.claim(claimOf(id, { owner: 'w2', now: T0 + 2 }));
    expect(again).toMatchObject({ kind: 'terminal', record: { state: 'succeeded', result: done.result } });
    expect(JSON.stringify(done.result)).toMatch(/\d+ bytes/);
    await l.close();
  });

  it('receipts that filled the room of an open operation still leave room to hand it off and resolve it', async () => {
    const { l, id, ref, next } = await filledToTheRoom('full-receipts', 200, [40]);
    expect(await l.first.handOff(ref, packetOf(id), T0 + 1, bigReceipt(id, next(), 20))).toMatchObject({
      state: 'handed-off',
    });
    const closed = await l.first.resolve(id, { action: 'abandon' }, T0 + 2, bigReceipt(id, next(), 20));
    expect(closed).toMatchObject({ state: 'abandoned' });
    await l.close();
  });

  it('receipts that filled the room of an open operation: a hand-off packet listing them (as recover() builds it) is still stored, never a row left open', async () => {
    const { l, id, ref } = await filledToTheRoom('full-packet', 200, [40]);
    const receipts = await l.first.receipts(id);
    // The runner's packet lists every attempt with its message, from the receipts.
    const attempts = receipts.map((r) => ({ kind: r.kind, at: r.startedAt, outcome: r.outcome, message: r.message }));
    const handed = await l.first.handOff(ref, packetOf(id, { attempts } as never), T0 + 1);
    expect(handed).toMatchObject({ state: 'handed-off' });
    expect(await l.first.receipts(id)).toEqual(receipts);
    expect(handed.handoff).toMatchObject({
      attempts: [],
      explanation: expect.stringMatching(/\d+ attempts .*receipts/),
    });
    await l.close();
  });

  it('an open operation filled to the last byte of its room can still be taken over (by an owner of a longer name), looked up, dispatched and handed off', async () => {
    // Receipts ever smaller: the item ends within a few bytes of its room.
    const { l, id } = await filledToTheRoom('full-takeover', 250, [20, 1, 0.05]);
    const owner = `recovery-${'w'.repeat(400)}`;
    const taken = await l.first.claim(claimOf(id, { owner, now: T0 + 5_000 }));
    expect(taken).toMatchObject({ kind: 'claimed', takenOver: true, record: { leaseOwner: owner } });
    const ref = { businessOperationId: id, fence: 2 };
    // Its bookkeeping adds no receipt or result: never refused for the room, so recovery can drive what it took.
    await l.first.renewLease(ref, 60_000, T0 + 5_001);
    expect(await l.first.setState(ref, { state: 'reconciling', now: T0 + 5_001 })).toMatchObject({
      state: 'reconciling',
    });
    expect(await l.first.markDispatched(ref, T0 + 5_001)).toMatchObject({ state: 'dispatched' });
    const handed = await l.first.handOff(ref, packetOf(id), T0 + 5_001);
    expect(handed).toMatchObject({ state: 'handed-off' });
    await l.close();
  });

  it('a hand-off that filled the item to its room still leaves a person room to resolve it (with the resolve receipt)', async () => {
    const { l, id, ref, next } = await filledToTheRoom('full-handoff', 200, [40]);
    // The largest receipt the hand-off takes: the item ends within a KB of the room a run may fill.
    const seq = next();
    for (let kb = 100; ; kb--) {
      const handed = await l.first.handOff(ref, packetOf(id), T0 + 1, bigReceipt(id, seq, kb)).catch(() => null);
      if (handed !== null) break;
    }
    const done = await l.first.resolve(
      id,
      { action: 'mark-done', providerRef: 'rec_1' },
      T0 + 2,
      bigReceipt(id, next(), 2),
    );
    expect(done).toMatchObject({ state: 'succeeded', providerRef: 'rec_1' });
    await l.close();
  });

  it('an operation given back (not-sent) whose receipts filled its item: a new run of its id is refused saying it can only be pruned, not resolved', async () => {
    const { l, id, ref, next } = await filledToTheRoom('full-not-sent', 200, [40]);
    await l.first.setState(ref, { state: 'not-sent', now: T0 + 1, receipt: bigReceipt(id, next(), 40) });
    const params = { ref: id, blob: 'y'.repeat(200 * 1024) };
    const err = await l.first.claim(claimOf(id, { params, now: T0 + 2 })).catch((e: unknown) => e);
    expect(LedgerError.isInstance(err) && !err.providerMayHaveBeenCalled, String(err)).toBe(true);
    expect(String(err)).toMatch(/no room for another run.*prune/);
    expect(String(err)).not.toMatch(/mark-done/);
    await l.close();
  });

  it('a resume of a handed-off operation too large for its run to store is refused before the claim (LedgerError, nothing written); a person can still close it', async () => {
    const { l, id, ref, next } = await filledToTheRoom('full-resume', 200, [40]);
    // Past the room of an open operation (its receipts took it to about 320 KB).
    await l.first.handOff(ref, packetOf(id), T0 + 1, bigReceipt(id, next(), 45));
    const before = await rawItem(l.table, id);
    const seq = next();
    const resume = l.first.claim(claimOf(id, { resume: true, now: T0 + 2, receipt: bigReceipt(id, seq, 1) }));
    const err = await resume.catch((e: unknown) => e);
    expect(LedgerError.isInstance(err) && !err.providerMayHaveBeenCalled, String(err)).toBe(true);
    expect(String(err)).toMatch(/mark-done or abandon/);
    expect(await rawItem(l.table, id)).toEqual(before);
    expect(await l.first.resolve(id, { action: 'abandon' }, T0 + 3, bigReceipt(id, seq, 1))).toMatchObject({
      state: 'abandoned',
    });
    await l.close();
  });
});
