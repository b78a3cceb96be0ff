// `@retrysafe/contract/ledger`: the rules every ledger applies (states, transitions, prune, payload limits).

export { PAYLOAD_LIMITS } from './errors.js';
export { checkPruneOptions, PRUNABLE_STATES, RECOVERABLE_STATES, TERMINAL_STATES } from './ledger.js';
export {
  chainedTransition,
  checkFence,
  checkReceipt,
  claimTransition,
  dispatchedTransition,
  handOffTransition,
  isPrunable,
  isTerminal,
  leaseLive,
  parseStored,
  releaseTransition,
  renewTransition,
  resolveTransition,
  setStateTransition,
} from './ledger-transitions.js';
