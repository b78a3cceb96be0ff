// The root entry: what a user of the adapter needs. The loopback sandbox and drill are in `./sandbox`.
export { createHubSpotAdapter, type HubSpotAdapter, type HubSpotAdapterOptions } from './hubspot-adapter.js';
export { hubSpotCards, type HubSpotOperationName } from './hubspot-cards.js';
export type { HubSpotOperationTypes, ContactsUpdateParams, ObjectsUpsertParams, TicketsCreateParams, PropertyValue, HubSpotRecord } from './hubspot-operations.js';
