/**
 * `@retrysafe/contract/ledger`: the rules every ledger applies, for ledger authors and the runner:
 * the state sets, each transition as a pure function of the stored record, prune options, and the
 * payload limits a stored operation keeps within.
 */

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
  releaseTransition,
  renewTransition,
  resolveTransition,
  setStateTransition,
  validateClaimInput,
} from './ledger-transitions.js';
