import type { AdapterV1 } from './adapter.js';

/** One operation's params and `done` result, at compile time only, so `runner.run()` can check a call. */
export interface OperationTypes<P = unknown, R = unknown> {
  readonly params: P;
  readonly result: R;
}

export type OperationTypeMap = { readonly [name: string]: OperationTypes };

/** `'~operations'` exists only in the type, so a typed adapter is still a plain `AdapterV1` everywhere. */
export interface TypedAdapter<Ops extends OperationTypeMap> extends AdapterV1 {
  readonly '~operations'?: Ops;
}

export type OperationsOf<A> = A extends { readonly '~operations'?: infer O extends OperationTypeMap }
  ? string extends keyof O
    ? never
    : O
  : never;

/** The operation names a call may use: the declared literals, or any string for an untyped adapter. */
export type OperationName<A> = [OperationsOf<A>] extends [never] ? string : Extract<keyof OperationsOf<A>, string>;

type Member<A, N extends string, K extends keyof OperationTypes> = [OperationsOf<A>] extends [never]
  ? unknown
  : N extends keyof OperationsOf<A>
    ? OperationsOf<A>[N][K]
    : never;

export type OperationParams<A, N extends string> = Member<A, N, 'params'>;

export type OperationResult<A, N extends string> = Member<A, N, 'result'>;
