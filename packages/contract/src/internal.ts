/**
 * `@retrysafe/contract/internal`: helpers the retrysafe packages share that are not part of the
 * contract's API (no compatibility promise; may change in any release). This module imports
 * nothing, so loading it beside the bundled entry duplicates no state.
 */

/**
 * Whether Object.prototype has gained an enumerable property. A for-in over plain data sees own keys
 * only while it has none: canonical JSON's fast pass and the memory ledger's copy rely on that, and
 * take their exact path when this is true.
 */
export function prototypePolluted(): boolean {
  for (const _ in {}) return true;
  return false;
}
