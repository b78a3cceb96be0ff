export type { RetrysafeConfigInput } from './config.js';
export {
  CONFIG_ENV,
  configSchema,
  createAdapters,
  defineConfig,
  exposedOperations,
  httpDeclarationOf,
  loadConfig,
  loadConfigFile,
  openLedger,
  parseConfig,
} from './config.js';
export type * from './config-types.js';
export { findInlineCredentials, keysFromEnv, secretFromEnv } from './credentials.js';
export {
  ConfigError,
  FILE_LIMITS,
  FileLimitError,
  parseDataText,
  readDataFile,
} from './read-file.js';
export { checkSchema } from './schema-check.js';
