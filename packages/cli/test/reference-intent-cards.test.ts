import type { RetrySafetyCard } from '@retrysafe/contract';
import { describe, expect, it } from 'vitest';
import { expectWalked, shippedCards } from './shipped-cards.js';

// Amendments 11 and 16 of the intent-identity record: where the caller names the object it makes by its own reference
// (ref, orderRef, customerRef, emailRef, batchRef, launchRef, …), that reference is the intent, with only what names
// another object at the provider beside it. Any other field in the intent makes its correction a second business
// operation, and the provider a second object under the same reference.

const isReference = (field: string) => /(^|\.)ref$|Ref$/.test(field);

/** Fields that name another object at the provider: the same reference there is another object's. */
const TARGETS: Record<string, string> = {
  account: 'the provider account the object is made in: another account holds objects of its own',
  customer: "the customer an order, charge or invoice is for: a reference is per customer, another's is another's",
  paymentIntent: "the payment a refund returns: another payment's refund is another refund",
  mailbox: "the user whose mailbox gets the item: another user's is another item",
  owner: "the repository's owner: with repo, the repository the item is made in",
  repo: 'the repository the item is made in',
  channel: 'the conversation the message goes to: another channel gets a message of its own',
  objectType: 'the kind of record the reference names: a ticket and a deal may share one',
  dataset: 'the data an export is made of: another dataset is another export',
};

/** The intent fields of `card` that are neither its caller's reference nor a target; none when it names no reference. */
function payloadInIntent(card: RetrySafetyCard): string[] {
  const fields = card.businessOperationId.intentFields;
  if (!fields.some(isReference)) return [];
  return fields.filter((f) => !isReference(f) && !Object.hasOwn(TARGETS, f));
}

const shipped = await shippedCards();

describe("a caller's reference names the object; what it is made with is payload (every shipped card)", () => {
  it('walks every adapter’s cards', () => expectWalked(shipped));

  it.each(shipped)('%s: beside its reference the intent holds only what names another object', (name, card) => {
    const extra = payloadInIntent(card);
    expect(extra, `${name}: a correction of these would be a second object`).toEqual([]);
  });

  it('a payload field back in an intent is caught (HubSpot tickets.create with its pipeline)', () => {
    const [, ticket] = shipped.find(([, c]) => c.operation === 'hubspot.tickets.create')!;
    const bo = ticket.businessOperationId;
    const widened = { ...ticket, businessOperationId: { ...bo, intentFields: ['ref', 'properties.hs_pipeline'] } };
    expect(payloadInIntent(widened)).toEqual(['properties.hs_pipeline']);
  });
});
