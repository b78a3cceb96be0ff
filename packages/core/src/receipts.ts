import { writeFile } from 'node:fs/promises';
import { canonicalJson, sha256Hex, type BusinessOperationId, type Ledger, type ListFilter, type Receipt } from '@retrysafe/contract';

export type UnsealedReceipt = Omit<Receipt, 'hash'>;

/** `hash = sha256(prevHash + canonical JSON of the receipt without its hash)`, lowercase hex. */
export function receiptHash(body: UnsealedReceipt): string {
  return sha256Hex((body.prevHash ?? '') + canonicalJson(body));
}

export function sealReceipt(body: UnsealedReceipt): Receipt {
  const { hash: _drop, ...rest } = body as Receipt;
  return { ...rest, hash: receiptHash(rest) };
}

export type ChainCheck = { readonly ok: true } | { readonly ok: false; readonly index: number; readonly reason: string };

/**
 * Checks one operation's receipts, in order: seq 1, 2, 3…, each `prevHash` equal to the hash before
 * it, and each hash recomputed from the content. Any edited, removed or reordered receipt fails.
 */
export function verifyReceiptChain(receipts: readonly Receipt[]): ChainCheck {
  let prev: string | null = null;
  for (let i = 0; i < receipts.length; i++) {
    const r = receipts[i]!;
    if (r.seq !== i + 1) return { ok: false, index: i, reason: `seq ${r.seq} where ${i + 1} was expected` };
    if (r.prevHash !== prev) return { ok: false, index: i, reason: 'prevHash does not match the previous receipt' };
    const { hash, ...rest } = r;
    if (receiptHash(rest) !== hash) return { ok: false, index: i, reason: 'content does not match its hash' };
    prev = hash;
  }
  return { ok: true };
}

export interface ExportReceiptsOptions {
  /** Only these operations; default: every operation the filter lists. */
  readonly ids?: readonly BusinessOperationId[];
  readonly filter?: ListFilter;
  /** Also write the JSONL to this file. */
  readonly path?: string;
}

/** Receipts as JSON Lines (one receipt per line, per operation in seq order). Already redacted when written. */
export async function exportReceiptsJsonl(ledger: Ledger, options: ExportReceiptsOptions = {}): Promise<string> {
  const ids = options.ids ?? (await ledger.list(options.filter)).map((r) => r.businessOperationId);
  const lines: string[] = [];
  for (const id of ids) for (const r of await ledger.receipts(id)) lines.push(JSON.stringify(r));
  const text = lines.length ? lines.join('\n') + '\n' : '';
  if (options.path) await writeFile(options.path, text, 'utf8');
  return text;
}
