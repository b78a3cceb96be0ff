export {
  drillOrder,
  drills,
  drillTicket,
  type HubSpotDrill,
  type HubSpotDrillOperation,
  hubSpotDrill,
  hubSpotDrillFaults,
} from './hubspot-drills.js';
export type { HubSpotErrorBody, RateLimitPolicy } from './hubspot-errors-shapes.js';
export type {
  FailOptions,
  HubSpotSandbox,
  HubSpotSandboxOptions,
  SandboxObjectType,
  SandboxRecord,
  SandboxRequest,
  SandboxRequestKind,
} from './hubspot-sandbox.js';
export { DEFAULT_ID_PROPERTY, defaultObjectTypes, startHubSpotSandbox } from './hubspot-sandbox.js';
