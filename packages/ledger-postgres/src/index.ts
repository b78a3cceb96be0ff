export { createPostgresLedger, type PostgresLedger, type PostgresLedgerOptions } from './postgres-ledger.js';
export { migrate, MIGRATIONS, quoteSchema, type Migration, type MigrateReport } from './migrations.js';
