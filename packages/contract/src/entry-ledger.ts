// `@retrysafe/contract/ledger`: the rules every ledger applies (states, transitions, prune, payload limits).

export * from './ledger.js';
