import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { encryptParams, exportReceiptsJsonl, parseReceiptKeys, verifyOperation, verifyReceiptsJsonl, type ChainCheck, type ReceiptKey, type ReceiptKeyring } from '@retrysafe/core';
import { asBusinessOperationId, type Ledger, type OperationState } from '@retrysafe/contract';
import { paint } from '../output.js';
import { UsageError } from '../registry.js';

/**
 * Receipt-chain commands (issue 18): `ledger verify` and `ledger export`, and the check `show` and
 * `resolve` run first. Keys come from RETRYSAFE_RECEIPT_KEYS (`id:secret[,oldId:oldSecret…]`): the
 * first seals new receipts, all of them verify.
 */
export const RECEIPT_KEYS_ENV = 'RETRYSAFE_RECEIPT_KEYS';

export interface ReceiptKeys {
  readonly current?: ReceiptKey;
  readonly keyring?: ReceiptKeyring;
}

/** The keys in the environment, if any (a malformed value is a usage error that never shows the secret). */
export function receiptKeysFromEnv(env: NodeJS.ProcessEnv = process.env): ReceiptKeys {
  const text = env[RECEIPT_KEYS_ENV];
  if (!text) return {};
  try {
    return parseReceiptKeys(text);
  } catch (e) {
    throw new UsageError(`${RECEIPT_KEYS_ENV}: ${(e as Error).message}`);
  }
}

/** RETRYSAFE_PARAMS_KEYS (`id:secret[,oldId:oldSecret…]`): the ledger's params are encrypted at rest with the first key. */
export const PARAMS_KEYS_ENV = 'RETRYSAFE_PARAMS_KEYS';

/** `ledger` with params encryption when RETRYSAFE_PARAMS_KEYS is set (resume must decrypt what it re-sends). */
export function withParamsKeys(ledger: Ledger, env: NodeJS.ProcessEnv = process.env): Ledger {
  const text = env[PARAMS_KEYS_ENV];
  if (!text) return ledger;
  let keys: ReturnType<typeof parseReceiptKeys>;
  try {
    keys = parseReceiptKeys(text);
  } catch (e) {
    throw new UsageError(`${PARAMS_KEYS_ENV}: ${(e as Error).message}`);
  }
  const previous = Object.entries(keys.keyring).filter(([id]) => id !== keys.current.id).map(([id, secret]) => ({ id, secret }));
  return encryptParams(ledger, { key: keys.current, previous });
}

export interface VerifyRow {
  readonly businessOperationId: string;
  /** Absent for an export checked offline. */
  readonly state?: OperationState;
  readonly receipts: number;
  readonly ok: boolean;
  /** Where it breaks (0-based receipt index) and why. */
  readonly index?: number;
  readonly reason?: string;
  readonly warnings?: readonly string[];
}

export interface VerifyOptions {
  readonly allowUnkeyed?: boolean;
  readonly env?: NodeJS.ProcessEnv;
}

const rowOf = (id: string, state: OperationState | undefined, receipts: number, check: ChainCheck): VerifyRow => ({
  businessOperationId: id,
  ...(state ? { state } : {}),
  receipts,
  ok: check.ok,
  ...(check.ok ? (check.warnings ? { warnings: check.warnings } : {}) : { index: check.index, reason: check.reason }),
});

/** Checks one operation's chain, or every operation's, against the rows' anchors (and keys, when set). */
export async function verifyChains(ledger: Ledger, ids: readonly string[] | 'all', options: VerifyOptions = {}): Promise<VerifyRow[]> {
  const { keyring } = receiptKeysFromEnv(options.env);
  const opts = { ...(keyring ? { keys: keyring } : {}), ...(options.allowUnkeyed ? { allowUnkeyed: true } : {}) };
  const out: VerifyRow[] = [];
  const list = ids === 'all' ? (await ledger.list()).map((r) => r.businessOperationId) : ids.map((i) => asBusinessOperationId(i));
  for (const id of list) {
    const check = await verifyOperation(ledger, id, opts);
    const record = await ledger.get(id);
    if (!check || !record) throw new UsageError(`no operation ${id} in the ledger`);
    out.push(rowOf(id, record.state, (await ledger.receipts(id)).length, check));
  }
  return out;
}

/** Verifies an export written by `ledger export` (receipts plus head lines), without the ledger. */
export function verifyExportFile(file: string, options: VerifyOptions = {}): VerifyRow[] {
  const { keyring } = receiptKeysFromEnv(options.env);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${(e as Error).message}`);
  }
  try {
    return verifyReceiptsJsonl(text, { ...(keyring ? { keys: keyring } : {}), ...(options.allowUnkeyed ? { allowUnkeyed: true } : {}) }).map((x) => rowOf(x.businessOperationId, undefined, x.receipts, x.check));
  } catch (e) {
    throw new UsageError(`${file}: ${(e as Error).message}`);
  }
}

/** Receipts as JSONL with one chain-head line per operation (offline-verifiable with `ledger verify --file`). */
export async function exportChains(ledger: Ledger, options: { readonly out?: string; readonly states?: readonly OperationState[] } = {}): Promise<{ text: string; operations: number }> {
  const ids = (await ledger.list(options.states?.length ? { states: options.states } : {})).map((r) => r.businessOperationId);
  const text = await exportReceiptsJsonl(ledger, { ids, heads: true });
  if (options.out) await writeFile(options.out, text, 'utf8');
  return { text, operations: ids.length };
}

export function verifyText(rows: readonly VerifyRow[], color = false): string {
  if (rows.length === 0) return 'No operations.';
  const bad = rows.filter((r) => !r.ok);
  const lines = rows.map((r) =>
    r.ok
      ? `${paint('green', '✓', color)} ${r.businessOperationId}  ${r.receipts} receipt${r.receipts === 1 ? '' : 's'}${r.warnings ? paint('dim', `  (${r.warnings.join('; ')})`, color) : ''}`
      : `${paint('red', '✗', color)} ${r.businessOperationId}  broken at receipt #${(r.index ?? 0) + 1}: ${r.reason}`,
  );
  lines.push('', bad.length ? `${bad.length} of ${rows.length} chain${rows.length === 1 ? '' : 's'} broken: the ledger was edited outside retrysafe (see docs/security.md)` : `${rows.length} chain${rows.length === 1 ? '' : 's'} intact`);
  return lines.join('\n');
}
