/**
 * `@retrysafe/contract/render`: a card as a page (Markdown or JSON), for the CLI's `cards` command and
 * the adapters' README card sections.
 */
export { cardFieldLabel, cardRows, readCardSection, renderCard, renderCards, replaceCardSection, type CardRow } from './card-render.js';
export { ENTRY_CARDS_NAME, entryCards } from './adapter-entry.js';
