import { createHmac, timingSafeEqual } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import {
  type BusinessOperationId,
  canonicalJson,
  type Ledger,
  LedgerError,
  type ListFilter,
  type OperationRecord,
  type Receipt,
  sha256Hex,
} from '@retrysafe/contract';
import { namingPath } from './files.js';

export type UnsealedReceipt = Omit<Receipt, 'hash'>;

/** An HMAC key for receipt hashes (`hmac-sha256:<id>:<hex>`): who can write the ledger but lacks the key cannot
 * re-seal an edited chain. The id keeps chains verifiable across a rotation (old keys go in the keyring). */
export interface ReceiptKey {
  readonly id: string;
  readonly secret: string | Uint8Array;
}
export type ReceiptKeyring = Readonly<Record<string, string | Uint8Array>>;

const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;
const KEYED = /^hmac-sha256:([A-Za-z0-9_.-]{1,64}):([0-9a-f]{64})$/;

/** Params keys take the same rule. Never echoes the secret. */
export function checkReceiptKey(
  key: ReceiptKey,
  error: (why: string) => Error = (why) => new TypeError(why),
  name = 'receipt key',
): void {
  if (!key || typeof key.id !== 'string' || !KEY_ID.test(key.id))
    throw error(`${name} id: 1-64 characters of A-Z a-z 0-9 _ . -`);
  const { secret } = key;
  const len = typeof secret === 'string' || secret instanceof Uint8Array ? Buffer.byteLength(secret) : 0;
  if (len < 16) throw error(`${name} secret: at least 16 bytes`);
}

/** Parses `RETRYSAFE_RECEIPT_KEY`-style text: `id:secret` (one key, for writing) or `id:secret,id2:secret2` (a keyring). Never echoes a secret. */
export function parseReceiptKeys(text: string): {
  readonly current: ReceiptKey;
  readonly keyring: ReceiptKeyring;
  readonly previous: readonly ReceiptKey[];
} {
  const parts = text.split(',').map((x) => x.trim());
  const keys = parts.filter(Boolean).map((part) => {
    const at = part.indexOf(':');
    if (at <= 0) throw new TypeError('receipt keys: expected id:secret[,id:secret…]');
    const key = { id: part.slice(0, at), secret: part.slice(at + 1) };
    checkReceiptKey(key);
    return key;
  });
  if (keys.length === 0) throw new TypeError('receipt keys: expected id:secret[,id:secret…]');
  // One id, two secrets: the first would seal and the last verify. A rotation takes a new id.
  const twice = keys.find((k, i) => keys.findIndex((x) => x.id === k.id) !== i);
  if (twice) throw new TypeError(`receipt keys: key id ${twice.id} is given twice (a new secret takes a new id)`);
  // `previous`: the keys after the first, as encryptParams takes them (the first encrypts, all decrypt).
  return { current: keys[0]!, keyring: Object.fromEntries(keys.map((k) => [k.id, k.secret])), previous: keys.slice(1) };
}

/** sha256 hex of prevHash + the canonical JSON of the receipt without its hash; with a key, its HMAC-SHA256. */
export function receiptHash(body: UnsealedReceipt, key?: ReceiptKey): string {
  const text = (body.prevHash ?? '') + canonicalJson(body);
  if (key === undefined) return sha256Hex(text);
  checkReceiptKey(key);
  return `hmac-sha256:${key.id}:${createHmac('sha256', key.secret).update(text, 'utf8').digest('hex')}`;
}

export function sealReceipt(body: UnsealedReceipt, key?: ReceiptKey): Receipt {
  const { hash: _drop, ...rest } = body as Receipt;
  return Object.assign(rest, { hash: receiptHash(rest, key) });
}

export type ReceiptChainAnchor = OperationRecord['receiptChain'];

export type ChainCheck =
  | { readonly ok: true; readonly warnings?: readonly string[] }
  | {
      readonly ok: false;
      readonly index: number;
      readonly reason: string;
      /** The receipt names a key id the keyring lacks: its content went unchecked (not proof of an edit). */
      readonly missingKey?: string;
      /** Not keyed where keys were given: written before the key was set, or re-sealed without it (not proof either). */
      readonly unkeyed?: true;
    };

