export { ConfigError, parseConfig, loadConfig, createAdapters, openLedger } from './config.js';
export type { RetrysafeConfig, StripeConfig, MsGraphConfig, HubSpotConfig, SandboxConfig, ModuleAdapterConfig } from './config.js';
export { findInlineCredentials, looksLikeEnvName } from './credentials.js';
