import { InvalidStateError, LeaseLostError, type Ledger, LedgerError } from '@retrysafe/contract';
import { verifyReceiptChain } from '@retrysafe/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimTableCases } from './claim-table.js';
import { claimDispatchCases, receiptCases } from './combined-write-cases.js';
import { claimed, claimInput, expectClaimed, id, idsOf, packet, receipt, refused, T0, type Test } from './fixtures.js';
import { type Corrupt, identityCases, unreadableCases } from './identity-cases.js';
import { boundCases, inputCases } from './input-cases.js';
import { resolveCases, restartCases } from './restart-cases.js';

/** Claim inputs and handoff packets for a ledger's own tests, of the suite's shape. */
export { claimOf, packetOf } from './fixtures.js';
export type { Corrupt } from './identity-cases.js';

/** Claims, leases and takeovers. */
function claimCases(test: Test): void {
  test('creates a new operation as claimed, fence 1, with the lease and the params kept', async (l) => {
    const r = await l.claim(claimInput('new'));
    expectClaimed(r, false);
    expect(r.record).toMatchObject({
      state: 'claimed',
      fence: 1,
      leaseOwner: 'worker-1',
      leaseExpiresAt: T0 + 1000,
      attemptCount: 0,
      firstDispatchedAt: null,
      providerKey: 'rs-new',
    });
    expect(r.record.params).toEqual({ ref: 'new', nested: { n: 1 } });
    expect(await l.get(id('new'))).toMatchObject({ state: 'claimed', fence: 1 });
  });

  test('keeps a claim’s account and caller’s intent through every write; a claim without them stores neither field', async (l) => {
    const kept = { account: 'acme-eu', intentFrom: 'caller' } as const;
    const { ref, record } = await claimed(l, 'account', kept);
    expect(record).toMatchObject(kept);
    await l.markDispatched(ref, T0 + 1);
    const taken = await l.claim(claimInput('account', { owner: 'worker-2', now: T0 + 1000 }));
    expect(taken.kind === 'claimed' && taken.record).toMatchObject(kept);
    await l.setState({ ...ref, fence: 2 }, { state: 'succeeded', now: T0 + 1001, result: { ok: true } });
    expect(await l.get(id('account'))).toMatchObject(kept);
    expect((await l.list({})).find((r) => r.businessOperationId === id('account'))).toMatchObject(kept);
    await claimed(l, 'no-account');
    const bare = (await l.get(id('no-account')))!;
    expect([Object.hasOwn(bare, 'account'), Object.hasOwn(bare, 'intentFrom')]).toEqual([false, false]);
    await refused(l.claim(claimInput('bad-from', { intentFrom: 'params' as 'caller' })), LedgerError);
    expect(await l.get(id('bad-from'))).toBeNull();
  });

  test('answers busy to a second claim while the lease is live, without changing the record', async (l) => {
    await claimed(l, 'busy');
    const second = await l.claim(claimInput('busy', { owner: 'worker-2', now: T0 + 999 }));
    expect(second.kind).toBe('busy');
    expect((await l.get(id('busy')))!.fence).toBe(1);
  });

  test('lets exactly one of many simultaneous claims win', async (l) => {
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => l.claim(claimInput('race', { owner: `w${i}` }))),
    );
    expect(results.filter((r) => r.kind === 'claimed')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'busy')).toHaveLength(7);
  });

  test('reports a conflict for the same id with another intent or operation, writing nothing', async (l) => {
    await claimed(l, 'conflict');
    const a = await l.claim(claimInput('conflict', { intentFingerprint: 'sha256:intent-b', now: T0 + 5000 }));
    expect(a.kind === 'conflict' && a.field).toBe('intent');
    const b = await l.claim(claimInput('conflict', { operation: 'sandbox.other', now: T0 + 5000 }));
    expect(b.kind === 'conflict' && b.field).toBe('operation');
    expect((await l.get(id('conflict')))!.fence).toBe(1);
  });

  test('takes over an expired lease with fence + 1, and the old fence is refused (LeaseLostError)', async (l) => {
    const first = await claimed(l, 'takeover');
    await l.markDispatched(first.ref, T0 + 10);
    const second = await l.claim(claimInput('takeover', { owner: 'worker-2', now: T0 + 1000 }));
    expectClaimed(second, true);
    expect(second.record).toMatchObject({ fence: 2, state: 'dispatched', leaseOwner: 'worker-2', attemptCount: 1 });
    await refused(l.markDispatched(first.ref, T0 + 1001), LeaseLostError);
    await refused(l.setState(first.ref, { state: 'succeeded', now: T0 + 1001 }), LeaseLostError);
    await refused(l.appendReceipt(first.ref, receipt('takeover', 1, null)), LeaseLostError);
    expect((await l.get(id('takeover')))!.attemptCount).toBe(1);
  });

  test('renews a lease so a second claim stays busy past the first expiry', async (l) => {
    const { ref } = await claimed(l, 'renew');
    await l.renewLease(ref, 1000, T0 + 900);
    expect((await l.claim(claimInput('renew', { owner: 'w2', now: T0 + 1500 }))).kind).toBe('busy');
    expect((await l.get(id('renew')))!.leaseExpiresAt).toBe(T0 + 1900);
  });

  test('refuses to renew a released lease (claim again), and renewing a terminal operation is a no-op', async (l) => {
    const { ref } = await claimed(l, 'renew-released');
    await l.release(ref);
    const before = await l.get(id('renew-released'));
    await refused(l.renewLease(ref, 1000, T0 + 900), LeaseLostError);
    expect(await l.get(id('renew-released'))).toEqual(before);
    const done = await claimed(l, 'renew-done');
    await l.setState(done.ref, { state: 'succeeded', now: T0 + 2 });
    const after = await l.get(id('renew-done'));
    await l.renewLease(done.ref, 1000, T0 + 900);
    expect(await l.get(id('renew-done'))).toEqual(after);
  });
}

