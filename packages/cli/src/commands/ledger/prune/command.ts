import { defineCommand, EXIT } from '../../../command.js';
import { ledgerPrune, PRUNE_OPTIONS, PRUNE_RETENTION_NOTE, pruneText } from './index.js';

export const ledgerPruneCommand = defineCommand({
  name: 'ledger prune',
  description:
    'retention: delete closed operations (succeeded, rejected, abandoned) older than a duration, with their receipts; never open or handed-off ones',
  options: PRUNE_OPTIONS,
  helpAfter: `\n${PRUNE_RETENTION_NOTE}`,
  async run({ io, json }, o) {
    const r = await ledgerPrune(o);
    if (o.json) json(r);
    else io.out(pruneText(r, o.export));
    return EXIT.ok;
  },
});
