export type { RetrysafeConfigInput } from './config.js';
export {
  ConfigError,
  createAdapters,
  defineConfig,
  exposedOperations,
  httpDeclarationOf,
  loadConfig,
  loadConfigFile,
  openLedger,
  parseConfig,
} from './config.js';
export type {
  AdapterConfig,
  DynamoDbLedgerConfig,
  GitHubConfig,
  HttpAdapterConfig,
  HttpDeclarationData,
  HttpOperationConfig,
  HubSpotConfig,
  LedgerLocation,
  ModuleAdapterConfig,
  MsGraphConfig,
  ResendConfig,
  RetrysafeConfig,
  SandboxConfig,
  SlackConfig,
  StripeConfig,
} from './config-types.js';
export { findInlineCredentials, looksLikeEnvName } from './credentials.js';
export {
  DataSyntaxError,
  FILE_LIMITS,
  FileLimitError,
  type FileLimitName,
  type FileLimits,
  parseDataText,
  readDataFile,
  readTextFile,
} from './read-file.js';
export { checkSchema, didYouMean, type SchemaNode } from './schema-check.js';
export { configSchema, DEFAULT_LEDGER, ledgerKind } from './validate.js';
