export { createDynamoDbLedger, type DynamoDbLedgerOptions } from './ledger.js';
export { type EnsureTableReport, ensureTable, tableDefinition } from './schema.js';
