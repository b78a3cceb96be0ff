// `@retrysafe/contract/rules`: what a card implies, each rule with one owner (re-send and look-up timing,
// normalisation, durations), for everything that decides from a card.

export * from './card-rules.js';
export * from './duration.js';
export * from './intent.js';
