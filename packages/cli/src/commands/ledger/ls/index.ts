import { defineCommand } from '../../../command.js';
import { UsageError } from '../../../errors.js';
import { table } from '../../../output.js';
import {
  type LedgerTarget,
  type OperationSummary,
  printListing,
  refuseIdleConfig,
  STATE_OPTION,
  stateFilter,
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
  const states = stateFilter(target.state);
  // A listing of none would read "No operations." of a ledger that holds some.
  if (target.limit === 0) throw new UsageError('--limit 0 lists nothing: give at least 1');
  refuseIdleConfig(target);
  return withLedger(target, async (ledger) => {
    const rows = await ledger.list({
      states,
      limit: target.limit ?? 100,
      newestFirst: true,
      onUnreadable,
    });
    return rows.map(summarize);
  });
}

/** The account column only when some operation has one: a ledger of one account reads as before. */
export function lsTable(rows: readonly OperationSummary[]): string {
  if (rows.length === 0) return 'No operations.';
  const accounts = rows.some((r) => 'account' in r);
  return table(
    [
      'business-operation id',
      ...(accounts ? ['account'] : []),
      'state',
      'attempts',
      'last outcome',
      'provider ref',
      'updated',
    ],
    rows.map((r) => [
      r.businessOperationId,
      ...(accounts ? [r.account ?? '—'] : []),
      r.state,
      String(r.attempts),
      r.lastOutcome ?? '—',
      r.providerRef ?? '—',
      r.updatedAt,
    ]),
    { right: [accounts ? 3 : 2] },
  );
}

export const ledgerLsCommand = defineCommand({
  name: 'ledger ls',
  description: 'list operations, newest first',
  options: {
    state: STATE_OPTION,
    limit: { argument: '<n>', parse: 'integer', default: 100, description: 'at most n' },
    ...TARGET_OPTIONS,
  },
  async run(ctx, o) {
    const { ids, onUnreadable } = unreadableRows();
    const rows = await ledgerLs(o, onUnreadable);
    return printListing(ctx, o, rows, ids, () => lsTable(rows));
  },
});
