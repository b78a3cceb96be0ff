// README.md's card section is generated from the card objects; this fails when they drift apart.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readCardSection, renderCards } from '@retrysafe/contract';
import { msGraphCards } from '../src/index.js';

describe('README', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

  it('holds every card exactly as renderCard renders it (regenerate: node scripts/render-cards.mjs)', () => {
    expect(readCardSection(readme)).toBe(renderCards(Object.values(msGraphCards)).trim());
  });

  it('shows the unknown facts as unknown', () => {
    expect(readme).toMatch(/\| Lookup consistency delay \| \*\*⚠ unknown\*\* \|/);
  });

  it('has the install line', () => {
    expect(readme).toContain('pnpm add @retrysafe/msgraph');
  });
});
