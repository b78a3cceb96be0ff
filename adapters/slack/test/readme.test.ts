// The same test in every adapter: README.md's card section is what scripts/render-cards.mjs renders
// from the root entry's cards (regenerate: `pnpm cards` in the adapter's folder).
import { readFileSync } from 'node:fs';
import { readCardSection } from '@retrysafe/contract';
import { expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without types
import { renderedCards } from '../scripts/render-cards.mjs';

it('README.md shows exactly the cards the root entry exports', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  expect(readCardSection(readme)).toBe(String(renderedCards()).trim());
});

it('shows the unknown facts as unknown, and has the install line', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  expect(readme).toMatch(/\| Lookup consistency delay \| \*\*⚠ unknown\*\* \|/);
  expect(readme).toContain('pnpm add @retrysafe/slack');
});
