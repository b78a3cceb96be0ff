import type { AdapterV1, OperationName, OperationParams, OperationResult } from '@retrysafe/contract';
import type { RunInput, RunResult } from './runner/types.js';

/** `RunInput` whose params are the operation's declared params type. */
export type TypedRunInput<P> = Omit<RunInput, 'params'> & { readonly params: P };

/** `RunResult` whose `done` branch carries the operation's declared result type. */
export type TypedRunResult<R> =
  | Exclude<RunResult, { readonly status: 'done' }>
  | (Omit<Extract<RunResult, { readonly status: 'done' }>, 'result'> & { readonly result: R });

/**
 * `runner.run`, typed from the adapter: with a `TypedAdapter` the operation name is one of its
 * literals (and autocompletes), the params must be that operation's params type, and a `done` result
 * is that operation's result type. An untyped `AdapterV1` takes any name, `unknown` params, and gives
 * an `unknown` result, as before.
 */
export type RunFunction = <A extends AdapterV1, N extends OperationName<A>>(
  adapter: A,
  operation: N,
  input: TypedRunInput<OperationParams<A, N>>,
) => Promise<TypedRunResult<OperationResult<A, N>>>;