export interface VerifyChainOptions {
  /** The row's anchor: the chain must end at `head` and hold `length` receipts (catches a deleted tail, or all deleted). */
  readonly anchor?: ReceiptChainAnchor;
  /** Keys to check `hmac-sha256:` hashes with. Given: every receipt must be keyed with one of them, unless `allowUnkeyed`. */
  readonly keys?: ReceiptKeyring;
  /** With `keys`: accept plain sha256 receipts (chains written before a key was set). Someone can re-seal an edited chain as plain: do not leave this on. */
  readonly allowUnkeyed?: boolean;
}

const sameBytes = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
const broken = (index: number, reason: string, unchecked?: { missingKey: string } | { unkeyed: true }): ChainCheck => ({
  ok: false,
  index,
  reason,
  ...unchecked,
});

/** Checks one operation's receipts in order: seq 1, 2, 3…, each `prevHash` the hash before it, each hash recomputed
 * (keyed where sealed so), and the anchor's head and length. Any edited, removed or reordered receipt fails. */
export function verifyReceiptChain(receipts: readonly Receipt[], options: VerifyChainOptions = {}): ChainCheck {
  let prev: string | null = null;
  let keyedSeen = false;
  let uncheckedKeyed = 0;
  for (let i = 0; i < receipts.length; i++) {
    const r = receipts[i]!;
    if (typeof r !== 'object' || r === null) return broken(i, `not a receipt: ${r === null ? 'null' : typeof r}`);
    if (r.seq !== i + 1) return broken(i, `seq ${r.seq} where ${i + 1} was expected`);
    if (r.prevHash !== prev) return broken(i, 'prevHash does not match the previous receipt');
    const { hash, ...rest } = r;
    const keyed = typeof hash === 'string' ? KEYED.exec(hash) : null;
    if (keyed) {
      keyedSeen = true;
      const secret = options.keys?.[keyed[1]!];
      if (secret !== undefined) {
        if (!sameBytes(receiptHash(rest, { id: keyed[1]!, secret }), hash))
          return broken(i, `content does not match its keyed hash (key ${keyed[1]})`);
      } else if (options.keys)
        return broken(i, `sealed with key ${keyed[1]}, which is not in the keyring this process was given`, {
          missingKey: keyed[1]!,
        });
      else uncheckedKeyed++;
    } else {
      if (keyedSeen) return broken(i, 'an unkeyed receipt after a keyed one (re-sealed without the key?)');
      if (options.keys && !options.allowUnkeyed)
        return broken(
          i,
          'not keyed, but a key was given (re-sealed without the key, or written before the key was set: --allow-unkeyed)',
          { unkeyed: true },
        );
      if (receiptHash(rest) !== hash) return broken(i, 'content does not match its hash');
    }
    prev = hash;
  }
  if (options.anchor !== undefined) {
    const { length, head } = options.anchor;
    if (length !== receipts.length)
      return broken(
        Math.min(length, receipts.length),
        `the row anchors ${length} receipt(s), the ledger holds ${receipts.length}`,
      );
    if (head !== prev)
      return broken(Math.max(0, receipts.length - 1), 'the last receipt is not the head the row anchors');
  }
  if (uncheckedKeyed === 0) return { ok: true };
  const warning = `${uncheckedKeyed} keyed receipt(s) checked for order and linkage only: pass the key to check their content`;
  return { ok: true, warnings: [warning] };
}

export async function verifyOperation(
  ledger: Ledger,
  id: BusinessOperationId,
  options: Omit<VerifyChainOptions, 'anchor'> = {},
): Promise<ChainCheck | null> {
  const [receipts, record] = await anchoredReceipts(ledger, id);
  if (!record) return null;
  const anchor = record.receiptChain as ReceiptChainAnchor | undefined; // a row edited from outside may lack it
  const check =
    typeof anchor?.length === 'number'
      ? verifyReceiptChain(receipts, { ...options, anchor })
      : broken(receipts.length, 'the row holds no chain anchor (receiptChain), so a cut tail cannot be told');
  // A receipt seals the id it was written for: another operation's chain (copied with its anchor) is no proof for this one.
  const foreign = check.ok ? receipts.findIndex((r) => r.businessOperationId !== id) : -1;
  return foreign >= 0
    ? broken(foreign, `a receipt of another operation (${String(receipts[foreign]!.businessOperationId)})`)
    : check;
}

export interface ExportReceiptsOptions {
  /** Only these operations; default: every operation the filter lists. */
  readonly ids?: readonly BusinessOperationId[];
  /** Which operations, without `ids`; its `onUnreadable` is also told of each one whose receipts cannot be read (the
   * others exported), else that one stops the export. */
  readonly filter?: ListFilter;
  readonly path?: string;
  /** After each operation's receipts, a `{"chainHead":{businessOperationId, head, length}}` line: verifiable offline. */
  readonly heads?: boolean;
}

