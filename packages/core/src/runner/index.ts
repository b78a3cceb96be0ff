/**
 * The runner (docs/concepts.md): claim, dispatch once, reconcile, retry within bounds, or hand off.
 *   ../intake/       everything that can refuse an operation before its claim, and the operation object
 *   claim.ts         the claim and what its answer means; waiting for another worker; revisions
 *   state.ts         what the attempt loop knows of a claimed operation (owned by loop.ts)
 *   loop.ts          the attempt loop around decide() and observationPatch() (../decide.ts)
 *   adapter-call.ts  one provider call or lookup through the adapter, its answer checked
 *   lease.ts         lease keeping; heartbeat.ts the one timer that renews the leases of calls in flight
 *   receipt-chain.ts receipts sealed onto the chain
 *   terminal.ts      succeeded, handed off, or answered from a terminal state
 *   operator.ts      recover() and resolve()
 */
import type { AdapterV1 } from '@retrysafe/contract';
import { newOperation } from '../intake/operation.js';
import { claimAndDrive } from './claim.js';
import { createContext } from './context.js';
import { recover, resolve } from './operator.js';
import type { RunFunction, RunInput, Runner, RunnerOptions, RunResult } from './types.js';

export function createRunner(options: RunnerOptions): Runner {
  const ctx = createContext(options);
  async function run(adapter: AdapterV1, operation: string, input: RunInput): Promise<RunResult> {
    const op = newOperation(ctx, adapter, operation, input);
    // The run's telemetry scope travels with the operation.
    return ctx.tele.run(
      { operation: op.card.operation, provider: adapter.provider, businessOperationId: op.id },
      (scope) => claimAndDrive(ctx, { ...op, scope }),
    );
  }
  return {
    run: run as RunFunction,
    recover: (opts) => recover(ctx, opts),
    resolve: (id, resolution, opts) => resolve(ctx, id, resolution, opts),
  };
}
