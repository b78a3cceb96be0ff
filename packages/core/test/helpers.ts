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
