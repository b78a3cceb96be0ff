// Regenerates the card tables in README.md from the card objects (run after `tsc -b`):
//   node adapters/http/scripts/render-cards.mjs
// test/readme.test.ts fails when the README and the cards drift apart.
import { readFileSync, writeFileSync } from 'node:fs';
import { renderCards, replaceCardSection } from '@retrysafe/contract';
import { documentsUpdateCard, exportsCreateCard, instancesRunCard, ordersCreateCard } from '../dist/index.js';

const cards = [ordersCreateCard('acme-orders'), exportsCreateCard('acme-exports'), documentsUpdateCard('acme-docs'), instancesRunCard('acme-compute')];
const readme = new URL('../README.md', import.meta.url);
writeFileSync(readme, replaceCardSection(readFileSync(readme, 'utf8'), renderCards(cards)));
