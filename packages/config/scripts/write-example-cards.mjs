// Regenerates the cards of examples/http-api from @retrysafe/http's reference cards (provider "acme"),
// so the no-code example cites what the package's own cards cite. Run after `pnpm build`:
//   node packages/config/scripts/write-example-cards.mjs
import { writeFileSync } from 'node:fs';
import { asyncExportsCreate, clientTokenInstancesRun, etagDocumentsUpdate, ietfOrdersCreate } from '@retrysafe/http';
import { stringify } from 'yaml';

// Each pattern's operation declaration carries its card, for any provider name.
export const EXAMPLE_CARDS = {
  'orders.card.yaml': (p) => ietfOrdersCreate(p).card,
  'exports.card.yaml': (p) => asyncExportsCreate(p).card,
  'documents.card.yaml': (p) => etagDocumentsUpdate(p).card,
  'instances.card.yaml': (p) => clientTokenInstancesRun(p).card,
};
export const HEADER = '# A retry safety card as data: every fact is { value, source }; a value may be "unknown".\n';
export const render = (card) => HEADER + stringify(JSON.parse(JSON.stringify(card)), { lineWidth: 0 });

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [file, make] of Object.entries(EXAMPLE_CARDS))
    writeFileSync(new URL(`../examples/http-api/${file}`, import.meta.url), render(make('acme')));
}
