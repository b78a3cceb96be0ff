// The root entry: what a user of the adapter needs. The loopback sandbox and drill are in `./sandbox`.
export { createHubSpotAdapter, type HubSpotAdapter, type HubSpotAdapterOptions } from './hubspot-adapter.js';
export { type HubSpotOperationName, hubSpotCards } from './hubspot-cards.js';
export type {
  ContactsUpdateParams,
  HubSpotOperationTypes,
  HubSpotRecord,
  ObjectsUpsertParams,
  PropertyValue,
  TicketsCreateParams,
} from './hubspot-operations.js';
