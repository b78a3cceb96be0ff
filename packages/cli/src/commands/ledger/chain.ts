import { keysFromEnv } from '@retrysafe/config';
import { asBusinessOperationId, type Ledger, LedgerError, type OperationState } from '@retrysafe/contract';
import { type ChainCheck, encryptParams, type parseReceiptKeys, verifyOperation } from '@retrysafe/core';
import { RefusedError } from '../../errors.js';
import { notInLedger, unreadableRows } from './target.js';

/** `id:secret[,oldId:oldSecret…]`: the first key seals new receipts, every key verifies. */
export const RECEIPT_KEYS_ENV = 'RETRYSAFE_RECEIPT_KEYS';

/** What a broken chain means and what to do: the runbook ships with the CLI. */
export const CHAIN_RUNBOOK = 'retrysafe help runbook, "Receipt chain broken"';

/** What a person does about a receipt sealed with a key this process lacks: not an edit until shown to be one. */
export const addMissingKey = (key: string) =>
  `add key ${key} to ${RECEIPT_KEYS_ENV} and check again (a key id never used would mean a forged receipt)`;

export const receiptKeysFromEnv = (): Partial<ReturnType<typeof parseReceiptKeys>> =>
  keysFromEnv(RECEIPT_KEYS_ENV) ?? {};

/** `ledger` with its params encrypted at rest with the first key of RETRYSAFE_PARAMS_KEYS (`id:secret[,…]`) when set. */
export function withParamsKeys(ledger: Ledger): Ledger {
  const keys = keysFromEnv('RETRYSAFE_PARAMS_KEYS');
  return keys ? encryptParams(ledger, { key: keys.current, previous: keys.previous }) : ledger;
}

/** `strict` (verify): with no keys set, a keyed receipt is a break (its content cannot be checked), never a pass. */
export const checkOptions = (allowUnkeyed: boolean | undefined, strict = false) => {
  const keys = receiptKeysFromEnv().keyring;
  return keys || !strict ? { keys, allowUnkeyed } : { keys: {}, allowUnkeyed: true };
};

/** `state` is absent for an export checked offline; `index` (0-based) and `reason` say where a chain breaks and why. */
export const rowOf = (id: string, state: OperationState | undefined, receipts: number, check: ChainCheck) => ({
  businessOperationId: id,
  state,
  receipts,
  ...check,
});
export type VerifyRow = ReturnType<typeof rowOf>;

/** Checks one operation's chain, or every operation's, against the rows' anchors (and keys, when set). */
export async function verifyChains(
  ledger: Ledger,
  ids: readonly string[] | 'all',
  allowUnkeyed?: boolean,
  strict?: boolean,
  target: Parameters<typeof notInLedger>[1] = {},
): Promise<VerifyRow[]> {
  const opts = checkOptions(allowUnkeyed, strict); // a malformed key is refused even on an empty ledger
  const out: VerifyRow[] = [];
  // Under --all a row that cannot be read is a break of its own (index -1: no receipt to point at), not the end of the check.
  const { ids: unreadable, onUnreadable } = unreadableRows();
  const list =
    ids === 'all'
      ? (await ledger.list({ onUnreadable })).map((r) => r.businessOperationId)
      : ids.map((i) => asBusinessOperationId(i));
  const cannotRead = (id: string, what: string) =>
    rowOf(id, undefined, 0, { ok: false, index: -1, reason: `its stored ${what} cannot be read (cut or corrupt)` });
  for (const id of unreadable) out.push(cannotRead(id, 'record'));
  for (const id of list) {
    const read = await Promise.all([verifyOperation(ledger, id, opts), ledger.get(id), ledger.receipts(id)]).catch(
      (err: unknown) => {
        if (!LedgerError.isInstance(err)) throw err;
        return null;
      },
    );
    // One whose record or receipts cannot be read is a break of its own, not the end of the check.
    if (read === null) {
      out.push(cannotRead(id, 'record or receipts'));
      continue;
    }
    const [check, record, receipts] = read;
    // As show and resolve answer it: the id is well formed, the ledger holds no such operation (exit 1).
    if (!check || !record) throw new RefusedError(notInLedger(id, target));
    out.push(rowOf(id, record.state, receipts.length, check));
  }
  return out;
}
