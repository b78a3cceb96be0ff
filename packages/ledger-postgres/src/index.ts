export { createPostgresLedger, type PostgresLedger, type PostgresLedgerOptions } from './ledger.js';
export { migrate, type MigrateReport } from './schema.js';
