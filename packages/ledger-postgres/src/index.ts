export { createPostgresLedger, type PostgresLedger, type PostgresLedgerOptions } from './ledger.js';
export { type MigrateReport, migrate } from './schema.js';
