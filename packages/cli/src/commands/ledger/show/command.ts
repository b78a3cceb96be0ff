import { defineCommand, EXIT } from '../../../command.js';
import { TARGET_OPTIONS } from '../target.js';
import { ledgerShow, showText } from './index.js';

export const ledgerShowCommand = defineCommand({
  name: 'ledger show',
  description: 'one operation: state, handoff packet, receipts',
  arguments: [['<id>', 'business-operation id']],
  options: {
    ...TARGET_OPTIONS,
    showBy: { description: 'show who resolved it as stored (default: a pseudonym)' },
  },
  async run({ io, json, color }, o, [id]: [string]) {
    const r = await ledgerShow(o, id);
    if (!r) {
      if (o.json)
        json({ ok: false, error: { code: 'RETRYSAFE_NOT_FOUND', message: `no operation ${id} in the ledger` } });
      io.err(`retrysafe: no operation ${id} in the ledger`);
      return EXIT.failed;
    }
    if (o.json) json(r);
    else io.out(showText(r, color));
    if (r.chain.ok) return EXIT.ok;
    io.err(
      `retrysafe: the receipt chain of ${id} is broken at receipt #${(r.chain.index ?? 0) + 1}: ${r.chain.reason}`,
    );
    return EXIT.failed;
  },
});
