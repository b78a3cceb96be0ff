/**
 * The runner (docs/concepts.md): claim, dispatch once, reconcile, retry within bounds, or hand off.
 * Its rooms, each plain functions over the worker's RunnerContext (context.ts):
 *   intake.ts        what an operation is before its claim (a new call, or a stored operation)
 *   coordinate.ts    the claim and what its answer means; the run of one claimed operation; revisions
 *   loop.ts          the attempt loop around decide() and observationPatch() (../decide.ts)
 *   lease.ts         lease keeping; heartbeat.ts the one timer that renews the leases of calls in flight
 *   adapter-call.ts  one provider call or lookup through the adapter; guards.ts checks adapters and answers
 *   receipt-chain.ts receipts sealed onto the chain, written with their state
 *   terminal.ts      succeeded, handed off, or answered from a terminal state
 *   operator.ts      recover() and resolve()
 */
import type { AdapterV1 } from '@retrysafe/contract';
import type { RunFunction } from '../typed-run.js';
import { createContext } from './context.js';
import { claimAndDrive } from './coordinate.js';
import { intakeRun, rebased } from './intake.js';
import { recover, resolve } from './operator.js';
import type { RecoverReport, Resolution, ResolveOptions, ResolveResult, RunInput, RunnerOptions, RunResult } from './types.js';

export type { LogEntry, RecoverReport, Resolution, ResolveOptions, ResolveResult, RunInput, RunnerOptions, RunResult } from './types.js';

export interface Runner {
  /** Typed from the adapter when it is a `TypedAdapter` (see typed-run.ts); untyped adapters as before. */
  run: RunFunction;
  /** Reconciles operations left claimed/dispatched/unknown/in-progress by a worker whose lease expired. */
  recover(options: { readonly adapters: readonly AdapterV1[]; readonly limit?: number }): Promise<RecoverReport[]>;
  /** A person's decision on a handed-off operation. `resume` re-sends with the SAME provider key. */
  resolve(id: string, resolution: Resolution, options?: ResolveOptions): Promise<ResolveResult>;
}

/** The runner (docs/concepts.md): claim, dispatch once, reconcile, retry within bounds, or hand off. */
export function createRunner(options: RunnerOptions): Runner {
  const ctx = createContext(options);
  async function run(adapter: AdapterV1, operation: string, input: RunInput): Promise<RunResult> {
    const { base, claimInput } = await intakeRun(ctx, adapter, operation, input);
    // The run's telemetry scope travels with the operation (no AsyncLocalStorage on the hot path).
    return ctx.tele.run({ operation: base.card.operation, provider: adapter.provider, businessOperationId: base.id }, (scope) => claimAndDrive(ctx, rebased(base, base.providerKey, scope), claimInput, claimInput.paramsFingerprint));
  }
  return {
    run: run as RunFunction,
    recover: (opts) => recover(ctx, opts),
    resolve: (id, resolution, opts) => resolve(ctx, id, resolution, opts),
  };
}
