import { readFileSync } from 'node:fs';
import { verifyReceiptsJsonl } from '@retrysafe/core';
import { defineCommand, kebab } from '../../../command.js';
import { exactlyOne, orInputError, UsageError } from '../../../errors.js';
import { paint, plural } from '../../../output.js';
import {
  addMissingKey,
  CHAIN_RUNBOOK,
  checkOptions,
  RECEIPT_KEYS_ENV,
  receiptKeysFromEnv,
  rowOf,
  type VerifyRow,
  verifyChains,
} from '../chain.js';
import { refuseIdleConfig, TARGET_OPTIONS, withLedger } from '../target.js';

/** Verifies an export written by `ledger export` (receipts plus head lines), without the ledger. */
function verifyExportFile(file: string, allowUnkeyed?: boolean): VerifyRow[] {
  const text = orInputError(`cannot read ${file}: `, () => readFileSync(file, 'utf8'));
  const options = checkOptions(allowUnkeyed, true); // a malformed key is the variable's fault, not the file's
  const checked = orInputError(`${file}: `, () => verifyReceiptsJsonl(text, options));
  return checked.map((x) => rowOf(x.businessOperationId, undefined, x.receipts, x.check));
}

/** `file`: the export checked offline, where a break may be in the file alone. */
function verifyText(rows: readonly VerifyRow[], color = false, file?: string): string {
  // An export of an empty ledger is empty too: an empty file is not refused, but nothing in it was checked.
  if (rows.length === 0) return file ? `${file} holds no operations: nothing verified.` : 'No operations.';
  const bad = rows.flatMap((r) => (r.ok ? [] : [r]));
  // A receipt sealed with a key this process lacks, or unkeyed where keys were given, went unchecked: told apart from an
  // edit, on its row as in the sums.
  const classOf = (r: (typeof bad)[number]) =>
    r.missingKey !== undefined ? 'not checked' : r.unkeyed ? 'unkeyed' : 'broken';
  const keys = [...new Set(bad.flatMap((r) => (r.missingKey === undefined ? [] : [r.missingKey])))];
  const count = (c: string) => bad.filter((r) => classOf(r) === c).length;
  const lines = rows.map((r) =>
    r.ok
      ? `${paint('green', '✓', color)} ${r.businessOperationId}  ${plural(r.receipts, 'receipt')}${r.warnings ? paint('dim', `  (${r.warnings.join('; ')})`, color) : ''}`
      : `${paint('red', '✗', color)} ${r.businessOperationId}  ${r.index < 0 ? '' : `${classOf(r)} at receipt #${r.index + 1}: `}${r.reason}`,
  );
  lines.push('');
  const of = (c: string) => `${count(c)} of ${plural(rows.length, 'chain')} ${c}`;
  if (count('broken') > 0)
    lines.push(
      `${of('broken')}: ${file ? `${file} or the ledger it was exported from was` : 'the ledger was'} edited outside retrysafe`,
    );
  if (count('not checked') > 0) lines.push(`${of('not checked')}: ${keys.map(addMissingKey).join('; ')}`);
  if (count('unkeyed') > 0)
    lines.push(
      `${of('unkeyed')}: written before ${RECEIPT_KEYS_ENV} was set (check them with --allow-unkeyed), or re-sealed without the key`,
    );
  lines.push(bad.length ? `(${CHAIN_RUNBOOK})` : `${plural(rows.length, 'chain')} intact`);
  return lines.join('\n');
}

export const ledgerVerifyCommand = defineCommand({
  name: 'ledger verify',
  description: `check receipt chains against the rows' anchors (and HMAC keys from ${RECEIPT_KEYS_ENV}); exit 1 on a break`,
  arguments: [['[id]', 'business-operation id']],
  options: {
    ...TARGET_OPTIONS,
    // An export is checked without a ledger: the variable's config is not read behind --file either.
    config: { ...TARGET_OPTIONS.config, envUnless: ['db', 'file'] },
    all: { description: 'every operation in the ledger' },
    file: {
      argument: '<export.jsonl>',
      description:
        'an export written by `ledger export`, checked offline (no ledger read: not with --db, --schema, --busy-timeout, --config)',
    },
    allowUnkeyed: {
      description: `with ${RECEIPT_KEYS_ENV} set: accept receipts written before the key (someone could re-seal as unkeyed; do not leave this on)`,
    },
  },
  async run({ print, color }, o, [id]: [string?]) {
    exactlyOne([id, o.all, o.file], 'choose one of <id>, --all, --file <export.jsonl>');
    const ledgerFlag = o.file && (['db', 'schema', 'busyTimeout', 'config'] as const).find((k) => o[k] !== undefined);
    if (ledgerFlag) throw new UsageError(`--${kebab(ledgerFlag)}: --file checks an export offline and reads no ledger`);
    refuseIdleConfig(o);
    // Without keys every chain is checked unkeyed already: the flag would change nothing.
    if (o.allowUnkeyed && !receiptKeysFromEnv().keyring)
      throw new UsageError(`--allow-unkeyed applies with ${RECEIPT_KEYS_ENV} set: without keys no chain is keyed`);
    const rows = o.file
      ? verifyExportFile(o.file, o.allowUnkeyed)
      : await withLedger(o, (l) => verifyChains(l, o.all ? 'all' : [id!], o.allowUnkeyed, true, o));
    const ok = rows.every((r) => r.ok);
    return print(o, { ok, operations: rows }, () => verifyText(rows, color, o.file), ok);
  },
});
