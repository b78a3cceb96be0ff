import type { OperationState } from '@retrysafe/contract';
import { UsageError } from '../../../errors.js';
import { table } from '../../../output.js';
import { type LedgerTarget, type OperationSummary, STATES, summarize, withLedger } from '../target.js';

export async function ledgerLs(
  target: LedgerTarget & { state?: string[]; limit?: number },
): Promise<OperationSummary[]> {
  for (const s of target.state ?? [])
    if (!STATES.includes(s as OperationState))
      throw new UsageError(`--state '${s}' is not a state (${STATES.join(', ')})`);
  return withLedger(
    target,
    async (ledger) => {
      const rows = await ledger.list({
        ...(target.state?.length ? { states: target.state as OperationState[] } : {}),
        limit: target.limit ?? 100,
        newestFirst: true,
      });
      return rows.map(summarize);
    },
    { readOnly: true },
  );
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
