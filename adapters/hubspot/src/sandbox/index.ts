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
