import type { RetrySafetyCard } from './card.js';

const ENTRY_CARDS_NAME = /^[a-z][A-Za-z]*Cards$/;

/** The cards of an adapter's root entry: its one `<vendor>Cards` export (stripeCards, …), in order. */
export function entryCards(entry: Readonly<Record<string, unknown>>): RetrySafetyCard[] {
  const found = Object.keys(entry).filter((name) => ENTRY_CARDS_NAME.test(name));
  if (found.length !== 1)
    throw new TypeError(`expected one <vendor>Cards export, found: ${found.join(', ') || 'none'}`);
  return Object.values(entry[found[0]!] as Record<string, RetrySafetyCard>);
}
