export { startHubSpotSandbox, defaultObjectTypes, DEFAULT_ID_PROPERTY } from './hubspot-sandbox.js';
export type {
  HubSpotSandbox,
  HubSpotSandboxOptions,
  SandboxObjectType,
  SandboxRecord,
  SandboxRequest,
  SandboxRequestKind,
  FailOptions,
} from './hubspot-sandbox.js';
export type { RateLimitPolicy, HubSpotErrorBody } from './hubspot-errors-shapes.js';
export { hubSpotDrill, drills, hubSpotDrillFaults, drillTicket, drillOrder, type HubSpotDrill, type HubSpotDrillOperation } from './hubspot-drills.js';
