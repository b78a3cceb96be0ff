export { createDynamoDbLedger, type DynamoDbLedgerOptions } from './ledger.js';
export { ensureTable, tableDefinition, type EnsureTableReport } from './schema.js';
