import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without types
import { renderedCards } from '../scripts/render-cards.mjs';
import { readCardSection } from '@retrysafe/contract';

describe('README', () => {
  it('shows the cards exactly as the card objects render them (run `pnpm --filter @retrysafe/sandbox cards` after a change)', () => {
    const text = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    expect(readCardSection(text)).toBe(String(renderedCards()).trim());
  });
});
