import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RetrySafetyCard } from '@retrysafe/contract';
import { expect } from 'vitest';
import { cardsOf, loadAdapters } from '../src/registry.js';
import { REPO, readCardFile } from './helpers.js';

// By shape, not by validateCard: a shipped card that stopped validating must show up (and fail), not drop out of the walk.
const isCard = (v: unknown): v is RetrySafetyCard =>
  typeof v === 'object' &&
  v !== null &&
  (v as { cardVersion?: unknown }).cardVersion === 1 &&
  typeof (v as { operation?: unknown }).operation === 'string';

/** Every card shipped: the exports of adapters/*\/src/*-cards.ts (cards, maps of cards, card builders of a provider name), the drills' variants, docs/examples. */
export async function shippedCards(): Promise<[string, RetrySafetyCard][]> {
  const out = new Map<string, { card: RetrySafetyCard; where: string[] }>(); // by content: a card shipped twice is walked once, under every place
  const add = (where: string, c: unknown) => {
    if (!isCard(c)) return;
    const seen = out.get(JSON.stringify(c));
    if (seen) seen.where.push(where);
    else out.set(JSON.stringify(c), { card: c, where: [where] });
  };
  for (const adapter of readdirSync(join(REPO, 'adapters'))) {
    const src = join(REPO, 'adapters', adapter, 'src');
    for (const file of readdirSync(src).filter((f) => f.endsWith('-cards.ts'))) {
      const mod = (await import(pathToFileURL(join(src, file)).href)) as Record<string, unknown>;
      for (const [name, v] of Object.entries(mod)) {
        const where = `adapters/${adapter}/src/${file}#${name}`;
        if (typeof v === 'function' && v.length === 1) {
          try {
            add(where, (v as (p: string) => unknown)('acme'));
          } catch {
            /* a builder of something other than a provider name */
          }
        } else if (isCard(v)) add(where, v);
        else if (typeof v === 'object' && v !== null) for (const c of Object.values(v)) add(where, c);
      }
    }
  }
  for (const entry of await loadAdapters()) for (const c of await cardsOf(entry)) add(`drill ${entry.name}`, c.card);
  const examples = join(REPO, 'packages/config/examples/http-api');
  for (const f of readdirSync(examples).filter((f) => f.endsWith('.card.yaml')))
    add(`packages/config/examples/http-api/${f}`, readCardFile(join(examples, f)));
  return [...out.values()].map(({ card, where }) => [`${card.operation} (${where.join(', ')})`, card]);
}

/** The walk reached every adapter's cards and the drill sandbox (and `more` places). */
export function expectWalked(shipped: [string, RetrySafetyCard][], more: string[] = []): void {
  const names = shipped.map(([n]) => n).join('\n');
  for (const where of [
    'adapters/stripe/',
    'adapters/msgraph/',
    'adapters/hubspot/',
    'adapters/http/',
    'drill sandbox',
    ...more,
  ])
    expect(names).toContain(where);
}
