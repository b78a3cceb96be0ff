// Regenerates the card tables in README.md from the card objects of the drill behaviours (run after `tsc -b`):
//   node adapters/sandbox/scripts/render-cards.mjs
// test/readme.test.ts fails when the README and the cards drift apart.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderCard, replaceCardSection } from '@retrysafe/contract';
import { FORGETFUL_BEHAVIOUR, REPLAYING_BEHAVIOUR, sandboxCreateCard } from '../dist/index.js';

export function renderedCards() {
  return [
    ['The drill\'s replaying sandbox (`REPLAYING_BEHAVIOUR`)', REPLAYING_BEHAVIOUR],
    ['The drill\'s forgetful sandbox (`FORGETFUL_BEHAVIOUR`)', FORGETFUL_BEHAVIOUR],
  ].map(([title, b]) => `#### ${title}\n\n${renderCard(sandboxCreateCard(b, {}, ['ref', 'amount']), 'markdown')}`).join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const readme = new URL('../README.md', import.meta.url);
  writeFileSync(readme, replaceCardSection(readFileSync(readme, 'utf8'), renderedCards()));
}
