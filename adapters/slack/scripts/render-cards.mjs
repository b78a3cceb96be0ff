// Regenerates the card section of README.md from the cards the root entry exports (run after `tsc -b`;
// `pnpm cards` in the adapter's folder does both). The same script in every adapter; test/readme.test.ts
// fails when README.md and the cards drift apart.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { entryCards, renderCards, replaceCardSection } from '@retrysafe/contract';
import * as entry from '../dist/index.js';

export const renderedCards = () => renderCards(entryCards(entry));

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const readme = new URL('../README.md', import.meta.url);
  writeFileSync(readme, replaceCardSection(readFileSync(readme, 'utf8'), renderedCards()));
}
