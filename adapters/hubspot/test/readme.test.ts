import { readFileSync } from 'node:fs';
import { readCardSection, renderCards } from '@retrysafe/contract';
import { expect, it } from 'vitest';
import { HUBSPOT_CARDS } from '../src/index.js';

// README.md's card section is generated from the card objects (scripts/render-readme.mjs); this fails on drift.
it('README.md shows exactly the cards the adapter declares', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  expect(readCardSection(readme)).toBe(renderCards(Object.values(HUBSPOT_CARDS)).trim());
});
