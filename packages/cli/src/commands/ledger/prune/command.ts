import { defineCommand, EXIT, type Options, type Parsed } from '../../../command.js';
import { TARGET_OPTIONS } from '../target.js';
import { ledgerPrune, PRUNE_RETENTION_NOTE, pruneText } from './index.js';

const options = {
  ...TARGET_OPTIONS,
  olderThan: {
    argument: '<duration>',
    required: true,
    description: 'last changed at least this long ago, e.g. 30d, 72h',
  },
  export: {
    argument: '<file>',
    description:
      "write the pruned operations' receipts (with chain heads, as `ledger export`) to this new file before deleting them",
  },
  dryRun: { description: 'count what would be pruned; delete and write nothing' },
  force: {
    description: 'prune below the key retention floor of the cards (you know no repeat of these operations can come)',
  },
  state: {
    argument: '<state>',
    parse: 'list',
    description: 'only these closed states (succeeded, rejected, abandoned)',
  },
} as const satisfies Options;

export type PruneCommandOptions = Parsed<typeof options>;

export const ledgerPruneCommand = defineCommand({
  name: 'ledger prune',
  description:
    'retention: delete closed operations (succeeded, rejected, abandoned) older than a duration, with their receipts; never open or handed-off ones',
  options,
  helpAfter: `\n${PRUNE_RETENTION_NOTE}`,
  async run({ io, json }, o) {
    const r = await ledgerPrune(o);
    if (o.json) json(r);
    else io.out(pruneText(r, o.export));
    return EXIT.ok;
  },
});
