import type { AdapterV1 } from './adapter.js';

/**
 * The compile-time shape of one operation: the params a caller passes and what a `done` result holds.
 * It has no runtime presence; an adapter states it so `runner.run()` can check a call at compile time.
 */
export interface OperationTypes<P = unknown, R = unknown> {
  readonly params: P;
  readonly result: R;
}

/** Operation name (as in `adapter.operations`) → its types. */
export type OperationTypeMap = { readonly [name: string]: OperationTypes };

/**
 * An adapter that tells the compiler its operations, the way an AI SDK provider types its models.
 * `'~operations'` exists only in the type — no adapter sets it — so a typed adapter is still a plain
 * `AdapterV1` everywhere one is expected (recover, resolve, agent tools, drills).
 */
export interface TypedAdapter<Ops extends OperationTypeMap> extends AdapterV1 {
  readonly '~operations'?: Ops;
}

/** The operation types an adapter declares; `never` for an adapter that declares none. */
export type OperationsOf<A> = A extends { readonly '~operations'?: infer O extends OperationTypeMap }
  ? string extends keyof O
    ? never
    : O
  : never;

/** The operation names a call may use: the declared literals, or any string for an untyped adapter. */
export type OperationName<A> = [OperationsOf<A>] extends [never] ? string : Extract<keyof OperationsOf<A>, string>;

/** One member (`params` or `result`) of an operation's types; `unknown` for an untyped adapter. */
type Member<A, N extends string, K extends keyof OperationTypes> = [OperationsOf<A>] extends [never]
  ? unknown
  : N extends keyof OperationsOf<A>
    ? OperationsOf<A>[N][K]
    : never;

/** The params of one operation (`unknown` for an untyped adapter). */
export type OperationParams<A, N extends string> = Member<A, N, 'params'>;

/** What a `done` result of one operation holds (`unknown` for an untyped adapter). */
export type OperationResult<A, N extends string> = Member<A, N, 'result'>;
