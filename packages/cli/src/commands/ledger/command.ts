import { defineCommand } from '../../command.js';

/** `retrysafe ledger`: a group; its commands are in the folders beside this file. */
export const ledger = defineCommand({
  name: 'ledger',
  description: 'inspect the ledger and resolve handoffs (SQLite file or postgres:// URL)',
});
