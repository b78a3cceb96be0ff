import { writeFile } from 'node:fs/promises';
import type { Ledger, OperationState } from '@retrysafe/contract';
import { exportReceiptsJsonl } from '@retrysafe/core';

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
