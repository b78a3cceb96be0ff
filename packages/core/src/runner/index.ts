/** The runner (docs/concepts.md): claim, dispatch once, reconcile, retry within bounds, or hand off. */
import { type AdapterV1, InvalidIdError, InvalidIntentError, PayloadLimitError } from '@retrysafe/contract';
import { AdapterContractError } from '../errors/adapter-contract-error.js';
import { resolvedIntent } from '../intake/identity.js';
import { newOperation } from '../intake/operation.js';
import { RUNNER_REDACT } from '../redact.js';
import { claimAndDrive } from './claim.js';
import { createContext } from './context.js';
import { checkResolve, recover } from './operator.js';
import type { RunFunction, RunInput, Runner, RunnerOptions, RunResult } from './types.js';

const INTENT_REFUSALS = [PayloadLimitError, InvalidIntentError, InvalidIdError];

/** The operation of the intent doResolveIntent returned: intake refusing it is the adapter's fault, not the caller's. */
function resolvedOperation(...[ctx, adapter, operation, input]: Parameters<typeof newOperation>) {
  try {
    return newOperation(ctx, adapter, operation, input);
  } catch (err) {
    if (!INTENT_REFUSALS.some((c) => c.isInstance(err))) throw err;
    const problem = `doResolveIntent returned an intent core refuses (${(err as Error).message})`;
    throw new AdapterContractError(adapter.provider, operation, problem, { cause: err });
  }
}

export function createRunner(options: RunnerOptions): Runner {
  const ctx = createContext(options);
  async function run(adapter: AdapterV1, operation: string, input: RunInput): Promise<RunResult> {
    const startedAt = ctx.clock.now();
    let op = newOperation(ctx, adapter, operation, input);
    const intent = await resolvedIntent(ctx, op, input);
    if (intent !== null)
      op = {
        ...resolvedOperation(ctx, adapter, operation, { ...input, intent }),
        intentFrom: 'resolved',
        target: intent,
      };
    return ctx.tele.run(
      { operation: op.card.operation, provider: adapter.provider, businessOperationId: op.id },
      (scope) => claimAndDrive(ctx, { ...op, scope, startedAt }),
    );
  }
  const runner: Runner = {
    run: run as RunFunction,
    recover: (opts) => recover(ctx, opts),
    resolve: async (id, resolution, opts) => (await checkResolve(ctx, id, resolution, opts))(),
    checkResolve: async (id, resolution, opts) => void (await checkResolve(ctx, id, resolution, opts)),
  };
  // Enumerable: a runner spread with fields of its own (`{ ...runner, extra }`) keeps its redaction.
  return Object.defineProperty(runner, RUNNER_REDACT, { value: options.redact ?? {}, enumerable: true });
}
