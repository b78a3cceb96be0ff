import { readFileSync } from 'node:fs';
import { renderCard } from '@retrysafe/contract';
import { expect, it } from 'vitest';
import { HUBSPOT_CARDS } from '../src/index.js';

// README.md's card section is generated from the card objects (scripts/render-readme.mjs); this fails on drift.
it('README.md shows exactly the cards the adapter declares', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const start = readme.indexOf('<!-- cards:start');
  const end = readme.indexOf('<!-- cards:end -->');
  expect(start).toBeGreaterThan(0);
  const section = readme.slice(readme.indexOf('-->', start) + 3, end).trim();
  const expected = Object.values(HUBSPOT_CARDS).map((c) => renderCard(c, 'markdown')).join('\n').trim();
  expect(section).toBe(expected);
});