/** Fenced writes, hand-offs and the give-back. */
function writeCases(test: Test): void {
  test('markDispatched counts attempts and sets firstDispatchedAt once', async (l) => {
    const { ref } = await claimed(l, 'dispatch');
    const a = await l.markDispatched(ref, T0 + 5);
    expect(a).toMatchObject({ state: 'dispatched', attemptCount: 1, firstDispatchedAt: T0 + 5 });
    await l.setState(ref, { state: 'unknown', lastOutcome: 'unknown', now: T0 + 6 });
    const b = await l.markDispatched(ref, T0 + 50);
    expect(b).toMatchObject({ state: 'dispatched', attemptCount: 2, firstDispatchedAt: T0 + 5 });
  });

  test('setState stores result, refs and releases the lease on a terminal state; a terminal record answers terminal', async (l) => {
    const { ref } = await claimed(l, 'done');
    await l.markDispatched(ref, T0 + 1);
    await l.setState(ref, { state: 'in-progress', statusRef: '/status/1', lastOutcome: 'in-progress', now: T0 + 2 });
    const done = await l.setState(ref, {
      state: 'succeeded',
      result: { id: 'rec_1', deep: [1, 2] },
      providerRef: 'rec_1',
      lastOutcome: 'succeeded',
      now: T0 + 3,
    });
    expect(done).toMatchObject({
      state: 'succeeded',
      providerRef: 'rec_1',
      statusRef: '/status/1',
      leaseOwner: null,
      leaseExpiresAt: null,
    });
    expect(done.result).toEqual({ id: 'rec_1', deep: [1, 2] });
    const again = await l.claim(claimInput('done', { owner: 'w2', now: T0 + 4 }));
    expect(again.kind).toBe('terminal');
    await refused(l.setState(ref, { state: 'unknown', now: T0 + 5 }), InvalidStateError);
  });

  test('hands off with the packet, releases the lease, and can be resumed (fence + 1) or resolved', async (l) => {
    const { ref } = await claimed(l, 'handoff');
    await l.markDispatched(ref, T0 + 1);
    const h = await l.handOff(ref, packet('handoff'), T0 + 2);
    expect(h).toMatchObject({ state: 'handed-off', leaseOwner: null, lastOutcome: 'unknown' });
    expect(h.handoff?.reason).toBe('unknown-no-safe-resend');
    expect((await l.claim(claimInput('handoff', { now: T0 + 3 }))).kind).toBe('terminal');
    const resumed = await l.claim(claimInput('handoff', { now: T0 + 3, resume: true }));
    expectClaimed(resumed);
    expect(resumed.record).toMatchObject({ state: 'claimed', fence: 2, attemptCount: 1 });
    expect(resumed.record.resolution?.action).toBe('resume');
  });

  test('gives back an operation nothing of which was sent (not-sent): terminal, lease released, never a recover candidate, prunable; a claim opens it again with its receipts', async (l) => {
    const { ref } = await claimed(l, 'not-sent', { dispatch: true });
    const r1 = receipt('not-sent', 1, null);
    await l.appendReceipt(ref, r1);
    const back = await l.setState(ref, { state: 'not-sent', lastOutcome: 'not-applied', now: T0 + 2 });
    expect(back).toMatchObject({ state: 'not-sent', leaseOwner: null, leaseExpiresAt: null, attemptCount: 1 });
    await refused(l.setState(ref, { state: 'claimed', now: T0 + 3 }), InvalidStateError);
    expect(await idsOf(l.recoverCandidates(T0 + 10_000))).toEqual([]);
    if (typeof l.prune === 'function')
      expect(await l.prune({ before: T0 + 100, dryRun: true })).toMatchObject({
        pruned: 1,
        byState: { 'not-sent': 1 },
      });
    const again = await l.claim(claimInput('not-sent', { owner: 'w2', dispatch: true, now: T0 + 5 }));
    expectClaimed(again, false);
    expect(again.record).toMatchObject({ state: 'dispatched', fence: 2, attemptCount: 1, firstDispatchedAt: T0 + 5 });
    expect(again.record.receiptChain).toEqual({ head: r1.hash, length: 1 });
    await refused(l.appendReceipt(ref, receipt('not-sent', 2, r1.hash)), LeaseLostError);
    await l.appendReceipt({ businessOperationId: id('not-sent'), fence: 2 }, receipt('not-sent', 2, r1.hash));
    expect(await l.receipts(id('not-sent'))).toHaveLength(2);
  });

  test('refuses a malformed reference, an unknown state or a hand-off without its packet alike (LedgerError), writing nothing', async (l) => {
    const { ref, record } = await claimed(l, 'bad');
    const asText = { ...ref, fence: String(ref.fence) } as unknown as typeof ref;
    const bad = (v: unknown) => v as never;
    await refused(l.markDispatched(asText, T0 + 1), LedgerError);
    await refused(l.markDispatched(bad(undefined), T0 + 1), LedgerError);
    await refused(l.setState(asText, { state: 'succeeded', now: T0 + 1 }), LedgerError);
    await refused(l.setState(ref, { state: bad('done'), now: T0 + 1 }), LedgerError);
    await refused(l.handOff(ref, bad(undefined), T0 + 1), LedgerError);
    await refused(l.handOff(ref, bad({}), T0 + 1), LedgerError);
    expect(await l.get(id('bad'))).toEqual(record);
  });
}

