import { describe, expect, it, beforeEach, afterEach } from 'vitest';
import {
  InvalidStateError,
  LeaseLostError,
  LedgerError,
  asBusinessOperationId,
  type ClaimInput,
  type ClaimResult,
  type Fenced,
  type HandoffPacket,
  type Ledger,
  type ProviderKey,
  type Receipt,
} from '@retrysafe/contract';
import { claimTransition } from '@retrysafe/contract/ledger';
import { sealReceipt, verifyReceiptChain } from '../receipts.js';

export interface LedgerSuiteOptions {
  /** Shown in the describe block, e.g. `sqlite`. */
  readonly name: string;
  /** A fresh, empty ledger per test. */
  readonly create: () => Promise<Ledger> | Ledger;
}

const T0 = Date.UTC(2026, 0, 1);
const id = (s: string) => asBusinessOperationId(`suite-${s}`);

function claimInput(name: string, over: Partial<ClaimInput> = {}): ClaimInput {
  return {
    businessOperationId: id(name),
    provider: 'sandbox',
    operation: 'sandbox.records.create',
    intentFingerprint: 'sha256:intent-a',
    paramsFingerprint: 'sha256:params-a',
    params: { ref: name, nested: { n: 1 } },
    providerKey: `rs-${name}` as ProviderKey,
    owner: 'worker-1',
    leaseMs: 1000,
    now: T0,
    ...over,
  };
}

function packet(name: string): HandoffPacket {
  return {
    businessOperationId: id(name),
    provider: 'sandbox',
    operation: 'sandbox.records.create',
    intentFingerprint: 'sha256:intent-a',
    providerKey: `rs-${name}` as ProviderKey,
    reason: 'unknown-no-safe-resend',
    explanation: 'suite',
    attempts: [],
    lastKnown: { outcome: 'unknown', status: 504 },
    safeNextActions: [{ action: 'abandon', safe: true, why: 'suite' }],
    createdAt: new Date(T0).toISOString(),
  };
}

function receipt(name: string, seq: number, prevHash: string | null): Receipt {
  return sealReceipt({
    businessOperationId: id(name),
    seq,
    runId: 'run_suite' as Receipt['runId'],
    attemptId: `att_${seq}` as Receipt['attemptId'],
    provider: 'sandbox',
    operation: 'sandbox.records.create',
    kind: seq === 1 ? 'dispatch' : 'resend',
    startedAt: new Date(T0).toISOString(),
    finishedAt: new Date(T0 + 1).toISOString(),
    outcome: 'unknown',
    decision: { action: 'send', reason: 'suite', delayMs: 5 },
    providerKey: `rs-${name}` as ProviderKey,
    requestFingerprint: 'sha256:req',
    prevHash,
  });
}

async function claimed(ledger: Ledger, name: string, over: Partial<ClaimInput> = {}) {
  const r = await ledger.claim(claimInput(name, over));
  if (r.kind !== 'claimed') throw new Error(`expected claimed, got ${r.kind}`);
  return { ref: { businessOperationId: r.record.businessOperationId, fence: r.record.fence }, record: r.record };
}

/**
 * The shared ledger suite (vitest): every Ledger implementation must pass it unchanged.
 * Usage: `ledgerSuite({ name: 'postgres', create: () => createPostgresLedger(...) })`.
 */
