// Regenerates the card section of README.md from the card objects (run after `tsc -b`):
//   node adapters/hubspot/scripts/render-readme.mjs
// test/readme.test.ts fails when README.md and the cards drift apart.
import { readFileSync, writeFileSync } from 'node:fs';
import { renderCards, replaceCardSection } from '@retrysafe/contract';
import { HUBSPOT_CARDS } from '../dist/index.js';

const readme = new URL('../README.md', import.meta.url);
writeFileSync(readme, replaceCardSection(readFileSync(readme, 'utf8'), renderCards(Object.values(HUBSPOT_CARDS))));
