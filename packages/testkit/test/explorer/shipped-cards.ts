import type { RetrySafetyCard } from '@retrysafe/contract';
import { FORGETFUL_BEHAVIOUR, REPLAYING_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import { gitHubCards } from '../../../../adapters/github/src/github-cards.js';
// The adapters' card modules import only @retrysafe/contract; they are read from source so the testkit
// does not depend on the adapters (which depend on the testkit for their drills).
import {
  documentsUpdateCard,
  exportsCreateCard,
  instancesRunCard,
  ordersCreateCard,
} from '../../../../adapters/http/src/http-cards.js';
import { hubSpotCards } from '../../../../adapters/hubspot/src/hubspot-cards.js';
import { msGraphCards } from '../../../../adapters/msgraph/src/msgraph-cards.js';
import { resendCards } from '../../../../adapters/resend/src/resend-cards.js';
import { slackCards } from '../../../../adapters/slack/src/slack-cards.js';
import { stripeCards } from '../../../../adapters/stripe/src/stripe-cards.js';

/** Every card the project ships (docs/cards), by the name it is filed under. */
export function shippedCards(): { name: string; card: RetrySafetyCard }[] {
  const out: { name: string; card: RetrySafetyCard }[] = [];
  for (const card of Object.values(stripeCards)) out.push({ name: card.operation, card });
  for (const card of Object.values(hubSpotCards) as RetrySafetyCard[]) out.push({ name: card.operation, card });
  for (const card of Object.values(msGraphCards) as RetrySafetyCard[]) out.push({ name: card.operation, card });
  for (const card of Object.values(resendCards)) out.push({ name: card.operation, card });
  for (const card of Object.values(gitHubCards) as RetrySafetyCard[]) out.push({ name: card.operation, card });
  for (const card of Object.values(slackCards) as RetrySafetyCard[]) out.push({ name: card.operation, card });
  out.push({ name: 'acme-orders.orders.create', card: ordersCreateCard('acme-orders') });
  out.push({ name: 'acme-exports.exports.create', card: exportsCreateCard('acme-exports') });
  out.push({ name: 'acme-docs.documents.update', card: documentsUpdateCard('acme-docs') });
  out.push({ name: 'acme-compute.instances.run', card: instancesRunCard('acme-compute') });
  out.push({ name: 'sandbox.records.create--sandbox-replaying', card: sandboxCreateCard(REPLAYING_BEHAVIOUR) });
  out.push({ name: 'sandbox.records.create--sandbox-forgetful', card: sandboxCreateCard(FORGETFUL_BEHAVIOUR) });
  return out;
}
