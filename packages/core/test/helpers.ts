import { type AdapterV1, type Ledger, LedgerError, type Outcome } from '@retrysafe/contract';
import {
  createMemoryLedger,
  createRunner,
  createVirtualClock,
  type DecisionState,
  type RunnerOptions,
} from '@retrysafe/core';
import {
  createSandboxAdapter,
  createSandboxProvider,
  REPLAYING_BEHAVIOUR,
  type SandboxBehaviour,
} from '@retrysafe/sandbox';
import { expect } from 'vitest';

/** The sandbox provider (replaying) and its adapter on `clock`. */
export function sandboxOn(clock = createVirtualClock()) {
  const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now, sleep: clock.sleep });
  return { clock, provider, adapter: createSandboxAdapter({ provider }) };
}

/** A sandbox, its adapter, a memory ledger and a runner, all on one virtual clock. */
export function setup(
  behaviour: Partial<SandboxBehaviour> = {},
  runner: Partial<RunnerOptions> = {},
  adapterOpts: { limits?: Record<string, unknown>; sensitiveFields?: string[] } = {},
) {
  const clock = createVirtualClock();
  const provider = createSandboxProvider({
    ...REPLAYING_BEHAVIOUR,
    ...behaviour,
    clock: clock.now,
    sleep: clock.sleep,
  });
  const adapter = createSandboxAdapter({ provider, ...(adapterOpts as object) });
  const ledger = createMemoryLedger();
  const packets: unknown[] = [];
  const r = createRunner({
    ledger,
    clock,
    random: () => 0.5,
    handoff: { send: (p) => void packets.push(p) },
    ...runner,
  });
  return { clock, provider, adapter, ledger, runner: r, packets };
}

/**
 * `adapter` whose `n`th call (from 0) is answered `script(n, send)` where it gives an answer, else sent; `send` sends
 * it, for an answer that comes after the provider had it.
 */
export function scripted(
  adapter: AdapterV1,
  script: (n: number, send: () => Promise<Outcome>) => Outcome | Promise<Outcome> | undefined,
): AdapterV1 {
  let n = 0;
  const { specificationVersion, provider, operations, doLookup } = adapter;
  return {
    specificationVersion,
    provider,
    operations,
    doLookup,
    deriveProviderKey: (op, id) => adapter.deriveProviderKey(op, id),
    doExecute: (op, params, ctx) => {
      const send = () => adapter.doExecute(op, params, ctx);
      return Promise.resolve(script(n++, send) ?? send());
    },
  };
}

export const T0 = Date.UTC(2026, 0, 1);

/** What the runner knows one second after its only dispatch, at T0, with `over` on top. */
export const decisionState = (over: Partial<DecisionState> = {}): DecisionState => ({
  ledgerState: 'unknown',
  now: T0 + 1000,
  firstDispatchedAt: T0,
  runAttempts: 1,
  runStartedAt: T0,
  windowStartedAt: null,
  polls: 0,
  ...over,
});

/** A person who checked at the provider resumes with force: the operation ends done, with one provider record. */
export async function expectForcedResume(
  s: Pick<ReturnType<typeof setup>, 'provider' | 'adapter' | 'runner'>,
  id: string,
) {
  const resumed = await s.runner.resolve(id, { action: 'resume', force: true }, { adapters: [s.adapter], by: 'alice' });
  expect(resumed.status).toBe('done');
  expect(s.provider.count()).toBe(1);
}

/** `inner`, whose process "pauses" for `ms` (the clock moves on) right after the ledger answers the n-th call of `method`. */
export function pauseAfter(inner: Ledger, method: string, clock: { advance(ms: number): void }, ms: number, nth = 1) {
  return afterCall(inner, method, async () => clock.advance(ms), nth);
}

/** A caller's signal aborted before the claim, with the error of a worker that stopped before sending: the operation is
 * left `claimed`, its lease given back, nothing sent. */
export const stoppedBeforeSend = () =>
  AbortSignal.abort(new LedgerError('the worker stopped before sending (injected)'));

/** `inner`, whose first call of `method` fails (a full disk). */
export function failingOnce(inner: Ledger, method: string): Ledger {
  let failed = false;
  return new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (prop === method && !failed) {
          failed = true;
          return Promise.reject(new LedgerError(`${method}: disk full (injected)`));
        }
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** `inner`, which runs `act` once, right after its n-th answer to `method`: another actor between a read and what follows. */
export function afterCall(inner: Ledger, method: string, act: (answer: unknown) => Promise<void>, nth = 1): Ledger {
  let calls = 0;
  return new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      return async (...args: unknown[]) => {
        const out = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (prop === method && ++calls === nth) await act(out);
        return out;
      };
    },
  });
}

/** The memory ledger, whose separate receipt write fails once `failing.on` is set (a crash at that step). */
export function receiptWriteFails(): { ledger: Ledger; failing: { on: boolean } } {
  const inner = createMemoryLedger();
  const failing = { on: false };
  const ledger: Ledger = {
    ...inner,
    appendReceipt: (ref, receipt) =>
      failing.on ? Promise.reject(new LedgerError('disk gone')) : inner.appendReceipt(ref, receipt),
  };
  return { ledger, failing };
}

/** A promise and what resolves it: a test holds a call at a point, and lets it go. */
export function latch() {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve: () => resolve() };
}

/** `adapter` whose calls wait at a gate: `atGate` resolves when one arrives there, `gate.resolve()` lets them on. */
export function gated<A extends AdapterV1>(adapter: A) {
  const atGate = latch();
  const gate = latch();
  const held: A = {
    ...adapter,
    doExecute: async (...a: Parameters<AdapterV1['doExecute']>) => (
      atGate.resolve(), await gate.promise, adapter.doExecute(...a)
    ),
  };
  return { held, atGate, gate };
}
