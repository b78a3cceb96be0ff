import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without types
import { END, START, renderedCards } from '../scripts/render-cards.mjs';

describe('README', () => {
  it('shows the cards exactly as the card objects render them (run `pnpm --filter @retrysafe/sandbox cards` after a change)', () => {
    const text = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const section = text.slice(text.indexOf(START) + START.length, text.indexOf(END));
    expect(section.trim()).toBe(String(renderedCards()).trim());
  });
});
