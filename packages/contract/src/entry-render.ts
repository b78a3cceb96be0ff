// `@retrysafe/contract/render`: a card as a page (Markdown or JSON), for the CLI and the adapters' READMEs.

export { entryCards } from './adapter-entry.js';
export {
  type CardRow,
  cardFieldLabel,
  cardRows,
  readCardSection,
  renderCard,
  renderCards,
  replaceCardSection,
} from './card-render.js';