/** Resolving hand-offs, receipts, the fence and listings. */
function resolveAndListCases(test: Test): void {
  test('resolves a handed-off operation: mark-done needs a provider ref; abandon; anything else is refused', async (l) => {
    const a = await claimed(l, 'mark');
    await refused(l.resolve(id('mark'), { action: 'abandon' }, T0), InvalidStateError);
    await l.handOff(a.ref, packet('mark'), T0 + 1);
    await refused(l.resolve(id('mark'), { action: 'mark-done' }, T0 + 2), InvalidStateError);
    await refused(l.resolve(id('mark'), { action: 'mark-done', providerRef: 123 as never }, T0 + 2), InvalidStateError);
    const done = await l.resolve(id('mark'), { action: 'mark-done', providerRef: 'rec_9', by: 'alice' }, T0 + 2);
    expect(done).toMatchObject({ state: 'succeeded', providerRef: 'rec_9' });
    expect(done.resolution).toMatchObject({ action: 'mark-done', providerRef: 'rec_9', by: 'alice', at: T0 + 2 });
    const b = await claimed(l, 'abandon');
    await l.handOff(b.ref, packet('abandon'), T0 + 1);
    expect((await l.resolve(id('abandon'), { action: 'abandon' }, T0 + 3)).state).toBe('abandoned');
    await expect(l.resolve(id('missing'), { action: 'abandon' }, T0)).rejects.toSatisfy(
      (e: unknown) => LedgerError.isInstance(e) || InvalidStateError.isInstance(e),
    );
  });

  test('appends receipts in seq order only, and returns them in order', async (l) => {
    const { ref } = await claimed(l, 'receipts');
    const r1 = receipt('receipts', 1, null);
    const r2 = receipt('receipts', 2, r1.hash);
    await l.appendReceipt(ref, r1);
    await refused(l.appendReceipt(ref, receipt('receipts', 3, r1.hash)), LedgerError);
    await refused(l.appendReceipt(ref, r1), LedgerError);
    await l.appendReceipt(ref, r2);
    expect(await l.receipts(id('receipts'))).toEqual([r1, r2]);
    expect(await l.receipts(id('nothing'))).toEqual([]);
  });

  test('the fence, not the lease, guards writes: after handoff and resolve a receipt with the current fence is accepted', async (l) => {
    const { ref } = await claimed(l, 'after-resolve');
    await l.handOff(ref, packet('after-resolve'), T0 + 1);
    const done = await l.resolve(id('after-resolve'), { action: 'abandon' }, T0 + 2);
    expect(done.fence).toBe(ref.fence);
    const at = (fence: number) => ({ businessOperationId: id('after-resolve'), fence });
    await l.appendReceipt(at(done.fence), receipt('after-resolve', 1, null));
    expect(await l.receipts(id('after-resolve'))).toHaveLength(1);
    await refused(l.appendReceipt(at(done.fence + 1), receipt('after-resolve', 2, null)), LeaseLostError);
  });

  test('lists recover candidates: non-terminal with no live lease, never terminal ones', async (l) => {
    const live = await claimed(l, 'live');
    await l.markDispatched(live.ref, T0 + 1);
    const expired = await claimed(l, 'expired');
    await l.markDispatched(expired.ref, T0 + 1);
    const released = await claimed(l, 'released');
    await l.setState(released.ref, { state: 'unknown', now: T0 + 2 });
    await l.release(released.ref);
    const done = await claimed(l, 'finished');
    await l.setState(done.ref, { state: 'succeeded', now: T0 + 2 });
    await l.renewLease(live.ref, 10_000, T0 + 2);
    const ids = (await idsOf(l.recoverCandidates(T0 + 5000))).sort();
    expect(ids).toEqual([id('expired'), id('released')].sort());
    expect(await l.recoverCandidates(T0 + 5000, 1)).toHaveLength(1);
  });

  test('lists with filters', async (l) => {
    await claimed(l, 'l1');
    const b = await claimed(l, 'l2', { now: T0 + 1 });
    await l.setState(b.ref, { state: 'succeeded', now: T0 + 2 });
    await claimed(l, 'l3', { operation: 'sandbox.other', now: T0 + 2 });
    expect(await idsOf(l.list())).toEqual([id('l1'), id('l2'), id('l3')]);
    expect(await idsOf(l.list({ states: ['succeeded'] }))).toEqual([id('l2')]);
    expect(await idsOf(l.list({ operation: 'sandbox.other' }))).toEqual([id('l3')]);
    expect(await l.list({ provider: 'nobody' })).toEqual([]);
    expect(await l.list({ limit: 2 })).toHaveLength(2);
    expect(await idsOf(l.list({ newestFirst: true, limit: 2 }))).toEqual([id('l3'), id('l2')]);
    expect(await l.get(id('absent'))).toBeNull();
  });
}

