// `@retrysafe/contract/render`: a card as a page (Markdown or JSON), for the CLI and the adapters' READMEs.

export { entryCards } from './adapter-entry.js';
export * from './card-render.js';
