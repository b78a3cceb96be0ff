// Regenerates the card section of README.md from the cards the root entry exports (run after `tsc -b`):
//   node scripts/render-cards.mjs   (in the adapter's folder; `pnpm cards` builds first)
// The same script in every adapter; test/readme.test.ts fails when README.md and the cards drift apart.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderCards, replaceCardSection } from '@retrysafe/contract';
import * as entry from '../dist/index.js';

/** The root entry's one `<vendor>Cards` export, rendered as the README shows it. */
export function renderedCards() {
  const found = Object.entries(entry).filter(([name]) => /^[a-z][A-Za-z]*Cards$/.test(name));
  if (found.length !== 1) throw new Error(`expected one <vendor>Cards export, found: ${found.map(([n]) => n).join(', ') || 'none'}`);
  return renderCards(Object.values(found[0][1]));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const readme = new URL('../README.md', import.meta.url);
  writeFileSync(readme, replaceCardSection(readFileSync(readme, 'utf8'), renderedCards()));
}
