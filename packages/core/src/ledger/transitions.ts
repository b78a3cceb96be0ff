/**
 * The ledger's transition rules. They are owned by the contract (`@retrysafe/contract/ledger`,
 * ledger-transitions.ts) so the PostgreSQL ledger, which depends only on the contract, applies the
 * same rules as the memory and SQLite ledgers; re-exported here so core's imports and its
 * `ledgerTransitions` namespace stay as they were.
 */
export {
  isTerminal,
  leaseLive,
  validateClaimInput,
  claimTransition,
  checkFence,
  renewTransition,
  dispatchedTransition,
  setStateTransition,
  handOffTransition,
  releaseTransition,
  resolveTransition,
  chainedTransition,
  checkReceipt,
  checkPruneOptions,
  isPrunable,
} from '@retrysafe/contract/ledger';
