import type { OperationState } from '@retrysafe/contract';
import { defineCommand } from '../../../command.js';
import { UsageError } from '../../../errors.js';
import { table } from '../../../output.js';
import {
  type LedgerTarget,
  type OperationSummary,
  printListing,
  STATES,
  summarize,
  TARGET_OPTIONS,
  unreadableRows,
  withLedger,
} from '../target.js';

/** The newest operations; a row the ledger cannot read goes to `onUnreadable` (without it, the listing rejects). */
export async function ledgerLs(
  target: LedgerTarget & { state?: string[]; limit?: number },
  onUnreadable?: (id: string) => void,
): Promise<OperationSummary[]> {
  for (const s of target.state ?? [])
    if (!STATES.includes(s as OperationState))
      throw new UsageError(`--state '${s}' is not a state (${STATES.join(', ')})`);
  return withLedger(target, async (ledger) => {
    const rows = await ledger.list({
      states: target.state?.length ? (target.state as OperationState[]) : undefined,
      limit: target.limit ?? 100,
      newestFirst: true,
      onUnreadable,
    });
    return rows.map(summarize);
  });
}

export function lsTable(rows: readonly OperationSummary[]): string {
  if (rows.length === 0) return 'No operations.';
  return table(
    ['business-operation id', 'state', 'attempts', 'last outcome', 'provider ref', 'updated'],
    rows.map((r) => [
      r.businessOperationId,
      r.state,
      String(r.attempts),
      r.lastOutcome ?? '—',
      r.providerRef ?? '—',
      r.updatedAt,
    ]),
    { right: [2] },
  );
}

export const ledgerLsCommand = defineCommand({
  name: 'ledger ls',
  description: 'list operations, newest first',
  options: {
    state: { argument: '<state>', parse: 'list', description: `only these states (${STATES.join(', ')})` },
    limit: { argument: '<n>', parse: 'integer', default: 100, description: 'at most n' },
    ...TARGET_OPTIONS,
  },
  async run(ctx, o) {
    const { ids, onUnreadable } = unreadableRows();
    const rows = await ledgerLs(o, onUnreadable);
    return printListing(ctx, o, rows, ids, () => lsTable(rows));
  },
});