/** The receipt chain anchor and retention. */
function chainAndPruneCases(test: Test): void {
  test('anchors the receipt chain on the row in the same write as each receipt (head hash and length), and verifies against it', async (l) => {
    const { ref } = await claimed(l, 'anchor');
    expect((await l.get(id('anchor')))!.receiptChain).toEqual({ head: null, length: 0 });
    const r1 = receipt('anchor', 1, null);
    await l.appendReceipt(ref, r1);
    expect((await l.get(id('anchor')))!.receiptChain).toEqual({ head: r1.hash, length: 1 });
    const r2 = receipt('anchor', 2, r1.hash);
    const s = await l.setState(ref, { state: 'unknown', now: T0 + 1, receipt: r2 });
    expect(s.receiptChain).toEqual({ head: r2.hash, length: 2 });
    const r3 = receipt('anchor', 3, r2.hash);
    await l.handOff(ref, packet('anchor'), T0 + 2, r3);
    const row = (await l.get(id('anchor')))!;
    expect(row.receiptChain).toEqual({ head: r3.hash, length: 3 });
    // A refused receipt moves nothing.
    await refused(l.appendReceipt(ref, receipt('anchor', 5, r3.hash)), LedgerError);
    expect((await l.get(id('anchor')))!.receiptChain).toEqual({ head: r3.hash, length: 3 });
    // Resolving keeps the anchor; the resolve receipt moves it.
    const done = await l.resolve(id('anchor'), { action: 'abandon' }, T0 + 3);
    expect(done.receiptChain).toEqual({ head: r3.hash, length: 3 });
    const r4 = receipt('anchor', 4, r3.hash);
    await l.appendReceipt({ businessOperationId: id('anchor'), fence: done.fence }, r4);
    const receipts = await l.receipts(id('anchor'));
    const anchor = (await l.get(id('anchor')))!.receiptChain!;
    expect(anchor).toEqual({ head: r4.hash, length: 4 });
    expect(verifyReceiptChain(receipts, { anchor })).toEqual({ ok: true });
    // Against the anchor, a deleted tail (or every receipt deleted) is a break, though the rest still chains.
    expect(verifyReceiptChain(receipts.slice(0, 3))).toEqual({ ok: true });
    expect(verifyReceiptChain(receipts.slice(0, 3), { anchor })).toMatchObject({ ok: false });
    expect(verifyReceiptChain([], { anchor })).toMatchObject({ ok: false });
  });

  test('prune (retention, optional): deletes closed operations older than the cutoff with their receipts, never open or handed-off ones', async (l) => {
    if (typeof l.prune !== 'function') return; // optional: a ledger without retention keeps everything
    const done = async (name: string, state: 'succeeded' | 'rejected', at: number) => {
      const { ref } = await claimed(l, name, { dispatch: true });
      await l.setState(ref, { state, now: at, receipt: receipt(name, 1, null) });
    };
    await done('p-ok', 'succeeded', T0 + 10);
    await done('p-rej', 'rejected', T0 + 11);
    await done('p-new', 'succeeded', T0 + 500);
    const handed = await claimed(l, 'p-handed');
    await l.handOff(handed.ref, packet('p-handed'), T0 + 12);
    const gone = await claimed(l, 'p-abandoned');
    await l.handOff(gone.ref, packet('p-abandoned'), T0 + 13);
    await l.resolve(id('p-abandoned'), { action: 'abandon' }, T0 + 14);
    await claimed(l, 'p-open'); // claimed at T0, lease expired long before the cutoff: still open
    const d = await claimed(l, 'p-dispatched');
    await l.markDispatched(d.ref, T0 + 15);
    const before = T0 + 100;

    const dry = await l.prune({ before, dryRun: true });
    expect(dry).toEqual({ pruned: 3, byState: { succeeded: 1, rejected: 1, abandoned: 1 }, dryRun: true });
    expect(await l.get(id('p-ok'))).not.toBeNull();

    await refused(l.prune({ before, states: ['handed-off'] }), LedgerError);
    await refused(l.prune({ before, states: ['claimed'] }), LedgerError);
    // A failing export stops the prune before that batch is deleted.
    await expect(l.prune({ before, onPrune: () => Promise.reject(new Error('disk full')) })).rejects.toThrow(
      'disk full',
    );
    expect(await l.get(id('p-ok'))).not.toBeNull();

    const seen: Array<[string, number]> = [];
    const report = await l.prune({
      before,
      batchSize: 2,
      onPrune: (r, rs) => void seen.push([r.businessOperationId, rs.length]),
    });
    expect(report).toEqual({ pruned: 3, byState: { succeeded: 1, rejected: 1, abandoned: 1 }, dryRun: false });
    expect(seen.sort()).toEqual([
      [id('p-abandoned'), 0],
      [id('p-ok'), 1],
      [id('p-rej'), 1],
    ]);
    for (const name of ['p-ok', 'p-rej', 'p-abandoned']) {
      expect(await l.get(id(name))).toBeNull();
      expect(await l.receipts(id(name))).toEqual([]);
    }
    for (const name of ['p-new', 'p-handed', 'p-open', 'p-dispatched']) expect(await l.get(id(name))).not.toBeNull();
    expect((await l.receipts(id('p-new'))).length).toBe(1);
    expect((await idsOf(l.list())).sort()).toEqual(['p-dispatched', 'p-handed', 'p-new', 'p-open'].map(id).sort());
    expect((await idsOf(l.recoverCandidates(T0 + 10_000))).sort()).toEqual([id('p-dispatched'), id('p-open')].sort());
    expect(await l.prune({ before })).toEqual({ pruned: 0, byState: {}, dryRun: false });
    // A pruned id is forgotten: a claim starts it afresh.
    const fresh = await l.claim(claimInput('p-ok', { now: T0 + 20_000 }));
    expect(fresh).toMatchObject({ kind: 'claimed', takenOver: false, record: { fence: 1 } });
  });

  test('prune (optional) checks state and age again in the delete: an operation superseded while its batch was exported stays', async (l) => {
    if (typeof l.prune !== 'function') return;
    const { ref } = await claimed(l, 'p-sup', { dispatch: true });
    await l.setState(ref, { state: 'rejected', now: T0 + 10, receipt: receipt('p-sup', 1, null) });
    const revised = { params: { fixed: true }, paramsFingerprint: 'sha256:params-b', now: T0 + 20_000 };
    const report = await l.prune({
      before: T0 + 100,
      onPrune: async (r) => {
        // A corrected request supersedes it between the export and the delete.
        const c = await l.claim(claimInput('p-sup', { ...revised, supersede: { fence: r.fence, revision: 2 } }));
        expectClaimed(c, false);
      },
    });
    expect(report).toEqual({ pruned: 0, byState: {}, dryRun: false });
    expect(await l.get(id('p-sup'))).toMatchObject({ state: 'claimed', params: { fixed: true } });
    expect(await l.receipts(id('p-sup'))).toHaveLength(1);
  });
}

/**
 * The ledger conformance suite (vitest): every Ledger implementation must pass it unchanged. `name` is shown in the
 * describe block (e.g. `sqlite`); `create` makes a fresh, empty ledger for each test; `corrupt`, when the store can be
 * edited from outside, makes one operation's stored record unreadable there.
 */
export function ledgerSuite(options: {
  readonly name: string;
  readonly create: () => Promise<Ledger> | Ledger;
  readonly corrupt?: Corrupt;
}): void {
  describe(`ledger suite: ${options.name}`, () => {
    let ledger: Ledger;
    beforeEach(async () => {
      ledger = await options.create();
    });
    afterEach(() => ledger.close());
    const test: Test = (name, fn) => it(name, () => fn(ledger));
    claimCases(test);
    writeCases(test);
    resolveAndListCases(test);
    claimDispatchCases(test);
    receiptCases(test);
    chainAndPruneCases(test);
    resolveCases(test);
    restartCases(test);
    claimTableCases(test);
    inputCases(test);
    boundCases(test);
    identityCases(test);
    unreadableCases(test, options.corrupt);
  });
}