export function ledgerSuite(options: LedgerSuiteOptions): void {
  describe(`ledger suite: ${options.name}`, () => {
    let ledger: Ledger;
    beforeEach(async () => {
      ledger = await options.create();
    });
    afterEach(async () => {
      await ledger.close();
    });

    it('creates a new operation as claimed, fence 1, with the lease and the params kept', async () => {
      const r = await ledger.claim(claimInput('new'));
      expect(r.kind).toBe('claimed');
      if (r.kind !== 'claimed') return;
      expect(r.takenOver).toBe(false);
      expect(r.record).toMatchObject({ state: 'claimed', fence: 1, leaseOwner: 'worker-1', leaseExpiresAt: T0 + 1000, attemptCount: 0, firstDispatchedAt: null, providerKey: 'rs-new' });
      expect(r.record.params).toEqual({ ref: 'new', nested: { n: 1 } });
      expect(await ledger.get(id('new'))).toMatchObject({ state: 'claimed', fence: 1 });
    });

    it('answers busy to a second claim while the lease is live, without changing the record', async () => {
      await claimed(ledger, 'busy');
      const second = await ledger.claim(claimInput('busy', { owner: 'worker-2', now: T0 + 999 }));
      expect(second.kind).toBe('busy');
      expect((await ledger.get(id('busy')))!.fence).toBe(1);
    });

    it('lets exactly one of many simultaneous claims win', async () => {
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => ledger.claim(claimInput('race', { owner: `w${i}` }))));
      expect(results.filter((r) => r.kind === 'claimed')).toHaveLength(1);
      expect(results.filter((r) => r.kind === 'busy')).toHaveLength(7);
    });

    it('reports a conflict for the same id with another intent or operation, writing nothing', async () => {
      await claimed(ledger, 'conflict');
      const a = await ledger.claim(claimInput('conflict', { intentFingerprint: 'sha256:intent-b', now: T0 + 5000 }));
      expect(a.kind === 'conflict' && a.field).toBe('intent');
      const b = await ledger.claim(claimInput('conflict', { operation: 'sandbox.other', now: T0 + 5000 }));
      expect(b.kind === 'conflict' && b.field).toBe('operation');
      expect((await ledger.get(id('conflict')))!.fence).toBe(1);
    });

    it('takes over an expired lease with fence + 1, and the old fence is refused (LeaseLostError)', async () => {
      const first = await claimed(ledger, 'takeover');
      await ledger.markDispatched(first.ref, T0 + 10);
      const second = await ledger.claim(claimInput('takeover', { owner: 'worker-2', now: T0 + 1000 }));
      expect(second.kind).toBe('claimed');
      if (second.kind !== 'claimed') return;
      expect(second.takenOver).toBe(true);
      expect(second.record).toMatchObject({ fence: 2, state: 'dispatched', leaseOwner: 'worker-2', attemptCount: 1 });
      await expect(ledger.markDispatched(first.ref, T0 + 1001)).rejects.toSatisfy(LeaseLostError.isInstance);
      await expect(ledger.setState(first.ref, { state: 'succeeded', now: T0 + 1001 })).rejects.toSatisfy(LeaseLostError.isInstance);
      await expect(ledger.appendReceipt(first.ref, receipt('takeover', 1, null))).rejects.toSatisfy(LeaseLostError.isInstance);
      expect((await ledger.get(id('takeover')))!.attemptCount).toBe(1);
    });

    it('renews a lease so a second claim stays busy past the first expiry', async () => {
      const { ref } = await claimed(ledger, 'renew');
      await ledger.renewLease(ref, 1000, T0 + 900);
      expect((await ledger.claim(claimInput('renew', { owner: 'w2', now: T0 + 1500 }))).kind).toBe('busy');
      expect((await ledger.get(id('renew')))!.leaseExpiresAt).toBe(T0 + 1900);
    });

    it('refuses to renew a released lease (claim again), and renewing a terminal operation is a no-op', async () => {
      const { ref } = await claimed(ledger, 'renew-released');
      await ledger.release(ref);
      const before = await ledger.get(id('renew-released'));
      await expect(ledger.renewLease(ref, 1000, T0 + 900)).rejects.toSatisfy(LeaseLostError.isInstance);
      expect(await ledger.get(id('renew-released'))).toEqual(before);
      const done = await claimed(ledger, 'renew-done');
      await ledger.setState(done.ref, { state: 'succeeded', now: T0 + 2 });
      const after = await ledger.get(id('renew-done'));
      await ledger.renewLease(done.ref, 1000, T0 + 900);
      expect(await ledger.get(id('renew-done'))).toEqual(after);
    });

    it('markDispatched counts attempts and sets firstDispatchedAt once', async () => {
      const { ref } = await claimed(ledger, 'dispatch');
      const a = await ledger.markDispatched(ref, T0 + 5);
      expect(a).toMatchObject({ state: 'dispatched', attemptCount: 1, firstDispatchedAt: T0 + 5 });
      await ledger.setState(ref, { state: 'unknown', lastOutcome: 'unknown', now: T0 + 6 });
      const b = await ledger.markDispatched(ref, T0 + 50);
      expect(b).toMatchObject({ state: 'dispatched', attemptCount: 2, firstDispatchedAt: T0 + 5 });
    });

    it('setState stores result, refs and releases the lease on a terminal state; a terminal record answers terminal', async () => {
      const { ref } = await claimed(ledger, 'done');
      await ledger.markDispatched(ref, T0 + 1);
      await ledger.setState(ref, { state: 'in-progress', statusRef: '/status/1', lastOutcome: 'in-progress', now: T0 + 2 });
      const done = await ledger.setState(ref, { state: 'succeeded', result: { id: 'rec_1', deep: [1, 2] }, providerRef: 'rec_1', lastOutcome: 'succeeded', now: T0 + 3 });
      expect(done).toMatchObject({ state: 'succeeded', providerRef: 'rec_1', statusRef: '/status/1', leaseOwner: null, leaseExpiresAt: null });
      expect(done.result).toEqual({ id: 'rec_1', deep: [1, 2] });
      const again = await ledger.claim(claimInput('done', { owner: 'w2', now: T0 + 4 }));
      expect(again.kind).toBe('terminal');
      await expect(ledger.setState(ref, { state: 'unknown', now: T0 + 5 })).rejects.toSatisfy(InvalidStateError.isInstance);
    });

    it('hands off with the packet, releases the lease, and can be resumed (fence + 1) or resolved', async () => {
      const { ref } = await claimed(ledger, 'handoff');
      await ledger.markDispatched(ref, T0 + 1);
      const h = await ledger.handOff(ref, packet('handoff'), T0 + 2);
      expect(h).toMatchObject({ state: 'handed-off', leaseOwner: null, lastOutcome: 'unknown' });
      expect(h.handoff?.reason).toBe('unknown-no-safe-resend');
      expect((await ledger.claim(claimInput('handoff', { now: T0 + 3 }))).kind).toBe('terminal');
      const resumed = await ledger.claim(claimInput('handoff', { now: T0 + 3, resume: true }));
      expect(resumed.kind).toBe('claimed');
      if (resumed.kind !== 'claimed') return;
      expect(resumed.record).toMatchObject({ state: 'claimed', fence: 2, attemptCount: 1 });
      expect(resumed.record.resolution?.action).toBe('resume');
    });

    it('resolves a handed-off operation: mark-done needs a provider ref; abandon; anything else is refused', async () => {
      const a = await claimed(ledger, 'mark');
      await expect(ledger.resolve(id('mark'), { action: 'abandon' }, T0)).rejects.toSatisfy(InvalidStateError.isInstance);
      await ledger.handOff(a.ref, packet('mark'), T0 + 1);
      await expect(ledger.resolve(id('mark'), { action: 'mark-done' }, T0 + 2)).rejects.toSatisfy(InvalidStateError.isInstance);
      const done = await ledger.resolve(id('mark'), { action: 'mark-done', providerRef: 'rec_9', by: 'alice' }, T0 + 2);
      expect(done).toMatchObject({ state: 'succeeded', providerRef: 'rec_9' });
      expect(done.resolution).toMatchObject({ action: 'mark-done', providerRef: 'rec_9', by: 'alice', at: T0 + 2 });
      const b = await claimed(ledger, 'abandon');
      await ledger.handOff(b.ref, packet('abandon'), T0 + 1);
      expect((await ledger.resolve(id('abandon'), { action: 'abandon' }, T0 + 3)).state).toBe('abandoned');
      await expect(ledger.resolve(id('missing'), { action: 'abandon' }, T0)).rejects.toSatisfy((e: unknown) => LedgerError.isInstance(e) || InvalidStateError.isInstance(e));
    });

    it('appends receipts in seq order only, and returns them in order', async () => {
      const { ref } = await claimed(ledger, 'receipts');
      const r1 = receipt('receipts', 1, null);
      const r2 = receipt('receipts', 2, r1.hash);
      await ledger.appendReceipt(ref, r1);
      await expect(ledger.appendReceipt(ref, receipt('receipts', 3, r1.hash))).rejects.toSatisfy(LedgerError.isInstance);
      await expect(ledger.appendReceipt(ref, r1)).rejects.toSatisfy(LedgerError.isInstance);
      await ledger.appendReceipt(ref, r2);
      expect(await ledger.receipts(id('receipts'))).toEqual([r1, r2]);
      expect(await ledger.receipts(id('nothing'))).toEqual([]);
    });

    it('the fence, not the lease, guards writes: after handoff and resolve a receipt with the current fence is accepted', async () => {
      const { ref } = await claimed(ledger, 'after-resolve');
      await ledger.handOff(ref, packet('after-resolve'), T0 + 1);
      const done = await ledger.resolve(id('after-resolve'), { action: 'abandon' }, T0 + 2);
      expect(done.fence).toBe(ref.fence);
      await ledger.appendReceipt({ businessOperationId: id('after-resolve'), fence: done.fence }, receipt('after-resolve', 1, null));
      expect(await ledger.receipts(id('after-resolve'))).toHaveLength(1);
      await expect(ledger.appendReceipt({ businessOperationId: id('after-resolve'), fence: done.fence + 1 }, receipt('after-resolve', 2, null))).rejects.toSatisfy(LeaseLostError.isInstance);
    });

    it('lists recover candidates: non-terminal with no live lease, never terminal ones', async () => {
      const live = await claimed(ledger, 'live');
      await ledger.markDispatched(live.ref, T0 + 1);
      const expired = await claimed(ledger, 'expired');
      await ledger.markDispatched(expired.ref, T0 + 1);
      const released = await claimed(ledger, 'released');
      await ledger.setState(released.ref, { state: 'unknown', now: T0 + 2 });
      await ledger.release(released.ref);
      const done = await claimed(ledger, 'finished');
      await ledger.setState(done.ref, { state: 'succeeded', now: T0 + 2 });
      await ledger.renewLease(live.ref, 10_000, T0 + 2);
      const ids = (await ledger.recoverCandidates(T0 + 5000)).map((r) => r.businessOperationId).sort();
      expect(ids).toEqual([id('expired'), id('released')].sort());
      expect(await ledger.recoverCandidates(T0 + 5000, 1)).toHaveLength(1);
    });

    it('lists with filters', async () => {
      await claimed(ledger, 'l1');
      const b = await claimed(ledger, 'l2', { now: T0 + 1 });
      await ledger.setState(b.ref, { state: 'succeeded', now: T0 + 2 });
      await claimed(ledger, 'l3', { operation: 'sandbox.other', now: T0 + 2 });
      expect((await ledger.list()).map((r) => r.businessOperationId)).toEqual([id('l1'), id('l2'), id('l3')]);
      expect((await ledger.list({ states: ['succeeded'] })).map((r) => r.businessOperationId)).toEqual([id('l2')]);
      expect((await ledger.list({ operation: 'sandbox.other' })).map((r) => r.businessOperationId)).toEqual([id('l3')]);
      expect(await ledger.list({ provider: 'nobody' })).toEqual([]);
      expect(await ledger.list({ limit: 2 })).toHaveLength(2);
      expect((await ledger.list({ newestFirst: true, limit: 2 })).map((r) => r.businessOperationId)).toEqual([id('l3'), id('l2')]);
      expect(await ledger.get(id('absent'))).toBeNull();
    });

    it('declares the combined writes the runner uses for a two-write clean run', () => {
      expect(ledger.capabilities).toMatchObject({ claimDispatch: true, receiptWithState: true });
    });

    it('claim with dispatch creates a new operation already dispatched (attempt 1, firstDispatchedAt = now), durably, in one write', async () => {
      const r = await ledger.claim(claimInput('born-dispatched', { dispatch: true, now: T0 + 7 }));
      expect(r.kind).toBe('claimed');
      if (r.kind !== 'claimed') return;
      expect(r.takenOver).toBe(false);
      const want = { state: 'dispatched', fence: 1, attemptCount: 1, firstDispatchedAt: T0 + 7, leaseOwner: 'worker-1', leaseExpiresAt: T0 + 1007, createdAt: T0 + 7, updatedAt: T0 + 7 };
      expect(r.record).toMatchObject(want);
      expect(await ledger.get(id('born-dispatched'))).toMatchObject(want);
      // It is an ordinary dispatched operation from here on: a second dispatch counts attempt 2, the first time stays.
      const ref = { businessOperationId: r.record.businessOperationId, fence: r.record.fence };
      await ledger.setState(ref, { state: 'unknown', lastOutcome: 'unknown', now: T0 + 8 });
      expect(await ledger.markDispatched(ref, T0 + 9)).toMatchObject({ state: 'dispatched', attemptCount: 2, firstDispatchedAt: T0 + 7 });
      // and a dead worker's dispatched operation is a recover candidate once its lease is gone
      await ledger.release(ref);
      expect((await ledger.recoverCandidates(T0 + 10)).map((x) => x.businessOperationId)).toEqual([id('born-dispatched')]);
    });

    it('claim with dispatch changes nothing else: busy, conflict, terminal and takeovers behave as without it', async () => {
      const first = await claimed(ledger, 'dispatch-existing');
      const busy = await ledger.claim(claimInput('dispatch-existing', { owner: 'w2', dispatch: true, now: T0 + 10 }));
      expect(busy.kind).toBe('busy');
      const conflict = await ledger.claim(claimInput('dispatch-existing', { intentFingerprint: 'sha256:intent-b', dispatch: true, now: T0 + 5000 }));
      expect(conflict.kind).toBe('conflict');
      expect(await ledger.get(id('dispatch-existing'))).toMatchObject({ state: 'claimed', fence: 1, attemptCount: 0, firstDispatchedAt: null });
      // An expired claim taken over with dispatch: the state stays as it was (the taker decides from it).
      const taken = await ledger.claim(claimInput('dispatch-existing', { owner: 'w2', dispatch: true, now: T0 + 5000 }));
      expect(taken.kind).toBe('claimed');
      if (taken.kind !== 'claimed') return;
      expect(taken.takenOver).toBe(true);
      expect(taken.record).toMatchObject({ state: 'claimed', fence: 2, attemptCount: 0, firstDispatchedAt: null, leaseOwner: 'w2' });
      await expect(ledger.markDispatched(first.ref, T0 + 5001)).rejects.toSatisfy(LeaseLostError.isInstance);
      const ref = { businessOperationId: taken.record.businessOperationId, fence: taken.record.fence };
      await ledger.setState(ref, { state: 'succeeded', now: T0 + 5002 });
      const terminal = await ledger.claim(claimInput('dispatch-existing', { owner: 'w3', dispatch: true, now: T0 + 5003 }));
      expect(terminal.kind).toBe('terminal');
      expect(await ledger.get(id('dispatch-existing'))).toMatchObject({ state: 'succeeded', fence: 2, attemptCount: 0 });
    });

    it('setState with a receipt writes the state and the receipt together', async () => {
      const c = await ledger.claim(claimInput('state-receipt', { dispatch: true }));
      if (c.kind !== 'claimed') throw new Error(c.kind);
      const ref = { businessOperationId: c.record.businessOperationId, fence: c.record.fence };
      const r1 = receipt('state-receipt', 1, null);
      const u = await ledger.setState(ref, { state: 'unknown', lastOutcome: 'unknown', now: T0 + 1, receipt: r1 });
      expect(u).toMatchObject({ state: 'unknown', lastOutcome: 'unknown', updatedAt: T0 + 1 });
      expect(u).not.toHaveProperty('receipt');
      const r2 = receipt('state-receipt', 2, r1.hash);
      const done = await ledger.setState(ref, { state: 'succeeded', result: { id: 'rec_2' }, providerRef: 'rec_2', lastOutcome: 'succeeded', now: T0 + 2, receipt: r2 });
      expect(done).toMatchObject({ state: 'succeeded', providerRef: 'rec_2', leaseOwner: null, leaseExpiresAt: null });
      expect(await ledger.get(id('state-receipt'))).toMatchObject({ state: 'succeeded', result: { id: 'rec_2' } });
      expect(await ledger.receipts(id('state-receipt'))).toEqual([r1, r2]);
    });

    it('setState with a receipt writes neither when the fence is stale, the receipt is not the next seq, or the state may not change', async () => {
      const first = await claimed(ledger, 'atomic');
      await ledger.markDispatched(first.ref, T0 + 1);
      const second = await claimed(ledger, 'atomic', { owner: 'worker-2', now: T0 + 1000 });
      const before = await ledger.get(id('atomic'));
      // stale fence
      await expect(ledger.setState(first.ref, { state: 'succeeded', result: { id: 'x' }, now: T0 + 1001, receipt: receipt('atomic', 1, null) })).rejects.toSatisfy(LeaseLostError.isInstance);
      // current fence, wrong seq
      await expect(ledger.setState(second.ref, { state: 'succeeded', result: { id: 'x' }, now: T0 + 1002, receipt: receipt('atomic', 2, null) })).rejects.toSatisfy(LedgerError.isInstance);
      // current fence, a receipt of another operation
      await expect(ledger.setState(second.ref, { state: 'unknown', now: T0 + 1003, receipt: receipt('other', 1, null) })).rejects.toSatisfy(LedgerError.isInstance);
      expect(await ledger.get(id('atomic'))).toEqual(before);
      expect(await ledger.receipts(id('atomic'))).toEqual([]);
      // a state the operation may not leave: the receipt is not written either
      const r1 = receipt('atomic', 1, null);
      await ledger.setState(second.ref, { state: 'succeeded', now: T0 + 1004, receipt: r1 });
      await expect(ledger.setState(second.ref, { state: 'unknown', now: T0 + 1005, receipt: receipt('atomic', 2, r1.hash) })).rejects.toSatisfy(InvalidStateError.isInstance);
      expect(await ledger.receipts(id('atomic'))).toEqual([r1]);
      expect(await ledger.get(id('atomic'))).toMatchObject({ state: 'succeeded', updatedAt: T0 + 1004 });
    });

    it('handOff with a receipt writes the handoff and the receipt together, or neither', async () => {
      const first = await claimed(ledger, 'handoff-receipt');
      await ledger.markDispatched(first.ref, T0 + 1);
      const r1 = receipt('handoff-receipt', 1, null);
      await ledger.appendReceipt(first.ref, r1);
      const r2 = receipt('handoff-receipt', 2, r1.hash);
      // wrong seq, then a stale fence: nothing written
      await expect(ledger.handOff(first.ref, packet('handoff-receipt'), T0 + 2, receipt('handoff-receipt', 3, r1.hash))).rejects.toSatisfy(LedgerError.isInstance);
      const second = await claimed(ledger, 'handoff-receipt', { owner: 'worker-2', now: T0 + 1000 });
      await expect(ledger.handOff(first.ref, packet('handoff-receipt'), T0 + 1001, r2)).rejects.toSatisfy(LeaseLostError.isInstance);
      expect(await ledger.get(id('handoff-receipt'))).toMatchObject({ state: 'dispatched', handoff: null, fence: 2 });
      expect(await ledger.receipts(id('handoff-receipt'))).toEqual([r1]);
      const h = await ledger.handOff(second.ref, packet('handoff-receipt'), T0 + 1002, r2);
      expect(h).toMatchObject({ state: 'handed-off', leaseOwner: null, lastOutcome: 'unknown', updatedAt: T0 + 1002 });
      expect(h.handoff?.reason).toBe('unknown-no-safe-resend');
      expect(await ledger.receipts(id('handoff-receipt'))).toEqual([r1, r2]);
      // already handed off: refused, and the receipt with it
      await expect(ledger.handOff(second.ref, packet('handoff-receipt'), T0 + 1003, receipt('handoff-receipt', 3, r2.hash))).rejects.toSatisfy(InvalidStateError.isInstance);
      expect(await ledger.receipts(id('handoff-receipt'))).toEqual([r1, r2]);
    });

    it('supersede re-opens a rejected or handed-off operation as a new revision (params, key, no attempts), only at the fence the caller checked', async () => {
      const { ref } = await claimed(ledger, 'supersede');
      await ledger.markDispatched(ref, T0 + 1);
      await ledger.setState(ref, { state: 'rejected', lastOutcome: 'rejected', now: T0 + 2 });
      const next = { params: { ref: 'supersede', fixed: true }, paramsFingerprint: 'sha256:params-b', providerKey: 'rs-supersede-r2' as ProviderKey };
      // a stale fence (someone changed it since the check) answers as without supersede: nothing written
      const stale = await ledger.claim(claimInput('supersede', { ...next, now: T0 + 3, supersede: { fence: ref.fence + 7, revision: 2 } }));
      expect(stale.kind).toBe('terminal');
      expect((await ledger.get(id('supersede')))?.paramsFingerprint).toBe('sha256:params-a');
      const s = await ledger.claim(claimInput('supersede', { ...next, owner: 'w2', now: T0 + 3, supersede: { fence: ref.fence, revision: 2 } }));
      expect(s.kind).toBe('claimed');
      if (s.kind !== 'claimed') return;
      expect(s.record).toMatchObject({ state: 'claimed', fence: ref.fence + 1, attemptCount: 0, firstDispatchedAt: null, lastOutcome: null, handoff: null, ...next, leaseOwner: 'w2' });
      expect(s.record.resolution).toMatchObject({ action: 'supersede', revision: 2, at: T0 + 3 });
      expect(await ledger.get(id('supersede'))).toEqual(s.record);
      await expect(ledger.markDispatched(ref, T0 + 4)).rejects.toSatisfy(LeaseLostError.isInstance);
      // never on a live or succeeded operation
      const live = await claimed(ledger, 'supersede-live');
      expect((await ledger.claim(claimInput('supersede-live', { ...next, owner: 'w2', supersede: { fence: live.ref.fence, revision: 2 } }))).kind).toBe('busy');
      await ledger.setState(live.ref, { state: 'succeeded', now: T0 + 1 });
      expect((await ledger.claim(claimInput('supersede-live', { ...next, owner: 'w2', now: T0 + 2, supersede: { fence: live.ref.fence, revision: 2 } }))).kind).toBe('terminal');
    });

    it('anchors the receipt chain on the row in the same write as each receipt (head hash and length), and verifies against it', async () => {
      const { ref } = await claimed(ledger, 'anchor');
      expect((await ledger.get(id('anchor')))!.receiptChain).toEqual({ head: null, length: 0 });
      const r1 = receipt('anchor', 1, null);
      await ledger.appendReceipt(ref, r1);
      expect((await ledger.get(id('anchor')))!.receiptChain).toEqual({ head: r1.hash, length: 1 });
      const r2 = receipt('anchor', 2, r1.hash);
      const s = await ledger.setState(ref, { state: 'unknown', now: T0 + 1, ...(ledger.capabilities?.receiptWithState ? { receipt: r2 } : {}) });
      if (!ledger.capabilities?.receiptWithState) await ledger.appendReceipt(ref, r2);
      else expect(s.receiptChain).toEqual({ head: r2.hash, length: 2 });
      const r3 = receipt('anchor', 3, r2.hash);
      await (ledger.capabilities?.receiptWithState ? ledger.handOff(ref, packet('anchor'), T0 + 2, r3) : ledger.appendReceipt(ref, r3).then(() => ledger.handOff(ref, packet('anchor'), T0 + 2)));
      const row = (await ledger.get(id('anchor')))!;
      expect(row.receiptChain).toEqual({ head: r3.hash, length: 3 });
      // A refused receipt moves nothing.
      await expect(ledger.appendReceipt(ref, receipt('anchor', 5, r3.hash))).rejects.toSatisfy(LedgerError.isInstance);
      expect((await ledger.get(id('anchor')))!.receiptChain).toEqual({ head: r3.hash, length: 3 });
      // Resolving keeps the anchor; the resolve receipt moves it.
      const done = await ledger.resolve(id('anchor'), { action: 'abandon' }, T0 + 3);
      expect(done.receiptChain).toEqual({ head: r3.hash, length: 3 });
      const r4 = receipt('anchor', 4, r3.hash);
      await ledger.appendReceipt({ businessOperationId: id('anchor'), fence: done.fence }, r4);
      const receipts = await ledger.receipts(id('anchor'));
      const anchor = (await ledger.get(id('anchor')))!.receiptChain!;
      expect(anchor).toEqual({ head: r4.hash, length: 4 });
      expect(verifyReceiptChain(receipts, { anchor })).toEqual({ ok: true });
      // Against the anchor, a deleted tail (or every receipt deleted) is a break, though the rest still chains.
      expect(verifyReceiptChain(receipts.slice(0, 3))).toEqual({ ok: true });
      expect(verifyReceiptChain(receipts.slice(0, 3), { anchor })).toMatchObject({ ok: false });
      expect(verifyReceiptChain([], { anchor })).toMatchObject({ ok: false });
    });

    it('prune (retention, optional): deletes closed operations older than the cutoff with their receipts, never open or handed-off ones', async () => {
      if (typeof ledger.prune !== 'function') return; // optional: a ledger without retention keeps everything
      const done = async (name: string, state: 'succeeded' | 'rejected', at: number) => {
        const { ref } = await claimed(ledger, name, { dispatch: true } as Partial<ClaimInput>);
        const r1 = receipt(name, 1, null);
        if (ledger.capabilities?.receiptWithState) await ledger.setState(ref, { state, now: at, receipt: r1 });
        else (await ledger.appendReceipt(ref, r1), await ledger.setState(ref, { state, now: at }));
      };
      await done('p-ok', 'succeeded', T0 + 10);
      await done('p-rej', 'rejected', T0 + 11);
      await done('p-new', 'succeeded', T0 + 500);
      const handed = await claimed(ledger, 'p-handed');
      await ledger.handOff(handed.ref, packet('p-handed'), T0 + 12);
      const gone = await claimed(ledger, 'p-abandoned');
      await ledger.handOff(gone.ref, packet('p-abandoned'), T0 + 13);
      await ledger.resolve(id('p-abandoned'), { action: 'abandon' }, T0 + 14);
      await claimed(ledger, 'p-open'); // claimed at T0, lease expired long before the cutoff: still open
      const d = await claimed(ledger, 'p-dispatched');
      await ledger.markDispatched(d.ref, T0 + 15);
      const before = T0 + 100;

      const dry = await ledger.prune({ before, dryRun: true });
      expect(dry).toEqual({ pruned: 3, byState: { succeeded: 1, rejected: 1, abandoned: 1 }, dryRun: true });
      expect(await ledger.get(id('p-ok'))).not.toBeNull();

      await expect(ledger.prune({ before, states: ['handed-off'] })).rejects.toSatisfy(LedgerError.isInstance);
      await expect(ledger.prune({ before, states: ['claimed'] })).rejects.toSatisfy(LedgerError.isInstance);
      // A failing export stops the prune before that batch is deleted.
      await expect(ledger.prune({ before, onPrune: () => Promise.reject(new Error('disk full')) })).rejects.toThrow('disk full');
      expect(await ledger.get(id('p-ok'))).not.toBeNull();

      const seen: Array<[string, number]> = [];
      const report = await ledger.prune({ before, batchSize: 2, onPrune: (r, rs) => void seen.push([r.businessOperationId, rs.length]) });
      expect(report).toEqual({ pruned: 3, byState: { succeeded: 1, rejected: 1, abandoned: 1 }, dryRun: false });
      expect(seen.sort()).toEqual([[id('p-abandoned'), 0], [id('p-ok'), 1], [id('p-rej'), 1]]);
      for (const name of ['p-ok', 'p-rej', 'p-abandoned']) {
        expect(await ledger.get(id(name))).toBeNull();
        expect(await ledger.receipts(id(name))).toEqual([]);
      }
      for (const name of ['p-new', 'p-handed', 'p-open', 'p-dispatched']) expect(await ledger.get(id(name))).not.toBeNull();
      expect((await ledger.receipts(id('p-new'))).length).toBe(1);
      expect((await ledger.list()).map((r) => r.businessOperationId).sort()).toEqual(['p-dispatched', 'p-handed', 'p-new', 'p-open'].map(id).sort());
      expect((await ledger.recoverCandidates(T0 + 10_000)).map((r) => r.businessOperationId).sort()).toEqual([id('p-dispatched'), id('p-open')].sort());
      expect(await ledger.prune({ before })).toEqual({ pruned: 0, byState: {}, dryRun: false });
      // A pruned id is forgotten: a claim starts it afresh.
      expect(await ledger.claim(claimInput('p-ok', { now: T0 + 20_000 }))).toMatchObject({ kind: 'claimed', takenOver: false, record: { fence: 1 } });
    });

    // The claim decision table: every ledger must answer each (existing record, claim input) exactly as
    // the contract's claimTransition does on the record it stores, and store what the rule writes. A
    // ledger that restates the rule (say, in SQL) and drifts fails here, on the case where it drifts.
    type Existing = (name: string) => Promise<Fenced | null>;
    const settled = (state: 'succeeded' | 'rejected'): Existing => async (name) => {
      const { ref } = await claimed(ledger, name);
      await ledger.markDispatched(ref, T0 + 1);
      await ledger.setState(ref, { state, lastOutcome: state === 'rejected' ? 'rejected' : 'succeeded', now: T0 + 2 });
      return ref;
    };
    const handedOff: Existing = async (name) => {
      const { ref } = await claimed(ledger, name);
      await ledger.markDispatched(ref, T0 + 1);
      await ledger.handOff(ref, packet(name), T0 + 2);
      return ref;
    };
    const live: Existing = async (name) => (await claimed(ledger, name)).ref;
    const released: Existing = async (name) => {
      const { ref } = await claimed(ledger, name);
      await ledger.release(ref);
      return ref;
    };
    const dispatched: Existing = async (name) => {
      const { ref } = await claimed(ledger, name);
      await ledger.markDispatched(ref, T0 + 1);
      return ref;
    };
    const revised = { params: { fixed: true }, paramsFingerprint: 'sha256:params-b', providerKey: 'rs-revised' as ProviderKey };
    type Over = (ref: Fenced | null) => Partial<ClaimInput>;
    const claimTable: ReadonlyArray<readonly [string, Existing, Over, ClaimResult['kind'], boolean?]> = [
      ['new operation', async () => null, () => ({}), 'claimed', false],
      ['new operation, dispatch', async () => null, () => ({ dispatch: true }), 'claimed', false],
      ['live lease', live, () => ({ owner: 'w2', now: T0 + 999 }), 'busy'],
      ['live lease, own owner', live, () => ({ now: T0 + 500 }), 'busy'],
      ['expired lease: takeover', live, () => ({ owner: 'w2', now: T0 + 1000 }), 'claimed', true],
      ['expired lease of a dispatched op, dispatch: takeover, state kept', dispatched, () => ({ owner: 'w2', dispatch: true, now: T0 + 5000 }), 'claimed', true],
      ['released lease: takeover before expiry', released, () => ({ owner: 'w2', now: T0 + 1 }), 'claimed', true],
      ['live lease, resume', live, () => ({ owner: 'w2', resume: true, now: T0 + 10 }), 'busy'],
      ['expired lease, supersede ignored', live, (ref) => ({ ...revised, owner: 'w2', now: T0 + 5000, supersede: { fence: ref!.fence, revision: 2 } }), 'claimed', true],
      ['intent conflict', live, () => ({ intentFingerprint: 'sha256:intent-b', now: T0 + 5000 }), 'conflict'],
      ['operation conflict', live, () => ({ operation: 'sandbox.other', now: T0 + 5000 }), 'conflict'],
      ['intent conflict on a terminal op', settled('succeeded'), () => ({ intentFingerprint: 'sha256:intent-b', now: T0 + 5000 }), 'conflict'],
      ['succeeded: terminal', settled('succeeded'), () => ({ owner: 'w2', now: T0 + 5000 }), 'terminal'],
      ['succeeded, resume: terminal', settled('succeeded'), () => ({ owner: 'w2', resume: true, now: T0 + 5000 }), 'terminal'],
      ['succeeded, supersede at its fence: terminal', settled('succeeded'), (ref) => ({ ...revised, now: T0 + 5000, supersede: { fence: ref!.fence, revision: 2 } }), 'terminal'],
      ['rejected: terminal', settled('rejected'), () => ({ now: T0 + 5000 }), 'terminal'],
      ['rejected, resume: terminal', settled('rejected'), () => ({ resume: true, now: T0 + 5000 }), 'terminal'],
      ['rejected, supersede with a stale fence: terminal', settled('rejected'), (ref) => ({ ...revised, now: T0 + 3, supersede: { fence: ref!.fence + 7, revision: 2 } }), 'terminal'],
      ['rejected, supersede at its fence', settled('rejected'), (ref) => ({ ...revised, owner: 'w2', now: T0 + 3, supersede: { fence: ref!.fence, revision: 2 } }), 'claimed', false],
      ['handed-off: terminal', handedOff, () => ({ now: T0 + 3 }), 'terminal'],
      ['handed-off, resume', handedOff, () => ({ owner: 'person', resume: true, now: T0 + 3 }), 'claimed', true],
      ['handed-off, supersede with a stale fence: terminal', handedOff, (ref) => ({ ...revised, now: T0 + 3, supersede: { fence: ref!.fence - 1, revision: 2 } }), 'terminal'],
      ['handed-off, supersede at its fence', handedOff, (ref) => ({ ...revised, now: T0 + 3, supersede: { fence: ref!.fence, revision: 2 } }), 'claimed', false],
      ['handed-off, resume and supersede at its fence: resume wins', handedOff, (ref) => ({ ...revised, resume: true, now: T0 + 3, supersede: { fence: ref!.fence, revision: 2 } }), 'claimed', true],
      ['handed-off, resume and supersede with a stale fence: resume', handedOff, (ref) => ({ ...revised, resume: true, now: T0 + 3, supersede: { fence: ref!.fence + 1, revision: 2 } }), 'claimed', true],
    ];
    for (const [what, existing, over, kind, takenOver] of claimTable) {
      it(`claim decision table: ${what} → ${kind}${takenOver === undefined ? '' : takenOver ? ' (taken over)' : ' (new)'}, as the contract's claimTransition says`, async () => {
        const name = `table-${what.replace(/[^a-z]+/gi, '-')}`;
        const ref = await existing(name);
        const before = await ledger.get(id(name));
        const input = claimInput(name, over(ref));
        const rule = claimTransition(before, input);
        expect(rule.result.kind).toBe(kind); // the table's intent, so the rule itself cannot drift unseen
        if (rule.result.kind === 'claimed') expect(rule.result.takenOver).toBe(takenOver);
        const got = await ledger.claim(input);
        expect(got).toEqual(rule.result);
        expect(await ledger.get(id(name))).toEqual(rule.write ?? before);
      });
    }

    it('refuses writes to an operation that does not exist', async () => {
      await expect(ledger.markDispatched({ businessOperationId: id('ghost'), fence: 1 }, T0)).rejects.toSatisfy(LedgerError.isInstance);
    });
  });
}
