import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readCardSection, renderCards } from '@retrysafe/contract';
import { documentsUpdateCard, exportsCreateCard, instancesRunCard, ordersCreateCard } from '../src/index.js';

describe('README', () => {
  it('card tables equal renderCard() of the card objects (regenerate: node adapters/http/scripts/render-cards.mjs)', () => {
    const text = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const cards = [ordersCreateCard('acme-orders'), exportsCreateCard('acme-exports'), documentsUpdateCard('acme-docs'), instancesRunCard('acme-compute')];
    expect(readCardSection(text)).toBe(renderCards(cards).trim());
  });
});
