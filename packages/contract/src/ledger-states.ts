// claimed → dispatched → succeeded | rejected | unknown | in-progress → reconciling → … | handed-off | not-sent; only a
// person abandons, or resumes a handed-off operation. A crashed worker may have left an effect in any open state.
// `not-sent`: given back, no call's request ever left; the next claim of its id opens it again as new.
const OPEN = ['claimed', 'dispatched', 'unknown', 'in-progress', 'reconciling'] as const;
const ENDED = ['succeeded', 'rejected', 'handed-off', 'abandoned', 'not-sent'] as const;
export type OperationState = (typeof OPEN | typeof ENDED)[number];
export const RECOVERABLE_STATES: readonly OperationState[] = OPEN;
export const TERMINAL_STATES: readonly OperationState[] = ENDED;
export const STATES: readonly OperationState[] = [...OPEN, ...ENDED];
/** `handed-off` waits for a person and is never pruned. */
export const PRUNABLE_STATES: readonly OperationState[] = ['succeeded', 'rejected', 'abandoned', 'not-sent'];

/** A state as the words after "is" in a sentence (`succeeded` is `done`); any other state or word is said as it is. */
const WORDS: Partial<Record<string, string>> = {
  unknown: 'of unknown outcome',
  'in-progress': 'in progress',
  reconciling: 'being reconciled',
  succeeded: 'done',
  'handed-off': 'handed off',
  'not-sent': 'not sent',
};
export const stateWords = (state: string): string => WORDS[state] ?? state;
