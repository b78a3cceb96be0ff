import { readFileSync } from 'node:fs';
import { verifyReceiptsJsonl } from '@retrysafe/core';
import { UsageError } from '../../../errors.js';
import { paint, plural } from '../../../output.js';
import { checkOptions, rowOf, type VerifyRow } from '../chain.js';

/** Verifies an export written by `ledger export` (receipts plus head lines), without the ledger. */
export function verifyExportFile(file: string, allowUnkeyed?: boolean): VerifyRow[] {
  const check = checkOptions(allowUnkeyed);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${(e as Error).message}`);
  }
  try {
    return verifyReceiptsJsonl(text, check).map((x) => rowOf(x.businessOperationId, undefined, x.receipts, x.check));
  } catch (e) {
    throw new UsageError(`${file}: ${(e as Error).message}`);
  }
}

export function verifyText(rows: readonly VerifyRow[], color = false): string {
  if (rows.length === 0) return 'No operations.';
  const bad = rows.filter((r) => !r.ok);
  const lines = rows.map((r) =>
    r.ok
      ? `${paint('green', '✓', color)} ${r.businessOperationId}  ${plural(r.receipts, 'receipt')}${r.warnings ? paint('dim', `  (${r.warnings.join('; ')})`, color) : ''}`
      : `${paint('red', '✗', color)} ${r.businessOperationId}  broken at receipt #${(r.index ?? 0) + 1}: ${r.reason}`,
  );
  lines.push(
    '',
    bad.length
      ? `${bad.length} of ${plural(rows.length, 'chain')} broken: the ledger was edited outside retrysafe (see docs/security.md)`
      : `${plural(rows.length, 'chain')} intact`,
  );
  return lines.join('\n');
}
