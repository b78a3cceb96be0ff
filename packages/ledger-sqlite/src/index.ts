export { createSqliteLedger, type SqliteLedgerOptions } from './ledger.js';
