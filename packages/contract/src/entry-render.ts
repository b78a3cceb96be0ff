// `@retrysafe/contract/render`: a card as a page (Markdown or JSON), for the CLI and the adapters' READMEs.

export * from './card-render.js';
