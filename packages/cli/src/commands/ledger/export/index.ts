import { writeFile } from 'node:fs/promises';
import type { OperationState } from '@retrysafe/contract';
import { exportReceiptsJsonl } from '@retrysafe/core';
import { defineCommand, EXIT } from '../../../command.js';
import { UsageError } from '../../../errors.js';
import { plural } from '../../../output.js';
import { STATES, TARGET_OPTIONS, withLedger } from '../target.js';

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
    for (const s of o.state ?? [])
      if (!STATES.includes(s as OperationState))
        throw new UsageError(`--state '${s}' is not a state (${STATES.join(', ')})`);
    const filter = o.state?.length ? { states: o.state as OperationState[] } : {};
    const { ids, text } = await withLedger(o, async (ledger) => {
      const ids = (await ledger.list(filter)).map((r) => r.businessOperationId);
      return { ids, text: await exportReceiptsJsonl(ledger, { ids, heads: true }) };
    });
    if (o.out) {
      await writeFile(o.out, text, 'utf8');
      io.err(`wrote ${plural(ids.length, 'operation')} to ${o.out}`);
    } else if (text) io.out(text.trimEnd());
    return EXIT.ok;
  },
});
