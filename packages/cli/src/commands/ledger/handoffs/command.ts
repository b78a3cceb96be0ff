import { defineCommand, EXIT } from '../../../command.js';
import { TARGET_OPTIONS } from '../target.js';
import { handoffsText, ledgerHandoffs } from './index.js';

export const ledgerHandoffsCommand = defineCommand({
  name: 'ledger handoffs',
  description: 'operations waiting for a person, with their safe next actions',
  options: TARGET_OPTIONS,
  async run({ io, json, color }, o) {
    const rows = await ledgerHandoffs(o);
    if (o.json) json(rows);
    else io.out(handoffsText(rows, color));
    return rows.some((r) => r.chainBroken) ? EXIT.failed : EXIT.ok;
  },
});
