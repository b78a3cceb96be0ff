// What the runner's property tests share: the space of sandbox behaviours they search, and a sandbox
// on a fresh virtual clock with scripted faults queued. Each test keeps its own faults and policy ranges.

import { createVirtualClock } from '@retrysafe/core';
import {
  createSandboxAdapter,
  createSandboxProvider,
  type SandboxBehaviour,
  type SandboxFault,
} from '@retrysafe/sandbox';
import fc from 'fast-check';

/** Every behaviour a sandbox card can describe, with the delays that make lookups and processing race. */
export const sandboxBehaviourArb: fc.Arbitrary<SandboxBehaviour> = fc.record({
  replays: fc.boolean(),
  retentionMs: fc.constantFrom(null, 60_000, 86_400_000),
  parameterMatching: fc.constantFrom('mismatch-error', 'replay-anyway', 'none'),
  concurrency: fc.constantFrom('rejects-in-progress', 'waits-then-replays', 'duplicates'),
  lookup: fc.constantFrom('get-by-key', 'none'),
  lookupDelayMs: fc.constantFrom(0, 3000),
  processingMs: fc.constantFrom(0, 0, 4000),
}) as fc.Arbitrary<SandboxBehaviour>;

/** A sandbox provider and its adapter on a new virtual clock, `faults` queued for its next create calls. */
export function sandboxOnVirtualClock(behaviour: SandboxBehaviour, faults: readonly SandboxFault[] = []) {
  const clock = createVirtualClock();
  const provider = createSandboxProvider({ ...behaviour, clock: clock.now, sleep: clock.sleep });
  for (const f of faults) provider.failNext(f);
  return { clock, provider, adapter: createSandboxAdapter({ provider }) };
}

/** Faults every property test draws from: a not-applied answer (Retry-After up to `maxRetryAfterMs`) and lost answers. */
export const commonFaultArbs = (maxRetryAfterMs: number): fc.Arbitrary<SandboxFault>[] => [
  fc.record({ kind: fc.constant('not-applied' as const), retryAfterMs: fc.integer({ min: 0, max: maxRetryAfterMs }) }),
  fc.constant({ kind: 'unknown-after-commit' as const }),
  fc.constant({ kind: 'unknown-before-commit' as const }),
];
