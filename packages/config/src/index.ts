export { ConfigError, parseConfig, loadConfig, loadConfigFile, defineConfig, createAdapters, exposedOperations, httpDeclarationOf, openLedger } from './config.js';
export type { RetrysafeConfig, RetrysafeConfigInput, LedgerLocation, DynamoDbLedgerConfig, AdapterConfig, StripeConfig, MsGraphConfig, HubSpotConfig, ResendConfig, GitHubConfig, SlackConfig, SandboxConfig, ModuleAdapterConfig, HttpAdapterConfig, HttpOperationConfig, HttpDeclarationData } from './config.js';
export { configSchema, HTTP_PATTERNS, POLICY_KEYS } from './config-schema.js';
export { checkSchema, didYouMean, type SchemaNode } from './schema-check.js';
export { DEFAULT_LEDGER, ledgerKind } from './validate.js';
export { findInlineCredentials, looksLikeEnvName } from './credentials.js';
export { FILE_LIMITS, FileLimitError, DataSyntaxError, parseDataText, readDataFile, readTextFile, type FileLimits, type FileLimitName } from './read-file.js';
