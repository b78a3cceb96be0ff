import { writeFile } from 'node:fs/promises';
import type { Ledger, OperationState } from '@retrysafe/contract';
import { exportReceiptsJsonl } from '@retrysafe/core';
import { defineCommand, EXIT } from '../../../command.js';
import { plural } from '../../../output.js';
import { STATES, TARGET_OPTIONS, withLedger } from '../target.js';

/** Receipts as JSONL with one chain-head line per operation (offline-verifiable with `ledger verify --file`). */
export async function exportChains(
  ledger: Ledger,
  options: { readonly out?: string; readonly states?: readonly OperationState[] } = {},
): Promise<{ text: string; operations: number }> {
  const ids = (await ledger.list(options.states?.length ? { states: options.states } : {})).map(
    (r) => r.businessOperationId,
  );
  const text = await exportReceiptsJsonl(ledger, { ids, heads: true });
  if (options.out) await writeFile(options.out, text, 'utf8');
  return { text, operations: ids.length };
}

export const ledgerExportCommand = defineCommand({
  name: 'ledger export',
  description:
    'receipts as JSON Lines, with one chain-head line per operation so the export verifies offline (ledger verify --file)',
  options: {
    ...TARGET_OPTIONS,
    out: { argument: '<file>', description: 'write to this file instead of stdout' },
    state: { argument: '<state>', parse: 'list', description: `only these states (${STATES.join(', ')})` },
  },
  async run({ io }, o) {
    const r = await withLedger(
      o,
      (l) => exportChains(l, { out: o.out, states: o.state as OperationState[] | undefined }),
      { readOnly: true },
    );
    if (o.out) io.err(`wrote ${plural(r.operations, 'operation')} to ${o.out}`);
    else if (r.text) io.out(r.text.trimEnd());
    return EXIT.ok;
  },
});
