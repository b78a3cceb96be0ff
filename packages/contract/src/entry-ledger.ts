// `@retrysafe/contract/ledger`: the rules every ledger applies (states, transitions, prune, payload limits).

export { checkPruneOptions, PAYLOAD_LIMITS, PRUNABLE_STATES, RECOVERABLE_STATES, TERMINAL_STATES } from './ledger.js';
export * from './ledger-transitions.js';
