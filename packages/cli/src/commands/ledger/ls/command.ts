import { defineCommand, EXIT } from '../../../command.js';
import { STATES, TARGET_OPTIONS } from '../target.js';
import { ledgerLs, lsTable } from './index.js';

export const ledgerLsCommand = defineCommand({
  name: 'ledger ls',
  description: 'list operations, newest first',
  options: {
    state: { argument: '<state>', parse: 'list', description: `only these states (${STATES.join(', ')})` },
    limit: { argument: '<n>', parse: 'integer', default: 100, description: 'at most n' },
    ...TARGET_OPTIONS,
  },
  async run({ io, json }, o) {
    const rows = await ledgerLs(o);
    if (o.json) json(rows);
    else io.out(lsTable(rows));
    return EXIT.ok;
  },
});
