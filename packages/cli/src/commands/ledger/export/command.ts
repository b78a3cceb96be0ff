import type { OperationState } from '@retrysafe/contract';
import { defineCommand, EXIT } from '../../../command.js';
import { plural } from '../../../output.js';
import { STATES, TARGET_OPTIONS, withLedger } from '../target.js';
import { exportChains } from './index.js';

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
