import { asBusinessOperationId, type Ledger, type OperationState } from '@retrysafe/contract';
import { type ChainCheck, encryptParams, parseReceiptKeys, verifyOperation } from '@retrysafe/core';
import { UsageError } from '../../errors.js';

/** `id:secret[,oldId:oldSecret…]`: the first key seals new receipts, every key verifies. */
export const RECEIPT_KEYS_ENV = 'RETRYSAFE_RECEIPT_KEYS';

/** Keys from an environment variable, if set (a malformed value is a usage error that never shows the secret). */
function keysFromEnv(name: string, env: NodeJS.ProcessEnv) {
  const text = env[name];
  if (!text) return null;
  try {
    return parseReceiptKeys(text);
  } catch (e) {
    throw new UsageError(`${name}: ${(e as Error).message}`);
  }
}

export const receiptKeysFromEnv = (
  env: NodeJS.ProcessEnv = process.env,
): Partial<ReturnType<typeof parseReceiptKeys>> => keysFromEnv(RECEIPT_KEYS_ENV, env) ?? {};

/** RETRYSAFE_PARAMS_KEYS (`id:secret[,oldId:oldSecret…]`): the ledger's params are encrypted at rest with the first key. */
export const PARAMS_KEYS_ENV = 'RETRYSAFE_PARAMS_KEYS';

/** `ledger` with params encryption when RETRYSAFE_PARAMS_KEYS is set (resume must decrypt what it re-sends). */
export function withParamsKeys(ledger: Ledger, env: NodeJS.ProcessEnv = process.env): Ledger {
  const keys = keysFromEnv(PARAMS_KEYS_ENV, env);
  if (!keys) return ledger;
  const previous = Object.entries(keys.keyring)
    .filter(([id]) => id !== keys.current.id)
    .map(([id, secret]) => ({ id, secret }));
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

/** What a chain check takes: the keyring of the environment, and whether unkeyed receipts pass. */
export const checkOptions = (options: VerifyOptions) => ({
  keys: receiptKeysFromEnv(options.env).keyring,
  allowUnkeyed: options.allowUnkeyed,
});

export const rowOf = (
  id: string,
  state: OperationState | undefined,
  receipts: number,
  check: ChainCheck,
): VerifyRow => ({
  businessOperationId: id,
  ...(state ? { state } : {}),
  receipts,
  ok: check.ok,
  ...(check.ok ? (check.warnings ? { warnings: check.warnings } : {}) : { index: check.index, reason: check.reason }),
});

/** Checks one operation's chain, or every operation's, against the rows' anchors (and keys, when set). */
export async function verifyChains(
  ledger: Ledger,
  ids: readonly string[] | 'all',
  options: VerifyOptions = {},
): Promise<VerifyRow[]> {
  const opts = checkOptions(options);
  const out: VerifyRow[] = [];
  const list =
    ids === 'all' ? (await ledger.list()).map((r) => r.businessOperationId) : ids.map((i) => asBusinessOperationId(i));
  for (const id of list) {
    const check = await verifyOperation(ledger, id, opts);
    const record = await ledger.get(id);
    if (!check || !record) throw new UsageError(`no operation ${id} in the ledger`);
    out.push(rowOf(id, record.state, (await ledger.receipts(id)).length, check));
  }
  return out;
}
