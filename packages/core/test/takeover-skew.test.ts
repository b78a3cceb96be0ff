import type { AdapterV1, Ledger } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';

const OP = 'records.create';
type VirtualClock = ReturnType<typeof createVirtualClock>;

/** A second runner two minutes on: done after one lookup and the re-send (a second look a full late-apply bound
 * after the first would prove nothing more). */
async function takeOverLongAfter(ledger: Ledger, adapter: AdapterV1, real: VirtualClock, ref: string) {
  real.advance(120_000);
  const rb = await createRunner({ ledger, clock: real, random: () => 0.5 }).run(adapter, OP, { params: { ref } });
  expect(rb).toMatchObject({ status: 'done' });
  const [rec] = await ledger.list({});
  expect((await ledger.receipts(rec!.businessOperationId)).map((r) => r.kind)).toEqual(['lookup', 'resend']);
}

/** A promise and the function that settles it. */
function signal() {
  let fire = () => {};
  const fired = new Promise<void>((r) => {
    fire = r;
  });
  return { fire, fired };
}

/** `inner`, whose claim (a new operation's `dispatched` write) is written at once but answered only when `answer` fires. */
function lateDispatchAnswer(inner: Ledger, written: () => void, answer: Promise<void>): Ledger {
  return new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      if (prop !== 'claim') return v.bind(target);
      return async (...a: unknown[]) => {
        const record = await v.apply(target, a);
        written();
        await answer;
        return record;
      };
    },
  });
}

/** A sandbox on a virtual clock where every send is a record of its own and the lookup sees one at once. */
function duplicatingSandbox(lateApplyMs: number) {
  const real = createVirtualClock();
  const provider = createSandboxProvider({
    replays: false,
    retentionMs: null,
    parameterMatching: 'none',
    concurrency: 'duplicates',
    lookup: 'get-by-key',
    lateApplyMs,
    clock: real.now,
    sleep: real.sleep,
  });
  return { real, provider, adapter: createSandboxAdapter({ provider }) };
}

/**
 * Worker A, its clock 20 s behind (the card's margin is 1 min), held between its durable `dispatched` write and
 * its request (the ledger answers late) on a sandbox where every send is a record of its own and the lookup sees
 * one at once; then 11 s on: A's lease (30 s from its clock's reading) ended 1 s ago on the ledger's clock, while
 * A still holds it on its own.
 */
async function laggingOwner(ref: string, lateApplyMs = 0) {
  const { real, provider, adapter } = duplicatingSandbox(lateApplyMs);
  const ledger = createMemoryLedger();
  const answer = signal();
  const written = signal();
  const sent = signal();
  const aAdapter = {
    ...adapter,
    doExecute: async (...a: Parameters<typeof adapter.doExecute>) => {
      const outcome = await adapter.doExecute(...a);
      sent.fire();
      return outcome;
    },
  };
  const lagging = { now: () => real.now() - 20_000, sleep: real.sleep };
  const a = createRunner({ ledger: lateDispatchAnswer(ledger, written.fire, answer.fired), clock: lagging });
  const runA = a.run(aAdapter, OP, { params: { ref } }).catch((e: unknown) => e);
  await written.fired;
  real.advance(11_000);
  /** A taker's adapter: A goes on just after the taker's first lookup found nothing, until it has sent or stopped. */
  const sendsAfterFirstLookup = () => {
    let lookups = 0;
    return {
      ...adapter,
      doLookup: async (...l: Parameters<typeof adapter.doLookup>) => {
        const found = await adapter.doLookup(...l);
        if (++lookups === 1) {
          answer.fire();
          await Promise.race([sent.fired, runA]);
        }
        return found;
      },
    };
  };
  return { real, provider, adapter, ledger, answer, runA, sendsAfterFirstLookup };
}

describe('a takeover and an owner whose clock lags (limits.clockSkewMargin)', () => {
  it("the owner may still send after its lease ran out on the taker's clock: the taker's not-found waits the margin, then adopts its record", async () => {
    const { real, provider, ledger, answer, runA, sendsAfterFirstLookup } = await laggingOwner('r-skew');
    const bAdapter = sendsAfterFirstLookup();
    // B keeps the card's 30 s lookup window: it opens once A can no longer send.
    const rb = await createRunner({ ledger, clock: real, random: () => 0.5 }).run(bAdapter, OP, {
      params: { ref: 'r-skew' },
    });
    answer.fire();
    await runA;
    expect(provider.count()).toBe(1);
    expect(rb).toMatchObject({ status: 'done', adopted: true });
  });

  it("a taker that stops before the old owner's lease end + the margin keeps its lease: a release would erase that end, and the next claim's not-found would re-send", async () => {
    const { real, provider, adapter, ledger, answer, runA, sendsAfterFirstLookup } = await laggingOwner('r-release');
    // B takes over, finds nothing yet (too early to prove anything), and its caller gives up.
    const stop = new AbortController();
    const bAdapter = {
      ...adapter,
      doLookup: async (...l: Parameters<typeof adapter.doLookup>) => {
        const found = await adapter.doLookup(...l);
        stop.abort(new Error('caller timed out'));
        return found;
      },
    };
    const rb = await createRunner({ ledger, clock: real, random: () => 0.5 })
      .run(bAdapter, OP, { params: { ref: 'r-release' }, signal: stop.signal })
      .catch((e: unknown) => e);
    expect(rb).toMatchObject({ message: 'caller timed out' });
    // The caller runs it again; A's request goes out just after that run's first lookup found nothing.
    const cAdapter = sendsAfterFirstLookup();
    const rc = await createRunner({ ledger, clock: real, random: () => 0.5, policy: { waitForOtherMs: 60_000 } }).run(
      cAdapter,
      OP,
      { params: { ref: 'r-release' } },
    );
    answer.fire();
    await runA;
    expect(provider.count()).toBe(1);
    expect(rc).toMatchObject({ status: 'done' });
  });

  it("a not-found asked long after the old owner's lease end + the margin + the late-apply bound proves absence at once: no wait counted from the taker's own claim", async () => {
    const { real, provider, adapter, ledger, answer, runA } = await laggingOwner('r-long-gone', 1_000);
    await takeOverLongAfter(ledger, adapter, real, 'r-long-gone');
    answer.fire();
    await runA;
    expect(provider.count()).toBe(1);
  });
});

describe('a takeover on a ledger whose one clock judges every lease (sharedLeaseClock)', () => {
  it("a not-found asked long after the old owner's lease end + the late-apply bound proves absence at once", async () => {
    const { real, provider, adapter } = duplicatingSandbox(1_000);
    const memory = createMemoryLedger();
    const ledger: Ledger = Object.assign(Object.create(memory) as Ledger, {
      capabilities: { ...memory.capabilities, sharedLeaseClock: true },
    });
    // The owner stops for good between its `dispatched` write and its request.
    const written = signal();
    const never = new Promise<void>(() => {});
    const a = createRunner({ ledger: lateDispatchAnswer(memory, written.fire, never), clock: real });
    void a.run(adapter, OP, { params: { ref: 'r-one-clock' } });
    await written.fired;
    await takeOverLongAfter(ledger, adapter, real, 'r-one-clock');
    expect(provider.count()).toBe(1);
  });
});
