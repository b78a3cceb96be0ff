import { defineCommand, EXIT } from '../../../command.js';
import { exactlyOne } from '../../../errors.js';
import { RECEIPT_KEYS_ENV, verifyChains } from '../chain.js';
import { TARGET_OPTIONS, withLedger } from '../target.js';
import { verifyExportFile, verifyText } from './index.js';

export const ledgerVerifyCommand = defineCommand({
  name: 'ledger verify',
  description: `check receipt chains against the rows' anchors (and HMAC keys from ${RECEIPT_KEYS_ENV}); exit 1 on a break`,
  arguments: [['[id]', 'business-operation id']],
  options: {
    ...TARGET_OPTIONS,
    all: { description: 'every operation in the ledger' },
    file: {
      argument: '<export.jsonl>',
      description: 'an export written by `ledger export`, checked offline (no ledger needed)',
    },
    allowUnkeyed: {
      description: `with ${RECEIPT_KEYS_ENV} set: accept receipts written before the key (someone could re-seal as unkeyed; do not leave this on)`,
    },
  },
  async run({ io, json, color }, o, [id]: [string?]) {
    exactlyOne([id, o.all, o.file], 'choose one of <id>, --all, --file <export.jsonl>');
    const rows = o.file
      ? verifyExportFile(o.file, o.allowUnkeyed)
      : await withLedger(o, (l) => verifyChains(l, o.all ? 'all' : [id!], o.allowUnkeyed), { readOnly: true });
    if (o.json) json({ ok: rows.every((r) => r.ok), operations: rows });
    else io.out(verifyText(rows, color));
    return rows.every((r) => r.ok) ? EXIT.ok : EXIT.failed;
  },
});
