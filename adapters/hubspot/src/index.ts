export { createHubSpotAdapter } from './hubspot-adapter.js';
export type { HubSpotAdapter, HubSpotAdapterOptions } from './hubspot-adapter.js';
export { hubspotCards, HUBSPOT_CARDS, SOURCES as HUBSPOT_SOURCES } from './hubspot-cards.js';
export type { HubSpotCardOptions, HubSpotOperationName } from './hubspot-cards.js';
export { KEY_RULE as HUBSPOT_KEY_RULE, PARAMS_SCHEMAS as HUBSPOT_PARAMS_SCHEMAS } from './hubspot-operations.js';
export type { HubSpotOperationTypes, ContactsUpdateParams, ObjectsUpsertParams, TicketsCreateParams, PropertyValue, HubSpotRecord } from './hubspot-operations.js';
export { outcomeFromResponse, outcomeFromNetworkError, outcomeFromFailure, rateLimitWaitMs, uniqueConflictOf } from './hubspot-errors.js';
export type { HubSpotResponse } from './hubspot-errors.js';