/** One receipt per line, per operation in seq order. Already redacted when written. */
export async function exportReceiptsJsonl(ledger: Ledger, options: ExportReceiptsOptions = {}): Promise<string> {
  const ids = options.ids ?? (await listedIds(ledger, options.filter));
  let text = '';
  const onUnreadable = options.filter?.onUnreadable;
  for (const id of ids)
    try {
      text += options.heads
        ? receiptLines(id, ...(await anchoredReceipts(ledger, id)))
        : receiptLines(id, await ledger.receipts(id), null);
    } catch (err) {
      if (onUnreadable === undefined || !LedgerError.isInstance(err)) throw err;
      onUnreadable(id, err);
    }
  const { path } = options;
  if (path)
    await writeFile(path, text, 'utf8').catch((e) => {
      throw namingPath(e, path);
    });
  return text;
}

/** The ids an export covers. A row the ledger cannot read goes to the filter's onUnreadable if given (the others
 * exported); without one the export refuses naming every such id, so no operation is left out unnoticed. */
async function listedIds(ledger: Ledger, filter: ListFilter = {}): Promise<BusinessOperationId[]> {
  const unreadable: string[] = [];
  const onUnreadable = filter.onUnreadable ?? ((id: string) => void unreadable.push(id));
  const ids = (await ledger.list({ ...filter, onUnreadable })).map((r) => r.businessOperationId);
  if (unreadable.length > 0)
    throw new LedgerError(
      `export: ${unreadable.length} stored row(s) could not be read (cut or corrupt), nothing exported: ${unreadable.join(', ')}; pass filter.onUnreadable to export the others`,
    );
  return ids;
}

/** The receipts and the row that anchors them: a receipt written between the two reads (a false break) reads both again. */
async function anchoredReceipts(ledger: Ledger, id: BusinessOperationId): Promise<[Receipt[], OperationRecord | null]> {
  let read: [Receipt[], OperationRecord | null] = [[], null];
  for (let tries = 0; tries < 3; tries++) {
    const record = await ledger.get(id);
    read = [await ledger.receipts(id), record];
    const again = await ledger.get(id);
    if (JSON.stringify(again?.receiptChain) === JSON.stringify(record?.receiptChain)) return read;
  }
  return read;
}

export function receiptLines(id: string, receipts: readonly Receipt[], record: OperationRecord | null): string {
  const lines = receipts.map((r) => JSON.stringify(r));
  const head = record && { businessOperationId: id, ...record.receiptChain };
  if (head) lines.push(JSON.stringify({ chainHead: head }));
  return lines.map((l) => `${l}\n`).join('');
}

export interface ExportCheck {
  readonly businessOperationId: string;
  readonly receipts: number;
  readonly check: ChainCheck;
}

/** Verifies an export written with `heads: true` offline: each operation's receipts against its head line (none: a failure). */
export function verifyReceiptsJsonl(text: string, options: Omit<VerifyChainOptions, 'anchor'> = {}): ExportCheck[] {
  const byId = new Map<string, { receipts: Receipt[]; anchor?: ReceiptChainAnchor }>();
  const entry = (id: string) => byId.get(id) ?? byId.set(id, { receipts: [] }).get(id)!;
  text.split('\n').forEach((line, n) => {
    if (!line.trim()) return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      throw new TypeError(`line ${n + 1}: not JSON`);
    }
    const head = (v as { chainHead?: { businessOperationId?: unknown; head?: unknown; length?: unknown } } | null)
      ?.chainHead;
    if (head && typeof head.businessOperationId === 'string') {
      if (typeof head.length !== 'number') throw new TypeError(`line ${n + 1}: a chain head without its length`);
      entry(head.businessOperationId).anchor = {
        head: typeof head.head === 'string' ? head.head : null,
        length: head.length,
      };
    } else if (typeof (v as Receipt | null)?.businessOperationId === 'string')
      entry((v as Receipt).businessOperationId).receipts.push(v as Receipt);
    else throw new TypeError(`line ${n + 1}: neither a receipt nor a chain head`);
  });
  return [...byId].map(([id, e]) => ({
    businessOperationId: id,
    receipts: e.receipts.length,
    check:
      e.anchor === undefined
        ? broken(e.receipts.length, 'no chain head in the export for this operation')
        : verifyReceiptChain(e.receipts, { ...options, anchor: e.anchor }),
  }));
}
