/**
 * Body format 2 of the SQLite ledger (issue 23): a compact binary form of the JSON values an operation
 * stores (its record and its receipts), written and read in TypeScript with no stream to set up.
 * Format 1 deflated the JSON text; per clean operation that cost ~240k instructions (a new zlib stream
 * per call) plus ~80k for JSON.stringify/JSON.parse. This codec walks the values once each way.
 *
 * What reads back is the value JSON.parse(JSON.stringify(v)) would give: the encoder follows
 * JSON.stringify's rules (toJSON, boxed primitives, undefined/function/symbol properties left out and
 * null in arrays, NaN/±Infinity as null, -0 as 0, a cycle or a BigInt is a TypeError), and the decoder
 * builds plain objects with the keys in the order written. So JSON.stringify of what is read is the
 * text JSON.stringify wrote: receipts keep their bytes and their hash chain.
 *
 * Layout: byte 2, varint n (receipts), n receipt values, the record value, then the CRC-32 (zlib's,
 * IEEE) of everything before it, little endian. A cut or flipped body fails the checksum (every
 * error burst of up to 32 bits is caught) or a bounds check, and is refused: never a wrong record. Receipts are append-only, so a write copies the stored
 * receipts' bytes and encodes only the new ones; the record comes last and is rewritten every time.
 *
 * One value is one token (tags below). Strings: a fixed table of the keys and values every operation
 * repeats (one byte each); a back-reference to a string of length ≥ 2 already written in this body
 * (the record repeats the receipts' id, provider, operation, key, refs, fingerprints and chain head);
 * ASCII (short ones with the length in the tag), UTF-8 (well-formed) or UTF-16 code units (a lone
 * surrogate); lowercase hex packed two digits a byte, alone, as `sha256:<64 hex>`, or after a
 * `<prefix>:`; a UUID tail (`run_…`, `att_…`) in 16 bytes; an ISO-8601 UTC timestamp as the
 * difference in ms from the previous one in the body. Integers: 0..31 in the tag, then varints;
 * integers ≥ 2^31 in magnitude (epoch ms) as the difference from the previous such one.
 *
 * NEVER change this format's table or tags: they are format 2 forever (files written by a release
 * read with it). A different table is a new format byte.
 *
 * Format 3 (issue 23, eighth round; encodeBody3, decodeBody3) is the same tokens and table in another
 * order: the record's head (its ids, fingerprints, params and key) before the receipts, its other members
 * after them, so a write that keeps the head copies it with the stored receipts as one run of bytes and
 * the receipts refer back to the head's strings (docs/decisions/2026-12-02-sqlite-body-format-3.md).
 * Frozen like format 2.
 */

import * as zlib from 'node:zlib';

/** The format byte of this codec's bodies (formats 0 and 1 are sqlite-layout.ts's). */
export const BODY_BINARY_2 = 2;

/** Thrown for a body that is cut, corrupt or not format 2 (the ledger wraps it in a LedgerError). */
export class BodyFormatError extends Error {}

// The fixed string table of format 2: index = tag. Format 2 forever (see above): append nowhere, reorder never.
const TABLE: readonly string[] = [
  // 0x00: the record's keys
  'businessOperationId', 'provider', 'operation', 'intentFingerprint', 'paramsFingerprint', 'params', 'providerKey', 'state',
  'fence', 'leaseOwner', 'leaseExpiresAt', 'updatedAt', 'createdAt', 'firstDispatchedAt', 'attemptCount', 'lastOutcome',
  'result', 'providerRef', 'statusRef', 'handoff', 'resolution', 'receiptChain', 'head', 'length',
  // 0x18: the receipt's keys
  'seq', 'runId', 'attemptId', 'kind', 'startedAt', 'finishedAt', 'outcome', 'decision',
  'action', 'reason', 'delayMs', 'status', 'code', 'requestId', 'message', 'rejectReason',
  'fields', 'requestFingerprint', 'prevHash', 'hash',
  // 0x2c: keys of handoff packets, resolutions, results, field errors
  'explanation', 'attempts', 'lastKnown', 'safeNextActions', 'safe', 'why', 'at', 'by', 'revision', 'id', 'field',
  // 0x37: states
  'claimed', 'dispatched', 'unknown', 'in-progress', 'reconciling', 'succeeded', 'rejected', 'handed-off', 'abandoned',
  // 0x40: outcomes and lookup answers not above
  'replayed', 'not-applied', 'found', 'not-found', 'cannot-tell',
  // 0x45: receipt kinds not above
  'dispatch', 'resend', 'lookup', 'poll', 'resolve', 'recover',
  // 0x4b: decision and resolution actions
  'complete', 'send', 'resume', 'mark-done', 'abandon', 'resend-with', 'supersede', 'retry',
  // 0x53: decision reasons
  'the provider performed it', 'the provider rejected it earlier', 'the provider returned its stored result for this key: adopt it',
  'stored result exists: adopt it, do not call the provider again',
  // 0x57: id prefixes, handoff and reject reasons
  'run_', 'att_', 'retry-exhausted', 'unknown-no-safe-resend', 'lookup-window-exhausted', 'in-progress-window-exhausted', 'validation', 'conflict',
  'other',
];
const TABLE_SIZE = 0x60;
if (TABLE.length !== TABLE_SIZE || new Set(TABLE).size !== TABLE_SIZE) throw new Error(`format 2 table: expected ${TABLE_SIZE} distinct entries`);

// Tags (one byte); also format 2 forever.
const T_BACKREF_SHORT = 0x60; // 0x60..0x7f: back-reference 0..31
const T_ASCII_SHORT = 0x80; // 0x80..0x9f: ASCII string of length 0..31, bytes follow
const T_INT_SHORT = 0xa0; // 0xa0..0xbf: integer 0..31
const T_NULL = 0xc0;
const T_FALSE = 0xc1;
const T_TRUE = 0xc2;
const T_OBJECT = 0xc3; // key, value, … until T_END
const T_ARRAY = 0xc4; // value, … until T_END
const T_END = 0xc5;
const T_UINT = 0xc6; // varint n
const T_NEGINT = 0xc7; // varint n: the integer -n
const T_FLOAT = 0xc8; // float64, little endian
const T_ASCII = 0xc9; // varint length, bytes
const T_UTF8 = 0xca; // varint byte length, UTF-8 (a well-formed string)
const T_UTF16 = 0xcb; // varint code units, two bytes each little endian (a string with a lone surrogate)
const T_BACKREF = 0xcc; // varint index
const T_HEX = 0xcd; // varint n, n bytes: a string of 2n lowercase hex digits
const T_SHA256 = 0xce; // 32 bytes: 'sha256:' + 64 lowercase hex digits
const T_PREFIX_HEX = 0xcf; // string token (prefix), varint n, n bytes: prefix + ':' + 2n hex digits
const T_PREFIX_UUID = 0xd0; // string token (prefix), 16 bytes: prefix + a lowercase 8-4-4-4-12 UUID
const T_TIME = 0xd1; // zigzag varint: ms since the previous timestamp of the body, as ISO-8601 (…T…Z, ms)
const T_BIGINT = 0xd2; // zigzag varint: the integer minus the previous such integer of the body
// 0xd3..0xff: not used by format 2 or 3 (a corrupt body).

/** What a write needs of the receipts already stored, to copy their bytes and go on encoding after them. */
export interface StoredReceipts {
  /** The receipts' encoded bytes, as stored (contiguous). */
  readonly bytes: Uint8Array;
  readonly count: number;
  /** The back-reference table, the last timestamp and the last big integer after them. */
  readonly strings: readonly string[];
  readonly lastTime: number;
  readonly lastBig: number;
  /**
   * Format 3: the record's head written before the receipts (then `bytes` holds the head's pairs and the
   * receipts, contiguous, and `strings` and the last values are those after both). Null: format 2.
   */
  readonly head: StoredHead | null;
}

/** The head of a format 3 body: the record's first pairs, written before the receipts. */
export interface StoredHead {
  /** How many of the record's pairs it holds. */
  readonly count: number;
  /**
   * The values written for them, by identity: values the ledger alone holds (the kept copy of a record,
   * or a record it decoded), never changed after they were written. A later record whose head values are
   * these same ones (=== each) is written with the stored head's bytes copied.
   */
  readonly values: readonly unknown[];
}

export interface DecodedBody2 {
  readonly record: unknown;
  readonly receipts: unknown[];
  readonly stored: StoredReceipts;
}

// ---------------------------------------------------------------------------------------------
// Encoder. One module-level buffer, grown when needed: encoding is synchronous and not re-entrant
// (a toJSON that wrote a body itself would be a bug; see `busy`).
//
// The encoder's mutable state is `var`, not `let`: a module-level `let` read from a function is checked
// for its temporal dead zone on every read (a compare and a branch in the optimised code, for `out` and
// `pos` several times per byte written); `var` has none. Codec harness: -2.2k instructions per operation.

var out = Buffer.allocUnsafe(4096);
var pos = 0;
/**
 * String lookups (the table, then this body's earlier strings) go through buckets chosen by three of
 * a string's characters and its length, not a Map: a Map hashes every new string over all its
 * characters (a hash, a fingerprint, an id: most of a body), and a Map cleared per encode regrows its
 * table each time. Here a lookup reads three characters and compares the few strings in one bucket.
 */
const BUCKET_BITS = 10;
const bucketOf = (s: string, n: number): number =>
  (Math.imul(s.charCodeAt(n - 1) + (n << 16), 0x9e3779b1) ^ Math.imul(s.charCodeAt(n - 2), 0x85ebca77) ^ Math.imul(s.charCodeAt(n >> 1), 0xc2b2ae3d)) >>> (32 - BUCKET_BITS);
/** Per bucket, the newest table entry in it (-1: none); per entry, the next one in its bucket. */
const TABLE_HEAD = new Int16Array(1 << BUCKET_BITS).fill(-1);
const TABLE_NEXT = new Int16Array(TABLE_SIZE).fill(-1);
for (let i = 0; i < TABLE_SIZE; i++) {
  const b = bucketOf(TABLE[i]!, TABLE[i]!.length);
  TABLE_NEXT[i] = TABLE_HEAD[b]!;
  TABLE_HEAD[b] = i;
}
/**
 * The strings this encode remembered (index = back-reference), chained per bucket by global ids: the
 * id of string j of this encode is base + j + 1, so ids of earlier encodes (≤ base) read as none and
 * nothing needs clearing between encodes.
 */
const heads = new Int32Array(1 << BUCKET_BITS);
var links = new Int32Array(256);
const strings: string[] = [];
var base = 0;
var serial = 0;
var lastTime = 0;
var lastBig = 0;
const stack: object[] = [];
var busy = false;
/** Whether Object.prototype has no enumerable property (for-in over a plain object then yields its own keys only); per encode. */
var ownOnly = false;
function nothingInherited(): boolean {
  for (const _ in Object.prototype) return false;
  return true;
}
const view = () => new DataView(out.buffer, out.byteOffset, out.length);
let dv = view();

function room(n: number): void {
  if (pos + n <= out.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(out.length * 2, pos + n + 1024));
  out.copy(bigger, 0, 0, pos);
  out = bigger;
  dv = view();
}

function writeVarint(v: number): void {
  // v: a non-negative safe integer.
  room(8);
  while (v >= 0x80) {
    out[pos++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  out[pos++] = v;
}

/** The nibble of a lowercase hex digit's char code, or -1. */
const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) NIBBLE['0123456789abcdef'.charCodeAt(i)] = i;
const isHex = (c: number) => c < 128 && NIBBLE[c]! >= 0;

/** Writes s[from, to) packed if it is all lowercase hex (an even count); false (pos past some bytes) if not. */
// The loops below keep `out` and `pos` in locals: module variables are read from and written to their
// context on every iteration otherwise.
function packHex(s: string, from: number, to: number): boolean {
  const o = out;
  let p = pos;
  for (let i = from; i < to; i += 2) {
    const c1 = s.charCodeAt(i);
    const c2 = s.charCodeAt(i + 1);
    if ((c1 | c2) >= 128) return false;
    const hi = NIBBLE[c1]!;
    const lo = NIBBLE[c2]!;
    if ((hi | lo) < 0) return false;
    o[p++] = (hi << 4) | lo;
  }
  pos = p;
  return true;
}

function writeHex(s: string, from: number, to: number): void {
  // [from, to): an even count of lowercase hex digits (checked by the caller).
  room((to - from) >> 1);
  const o = out;
  let p = pos;
  for (let i = from; i < to; i += 2) o[p++] = (NIBBLE[s.charCodeAt(i)]! << 4) | NIBBLE[s.charCodeAt(i + 1)]!;
  pos = p;
}

/** Writes the 32-bit word w as four bytes, most significant first (room for them made by the caller). */
function writeWord(w: number): void {
  const o = out;
  let p = pos;
  o[p++] = w >>> 24;
  o[p++] = (w >>> 16) & 0xff;
  o[p++] = (w >>> 8) & 0xff;
  o[p++] = w & 0xff;
  pos = p;
}

/** Four lowercase hex digits s[at, at + 4) as a number, or -1. */
function hex4(s: string, at: number): number {
  let v = 0;
  for (let i = 0; i < 4; i++) {
    const c = s.charCodeAt(at + i);
    const x = c < 128 ? NIBBLE[c]! : -1;
    if (x < 0) return -1;
    v = (v << 4) | x;
  }
  return v;
}

/**
 * Whether s[at, at + 36) is a lowercase 8-4-4-4-12 UUID; if so its 16 bytes are left in UUID_WORDS as
 * four big-endian 32-bit words. Read in runs of four digits (a loop over all 36 characters tested each
 * one's position for a dash: ~1.8k instructions per UUID, callgrind).
 */
const UUID_WORDS = new Int32Array(4);
function packUuid(s: string, at: number): boolean {
  if (s.charCodeAt(at + 8) !== 45 || s.charCodeAt(at + 13) !== 45 || s.charCodeAt(at + 18) !== 45 || s.charCodeAt(at + 23) !== 45) return false;
  const a = hex4(s, at);
  const b = hex4(s, at + 4);
  const c = hex4(s, at + 9);
  const d = hex4(s, at + 14);
  const e = hex4(s, at + 19);
  const f = hex4(s, at + 24);
  const g = hex4(s, at + 28);
  const h = hex4(s, at + 32);
  if ((a | b | c | d | e | f | g | h) < 0) return false;
  UUID_WORDS[0] = (a << 16) | b;
  UUID_WORDS[1] = (c << 16) | d;
  UUID_WORDS[2] = (e << 16) | f;
  UUID_WORDS[3] = (g << 16) | h;
  return true;
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const digits = (s: string, at: number, n: number): number => {
  let v = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(at + i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
};
/** ms since the epoch of an ISO-8601 `YYYY-MM-DDTHH:MM:SS.sssZ` (years 1970..9999, a real date), else -1. */
function isoMs(s: string): number {
  if (s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(10) !== 84 || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58 || s.charCodeAt(19) !== 46 || s.charCodeAt(23) !== 90) return -1;
  const y = digits(s, 0, 4);
  const mo = digits(s, 5, 2);
  const d = digits(s, 8, 2);
  const h = digits(s, 11, 2);
  const mi = digits(s, 14, 2);
  const se = digits(s, 17, 2);
  const ms = digits(s, 20, 3);
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 59 || ms < 0) return -1;
  const leap = mo === 2 && (y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0)) ? 1 : 0;
  if (d > DAYS[mo - 1]! + leap) return -1;
  // Days since 1970-01-01 of the civil date (H. Hinnant's days_from_civil; isoOf's inverse): plain
  // arithmetic, where Date.UTC is a call into the runtime (~300 instructions per timestamp, callgrind).
  const yy = mo <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5) + d - 1;
  const days = era * 146_097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719_468;
  return days * 86_400_000 + h * 3_600_000 + mi * 60_000 + se * 1000 + ms;
}

function writeZigzag(d: number): void {
  writeVarint(d >= 0 ? d * 2 : -d * 2 - 1);
}

/**
 * Which table key to compare an object's next key with first (an encoder shortcut, not part of the
 * format): the entry after the previous key's (`c + 1`: the record's keys are the table's first 24 in
 * order), else FOLLOWS[c + 1], where the receipt's key order leaves the table's (c = -1: the object's
 * first key). A key equal to the entry is that entry's one-byte code, exactly what writeString writes
 * for it; any other key takes writeString's lookup.
 */
const FOLLOWS = new Int8Array(TABLE_SIZE + 1).fill(-1);
{
  const orders = [
    // Receipt (the runner's order; the record's needs no entry), then a decision's keys.
    ['businessOperationId', 'seq', 'runId', 'attemptId', 'provider', 'operation', 'kind', 'startedAt', 'finishedAt', 'outcome', 'decision', 'providerKey', 'requestFingerprint', 'prevHash', 'providerRef', 'hash'],
    ['', 'action'],
  ];
  for (const keys of orders) {
    for (let i = 1; i < keys.length; i++) {
      const prev = keys[i - 1] === '' ? -1 : TABLE.indexOf(keys[i - 1]!);
      const next = TABLE.indexOf(keys[i]!);
      if (next !== prev + 1) FOLLOWS[prev + 1] = next;
    }
  }
}

/** Writes the key `k` of an object whose previous key had table code `prev` (-1: none); returns its table code, or -1. */
function writeKey(k: string, prev: number): number {
  let c = prev + 1;
  if (!(c < TABLE_SIZE && TABLE[c] === k)) {
    c = FOLLOWS[c]!;
    if (!(c >= 0 && TABLE[c] === k)) {
      const n = k.length;
      c = n < 2 ? -1 : tableCode(k, bucketOf(k, n));
      if (c < 0) {
        writeString(k);
        return -1;
      }
    }
  }
  room(1);
  out[pos++] = c;
  return c;
}

/** Remembers `s` (of length ≥ 2, in bucket b) as back-reference `serial`. */
function remember(s: string, b: number): void {
  const j = serial++;
  if (j >= links.length) {
    const more = new Int32Array(links.length * 2);
    more.set(links);
    links = more;
  }
  strings[j] = s;
  links[j] = heads[b]!;
  heads[b] = base + j + 1;
}

/** The table index of `s` (length n ≥ 2, bucket b), or -1. */
function tableCode(s: string, b: number): number {
  for (let i = TABLE_HEAD[b]!; i >= 0; i = TABLE_NEXT[i]!) if (TABLE[i] === s) return i;
  return -1;
}

/** The back-reference of `s` (bucket b) if this body wrote it before, or -1. */
function backOf(s: string, b: number): number {
  for (let g = heads[b]!; g > base; g = links[g - base - 1]!) if (strings[g - base - 1] === s) return g - base - 1;
  return -1;
}

function writeString(s: string): void {
  const n = s.length;
  if (n < 2) {
    writeLiteral(s, n);
    return;
  }
  const b = bucketOf(s, n);
  const code = tableCode(s, b);
  if (code >= 0) {
    room(1);
    out[pos++] = code;
    return;
  }
  const back = backOf(s, b);
  if (back >= 0) {
    if (back < 32) {
      room(1);
      out[pos++] = T_BACKREF_SHORT + back;
    } else {
      room(1);
      out[pos++] = T_BACKREF;
      writeVarint(back);
    }
    return;
  }
  if (n >= 16 && isHex(s.charCodeAt(n - 1))) {
    if (n >= 36 && s.charCodeAt(n - 13) === 45 && packUuid(s, n - 36)) {
      // Read before the prefix is written: it may be a UUID form too.
      const w0 = UUID_WORDS[0]!;
      const w1 = UUID_WORDS[1]!;
      const w2 = UUID_WORDS[2]!;
      const w3 = UUID_WORDS[3]!;
      room(1);
      out[pos++] = T_PREFIX_UUID;
      writeString(s.slice(0, n - 36));
      room(16);
      writeWord(w0);
      writeWord(w1);
      writeWord(w2);
      writeWord(w3);
      remember(s, b);
      return;
    }
    // The commonest: 'sha256:' + 64 hex digits, and a hash alone (hex, even length): packed as they are checked.
    if (n === 71 && s.startsWith('sha256:')) {
      const start = pos;
      room(33);
      out[pos++] = T_SHA256;
      if (packHex(s, 7, 71)) {
        remember(s, b);
        return;
      }
      pos = start;
    } else if ((n & 1) === 0 && n <= 0x7e && isHex(s.charCodeAt(0))) {
      const start = pos;
      room(2 + (n >> 1));
      out[pos++] = T_HEX;
      out[pos++] = n >> 1;
      if (packHex(s, 0, n)) {
        remember(s, b);
        return;
      }
      pos = start;
    }
    let h = n - 1;
    while (h > 0 && isHex(s.charCodeAt(h - 1))) h--;
    // [h, n) is the hex tail: use an even count of its digits.
    if (h === 0 && (n & 1) === 0) {
      room(1);
      out[pos++] = T_HEX;
      writeVarint(n >> 1);
      writeHex(s, 0, n);
      remember(s, b);
      return;
    }
    if (h > 0 && n - h >= 16 && ((n - h) & 1) === 0 && s.charCodeAt(h - 1) === 58) {
      room(1);
      out[pos++] = T_PREFIX_HEX;
      writeString(s.slice(0, h - 1));
      writeVarint((n - h) >> 1);
      writeHex(s, h, n);
      remember(s, b);
      return;
    }
  }
  if (n === 24 && s.charCodeAt(23) === 90) {
    const ms = isoMs(s);
    if (ms >= 0) {
      room(1);
      out[pos++] = T_TIME;
      writeZigzag(ms - lastTime);
      lastTime = ms;
      remember(s, b);
      return;
    }
  }
  writeLiteral(s, n);
  remember(s, b);
}

/** `s` (length n) as a literal: ASCII in one pass, else UTF-8 (well-formed) or UTF-16 code units. */
function writeLiteral(s: string, n: number): void {
  room(n + 9);
  const start = pos;
  if (n < 32) out[pos++] = T_ASCII_SHORT + n;
  else {
    out[pos++] = T_ASCII;
    writeVarint(n);
  }
  let i = 0;
  const o = out;
  let p = pos;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) break;
    o[p++] = c;
  }
  pos = p;
  if (i < n) {
    pos = start;
    if ((s as string & { isWellFormed(): boolean }).isWellFormed()) {
      const bytes = Buffer.byteLength(s, 'utf8');
      room(bytes + 9);
      out[pos++] = T_UTF8;
      writeVarint(bytes);
      pos += out.write(s, pos, bytes, 'utf8');
    } else {
      room(2 * n + 9);
      out[pos++] = T_UTF16;
      writeVarint(n);
      for (let j = 0; j < n; j++) {
        const c = s.charCodeAt(j);
        out[pos++] = c & 0xff;
        out[pos++] = c >> 8;
      }
    }
  }
}

/** A safe integer as its sign tag and a varint of its magnitude. */
function writeInteger(v: number): void {
  out[pos++] = v > 0 ? T_UINT : T_NEGINT;
  writeVarint(v > 0 ? v : -v);
}

function writeNumber(v: number): void {
  room(9);
  if (!Number.isFinite(v)) out[pos++] = T_NULL;
  else if (Number.isSafeInteger(v)) {
    // -0 is a safe integer and is written as 0 here, as JSON.stringify writes it.
    if (v >= 0 && v < 32) out[pos++] = T_INT_SHORT + v;
    else if (v > -0x80000000 && v < 0x80000000) writeInteger(v);
    else {
      const d = v - lastBig;
      if (d > -0x4000000000000 && d < 0x4000000000000) {
        out[pos++] = T_BIGINT;
        writeZigzag(d);
        lastBig = v;
      } else writeInteger(v);
    }
  } else {
    out[pos++] = T_FLOAT;
    dv.setFloat64(pos, v, true);
    pos += 8;
  }
}

type Json = unknown;

/** How deep arrays and objects may nest (and string prefixes, which nest too), writing and reading. */
const MAX_DEPTH = 2000;
const MAX_PREFIX_DEPTH = 64;

/** The value JSON.stringify would serialise for `v` held under `key` (toJSON, boxed primitives). */
function jsonValue(v: Json, key: string | number): Json {
  if (typeof v !== 'object' || v === null) return typeof v === 'bigint' ? withToJSON(v, key) : v;
  const toJSON = (v as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return unboxed(toJSON.call(v, String(key)));
  // A plain object or array (the ledger's values) is no boxed primitive: no instanceof checks.
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === Array.prototype ? v : unboxed(v);
}

function withToJSON(v: Json, key: string | number): Json {
  const toJSON = (v as { toJSON?: unknown }).toJSON;
  return unboxed(typeof toJSON === 'function' ? toJSON.call(v, String(key)) : v);
}

function unboxed(v: Json): Json {
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
    if (v instanceof Number) return Number(v);
    if (v instanceof String) return String(v);
    if (v instanceof Boolean) return v.valueOf();
    if (typeof BigInt !== 'undefined' && v instanceof BigInt) throw new TypeError('Do not know how to serialize a BigInt');
  }
  return v;
}

/** Whether JSON.stringify leaves `v` out of an object (writes null in an array). */
const omitted = (v: Json) => v === undefined || typeof v === 'function' || typeof v === 'symbol';

function writeValue(v: Json): void {
  switch (typeof v) {
    case 'string':
      writeString(v);
      return;
    case 'number':
      writeNumber(v);
      return;
    case 'boolean':
      room(1);
      out[pos++] = v ? T_TRUE : T_FALSE;
      return;
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    case 'object':
      break;
    default:
      // undefined, function, symbol where JSON.stringify writes null (array elements).
      room(1);
      out[pos++] = T_NULL;
      return;
  }
  if (v === null) {
    room(1);
    out[pos++] = T_NULL;
    return;
  }
  if (stack.includes(v)) throw new TypeError('Converting circular structure to JSON');
  // The decoder refuses deeper values (its recursion is bounded): refuse to write what it would not read.
  if (stack.length >= MAX_DEPTH) throw new TypeError(`a value nested deeper than ${MAX_DEPTH} levels is not stored`);
  stack.push(v);
  room(1);
  if (Array.isArray(v)) {
    out[pos++] = T_ARRAY;
    for (let i = 0, n = v.length; i < n; i++) writeValue(jsonValue(v[i], i));
  } else {
    out[pos++] = T_OBJECT;
    const o = v as Record<string, Json>;
    if (ownOnly && Object.getPrototypeOf(o) === Object.prototype) {
      // for-in over a plain object, when nothing is inherited, gives Object.keys' keys in its order; it
      // reads each value by the object's enum cache, where o[k] over many shapes is a megamorphic load.
      let c = -1;
      for (const k in o) {
        const x = jsonValue(o[k], k);
        if (omitted(x)) continue;
        c = writeKey(k, c);
        writeValue(x);
      }
    } else {
      let c = -1;
      for (const k of Object.keys(o)) {
        const x = jsonValue(o[k], k);
        if (omitted(x)) continue;
        c = writeKey(k, c);
        writeValue(x);
      }
    }
  }
  room(1);
  out[pos++] = T_END;
  stack.pop();
}

/** CRC-32 of b[0, end), as zlib computes it (zlib.crc32: Node >= 20.15, below this package's engines). */
const crc32 = (b: Uint8Array, end: number): number => zlib.crc32(b.subarray(0, end)) >>> 0;

/**
 * Encodes a body: the receipts already stored (`prior`: their bytes are copied, not re-encoded), then
 * `receipts` (appended after them), then `record`. Values go through JSON.stringify's rules.
 */
export function encodeBody2(record: Json, receipts: readonly Json[], prior?: StoredReceipts | null): Buffer {
  beginEncode('encodeBody2');
  try {
    const count = (prior?.count ?? 0) + receipts.length;
    room(16);
    out[pos++] = BODY_BINARY_2;
    writeVarint(count);
    if (prior) copyStored(prior);
    for (const r of receipts) writeValue(jsonValue(r, ''));
    writeValue(jsonValue(record, ''));
    return sealBody();
  } finally {
    endEncode();
  }
}

/** Starts an encode (formats 2 and 3): the module's buffer, strings, timestamps and integers from nothing. */
function beginEncode(what: string): void {
  if (busy) throw new Error(`${what} is not re-entrant`);
  busy = true;
  pos = 0;
  stack.length = 0;
  serial = 0;
  lastTime = 0;
  lastBig = 0;
  ownOnly = nothingInherited();
}

/** Copies stored bytes (receipts, and a format 3 head) as they are, and goes on encoding after them. */
function copyStored(prior: StoredReceipts): void {
  const bytes = prior.bytes;
  room(bytes.length);
  out.set(bytes, pos);
  pos += bytes.length;
  const strs = prior.strings;
  for (let i = 0, n = strs.length; i < n; i++) {
    const s = strs[i]!;
    remember(s, bucketOf(s, s.length));
  }
  lastTime = prior.lastTime;
  lastBig = prior.lastBig;
}

/** The checksum after what was written, and the body copied out of the module's buffer. */
function sealBody(): Buffer {
  room(4);
  out.writeUInt32LE(crc32(out, pos), pos);
  pos += 4;
  const body = Buffer.allocUnsafe(pos);
  out.copy(body, 0, 0, pos);
  return body;
}

/** Ends an encode, a failed one too. */
function endEncode(): void {
  stack.length = 0;
  // The next encode's ids start after this one's (so these read as none); from 0 again before they overflow.
  base += serial + 1;
  if (base > 0x3fffffff) {
    base = 0;
    heads.fill(0);
  }
  busy = false;
}

/** The format byte of format 3 bodies: format 2's tokens, the record's head before the receipts. */
export const BODY_BINARY_3 = 3;

/**
 * The record keys a format 3 head may hold, in this order (the encoder's choice: the body says how many
 * pairs its head has, and the decoder reads any). The values a record keeps from its claim on: its ids,
 * fingerprints, params and key — what the completion, and every write after the claim, copies.
 */
const HEAD_KEYS: readonly string[] = ['businessOperationId', 'provider', 'operation', 'intentFingerprint', 'paramsFingerprint', 'params', 'providerKey'];
const HEAD_MAX = HEAD_KEYS.length;
/**
 * The record's members as the encoder found them: its head's values (headCount of them, while `headOpen`),
 * then the other members (tails of them), written after the receipts. Module state, like the encoder's.
 */
const HEAD_SCRATCH: Json[] = [undefined, undefined, undefined, undefined, undefined, undefined, undefined];
var headValues: Json[] = HEAD_SCRATCH;
var headCount = 0;
var headOpen = true;
const tailKeys: string[] = [];
const tailValues: Json[] = [];
var tails = 0;

/** Takes the record's member k (value v) as JSON.stringify would write it: into the head while its keys follow HEAD_KEYS, else the tail. */
function addMember(k: string, v: Json): void {
  const x = jsonValue(v, k);
  if (omitted(x)) return;
  if (headOpen && headCount < HEAD_MAX && k === HEAD_KEYS[headCount]) headValues[headCount++] = x;
  else {
    headOpen = false;
    tailKeys[tails] = k;
    tailValues[tails++] = x;
  }
}

/** The value of `r`'s head key i, read by name (a keyed read with changing keys is megamorphic). */
function headValueOf(r: Record<string, Json>, i: number): Json {
  switch (i) {
    case 0: return r.businessOperationId;
    case 1: return r.provider;
    case 2: return r.operation;
    case 3: return r.intentFingerprint;
    case 4: return r.paramsFingerprint;
    case 5: return r.params;
    default: return r.providerKey;
  }
}

/** A format 3 body, and what the next write of the row needs (its `prior`), when asked for. */
export interface Body3 {
  readonly body: Buffer;
  readonly stored: StoredReceipts | null;
}

/**
 * Encodes a format 3 body: byte 3, varint n (receipts), varint h (head pairs), the record's first h
 * key/value pairs (those of HEAD_KEYS, in order, as long as the record's keys follow them), the n
 * receipts, the record's other pairs and T_END, then the CRC-32 — the tokens and the order of strings
 * (back-references), timestamps and big integers of format 2, in body order. The record read back is the
 * object of the head's pairs then the others': the same value format 2 reads.
 *
 * `prior` (a format 3 body's, or null for a new row): when the record's head values are prior's (=== each,
 * see StoredHead), the stored head and receipts are copied as bytes and `receipts` appended after them;
 * otherwise the head is written again and the stored receipts are encoded again from `priorValues`, their
 * values — or, without them, the answer is null (the caller reads the row and passes them).
 * The record must be an object (after toJSON): the ledger's records always are. `like`: a plain record
 * of which `record` is an exact copy (jsonCopy), whose head values are compared with prior's instead of
 * the copy's own (the ledger keeps the copy and hands `like`'s values on). `keep`: whether to answer the
 * stored part for the next write (`stored`, holding `record`'s head values), else null.
 */
export function encodeBody3(record: Json, receipts: readonly Json[], prior: StoredReceipts | null, priorValues: readonly Json[] | null, like?: object, keep = true): Body3 | null {
  if (prior !== null && prior.head === null) throw new Error('encodeBody3: the stored receipts are format 2');
  beginEncode('encodeBody3');
  try {
    const o = jsonValue(record, '');
    if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new TypeError('a format 3 body holds an object record');
    // The head's values go to the stored part when it is kept (a new array), else to scratch.
    const values: Json[] = keep ? [undefined, undefined, undefined, undefined, undefined, undefined, undefined] : HEAD_SCRATCH;
    headValues = values;
    headCount = 0;
    headOpen = true;
    tails = 0;
    const rec = o as Record<string, Json>;
    if (ownOnly && Object.getPrototypeOf(rec) === Object.prototype) {
      for (const k in rec) addMember(k, rec[k]);
    } else for (const k of Object.keys(rec)) addMember(k, rec[k]);
    const h = headCount;
    const head = prior === null ? null : prior.head;
    let copy = head !== null && head.count === h;
    if (copy && like !== undefined && like !== record) {
      for (let i = 0; copy && i < h; i++) copy = headValueOf(like as Record<string, Json>, i) === head!.values[i];
    } else for (let i = 0; copy && i < h; i++) copy = values[i] === head!.values[i];
    if (!copy && prior !== null && prior.count > 0 && priorValues === null) return null;
    const count = (prior === null ? 0 : prior.count) + receipts.length;
    room(16);
    out[pos++] = BODY_BINARY_3;
    writeVarint(count);
    writeVarint(h);
    const from = pos;
    let c = -1;
    if (copy) {
      copyStored(prior!);
      c = h - 1;
    } else {
      stack.push(rec);
      for (let i = 0; i < h; i++) {
        c = writeKey(HEAD_KEYS[i]!, c);
        writeValue(values[i]);
      }
      stack.pop();
      if (prior !== null && prior.count > 0) for (const r of priorValues!) writeValue(jsonValue(r, ''));
    }
    for (let i = 0, n = receipts.length; i < n; i++) writeValue(jsonValue(receipts[i], ''));
    const to = pos;
    const strings = !keep ? null : copy && receipts.length === 0 ? prior!.strings : serialStrings();
    const storedTime = lastTime;
    const storedBig = lastBig;
    stack.push(rec);
    for (let i = 0, n = tails; i < n; i++) {
      c = writeKey(tailKeys[i]!, c);
      writeValue(tailValues[i]);
    }
    stack.pop();
    room(1);
    out[pos++] = T_END;
    const body = sealBody();
    return {
      body,
      stored: strings === null ? null : { bytes: body.subarray(from, to), count, strings, lastTime: storedTime, lastBig: storedBig, head: { count: h, values } },
    };
  } finally {
    // The members' values are not held past the encode (the kept head's array is the caller's).
    for (let i = 0; i < tails; i++) tailValues[i] = undefined;
    if (!keep) for (let i = 0; i < headCount; i++) HEAD_SCRATCH[i] = undefined;
    endEncode();
  }
}

/** The strings this encode has remembered so far, in order (the back-reference table). */
function serialStrings(): string[] {
  return strings.slice(0, serial);
}

// ---------------------------------------------------------------------------------------------
// Decoder: every read is bounds-checked; anything unexpected is a BodyFormatError.

/** The Buffer methods the decoder uses to turn bytes into strings (Node's own, on Buffer.prototype). */
interface Slices {
  latin1Slice(start: number, end: number): string;
  utf8Slice(start: number, end: number): string;
  ucs2Slice(start: number, end: number): string;
  hexSlice(start: number, end: number): string;
}

class Reader {
  p: number;
  readonly end: number;
  readonly strings: string[] = [];
  lastTime = 0;
  lastBig = 0;
  constructor(
    readonly b: Buffer & Slices,
    start: number,
    end: number,
  ) {
    this.p = start;
    this.end = end;
  }
  fail(why: string): never {
    throw new BodyFormatError(`body format ${this.b[0]}: ${why} at byte ${this.p}`);
  }
  byte(): number {
    if (this.p >= this.end) this.fail('cut short');
    return this.b[this.p++]!;
  }
  varint(): number {
    let v = 0;
    for (let scale = 1; ; scale *= 0x80) {
      const c = this.byte();
      v += (c & 0x7f) * scale;
      if (c < 0x80) break;
      if (scale > 2 ** 42) this.fail('varint too long');
    }
    return v;
  }
  zigzag(): number {
    const z = this.varint();
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }
  take(n: number): number {
    const at = this.p;
    if (n > this.end - at) this.fail('cut short');
    this.p = at + n;
    return at;
  }
}

const PAD2: string[] = Array.from({ length: 100 }, (_, i) => (i < 10 ? `0${i}` : `${i}`));
const PAD3: string[] = Array.from({ length: 1000 }, (_, i) => `${i}`.padStart(3, '0'));
/** `ms` (1970..9999) as ISO-8601, as Date#toISOString writes it. */
function isoOf(ms: number): string {
  const days = Math.floor(ms / 86_400_000);
  let rest = ms - days * 86_400_000;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const mi = Math.floor(rest / 60_000);
  rest -= mi * 60_000;
  const se = Math.floor(rest / 1000);
  const milli = rest - se * 1000;
  // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  return `${y}-${PAD2[m]}-${PAD2[d]}T${PAD2[h]}:${PAD2[mi]}:${PAD2[se]}.${PAD3[milli]}Z`;
}

function readString(r: Reader, tag: number, depth = 0): string {
  if (tag < TABLE_SIZE) return TABLE[tag]!;
  if (tag < T_ASCII_SHORT) return backref(r, tag - T_BACKREF_SHORT);
  let s: string;
  if (tag < T_INT_SHORT) {
    const n = tag - T_ASCII_SHORT;
    const at = r.take(n);
    s = r.b.latin1Slice(at, at + n);
  } else {
    switch (tag) {
      case T_ASCII: {
        const n = r.varint();
        const at = r.take(n);
        s = r.b.latin1Slice(at, at + n);
        break;
      }
      case T_UTF8: {
        const n = r.varint();
        const at = r.take(n);
        s = r.b.utf8Slice(at, at + n);
        break;
      }
      case T_UTF16: {
        const n = r.varint();
        const at = r.take(2 * n);
        s = r.b.ucs2Slice(at, at + 2 * n);
        break;
      }
      case T_BACKREF:
        return backref(r, r.varint());
      case T_HEX: {
        const n = r.varint();
        const at = r.take(n);
        s = r.b.hexSlice(at, at + n);
        break;
      }
      case T_SHA256: {
        const at = r.take(32);
        s = `sha256:${r.b.hexSlice(at, at + 32)}`;
        break;
      }
      case T_PREFIX_HEX: {
        const prefix = prefixOf(r, depth);
        const n = r.varint();
        const at = r.take(n);
        s = `${prefix}:${r.b.hexSlice(at, at + n)}`;
        break;
      }
      case T_PREFIX_UUID: {
        const prefix = prefixOf(r, depth);
        const at = r.take(16);
        const x = r.b.hexSlice(at, at + 16);
        s = `${prefix}${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
        break;
      }
      case T_TIME: {
        const ms = r.lastTime + r.zigzag();
        if (!(ms >= 0 && ms < 253_402_300_800_000)) r.fail('timestamp out of range');
        r.lastTime = ms;
        s = isoOf(ms);
        break;
      }
      default:
        return r.fail(`tag 0x${tag.toString(16)} is not a string`);
    }
  }
  if (s.length >= 2) r.strings.push(s);
  return s;
}

function prefixOf(r: Reader, depth: number): string {
  if (depth >= MAX_PREFIX_DEPTH) r.fail('prefixes nested too deep');
  return readString(r, r.byte(), depth + 1);
}

function backref(r: Reader, i: number): string {
  const s = r.strings[i];
  if (s === undefined) r.fail(`back-reference ${i} to nothing`);
  return s;
}

function readValue(r: Reader, depth: number): Json {
  const tag = r.byte();
  if (tag < T_INT_SHORT) return readString(r, tag);
  if (tag < T_NULL) return tag - T_INT_SHORT;
  switch (tag) {
    case T_NULL:
      return null;
    case T_FALSE:
      return false;
    case T_TRUE:
      return true;
    case T_UINT:
      return r.varint();
    case T_NEGINT: {
      const n = r.varint();
      return n === 0 ? r.fail('negative zero integer') : -n;
    }
    case T_FLOAT: {
      const at = r.take(8);
      return r.b.readDoubleLE(at);
    }
    case T_BIGINT: {
      const v = r.lastBig + r.zigzag();
      if (!Number.isSafeInteger(v)) r.fail('integer out of range');
      r.lastBig = v;
      return v;
    }
    case T_OBJECT:
      if (depth > MAX_DEPTH) r.fail('nested too deep');
      return readObject(r, depth);
    case T_ARRAY: {
      if (depth > MAX_DEPTH) r.fail('nested too deep');
      const a: Json[] = [];
      for (;;) {
        if (r.p < r.end && r.b[r.p] === T_END) {
          r.p++;
          return a;
        }
        a.push(readValue(r, depth + 1));
      }
    }
    default:
      return readString(r, tag);
  }
}

/** An object: its keys and values in body order (a repeated key keeps its first place and last value, as JSON.parse does). */
function readObject(r: Reader, depth: number, o: Record<string, Json> = {}): Record<string, Json> {
  for (;;) {
    const k = r.byte();
    if (k === T_END) return o;
    const key = readString(r, k);
    const value = readValue(r, depth + 1);
    // Assigning to `__proto__` would set the prototype: JSON.parse makes it an own key.
    if (key === '__proto__') Object.defineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });
    else o[key] = value;
  }
}

/**
 * A reader of `body` past its format byte, up to its checksum: BodyFormatError unless the body is at least
 * `min` bytes of `format` whose CRC-32 holds.
 */
function openBody(body: Uint8Array, format: number, min: number): Reader {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.length);
  if (b.length < min || b[0] !== format) throw new BodyFormatError(`body format ${format}: too short or not format ${format}`);
  const end = b.length - 4;
  if (crc32(b, end) !== b.readUInt32LE(end)) throw new BodyFormatError(`body format ${format}: checksum mismatch (cut or corrupt)`);
  return new Reader(b as Buffer & Slices, 1, end);
}

/** Decodes a format 2 body (its first byte is 2). Throws BodyFormatError on a cut or corrupt one. */
export function decodeBody2(body: Uint8Array): DecodedBody2 {
  const r = openBody(body, BODY_BINARY_2, 6);
  const { b, end } = r;
  const count = r.varint();
  if (count > end) r.fail('receipt count beyond the body');
  const from = r.p;
  const receipts: Json[] = [];
  for (let i = 0; i < count; i++) receipts.push(readValue(r, 0));
  const stored: StoredReceipts = { bytes: b.subarray(from, r.p), count, strings: r.strings.slice(), lastTime: r.lastTime, lastBig: r.lastBig, head: null };
  const record = readValue(r, 0);
  if (r.p !== end) r.fail('bytes after the record');
  return { record, receipts, stored };
}

/**
 * Decodes a format 3 body (its first byte is 3; see encodeBody3). Throws BodyFormatError on a cut or corrupt
 * one. `stored.head.values` are the head's values as read (the record's, unless a later pair repeats its key).
 */
export function decodeBody3(body: Uint8Array): DecodedBody2 {
  const r = openBody(body, BODY_BINARY_3, 7);
  const { b, end } = r;
  const count = r.varint();
  if (count > end) r.fail('receipt count beyond the body');
  const h = r.varint();
  if (h > end) r.fail('head count beyond the body');
  const from = r.p;
  const record: Record<string, Json> = {};
  const values: Json[] = [];
  // Whether the head's keys are HEAD_KEYS' first h, as the encoder writes them; a head of other keys (not
  // this encoder's) is never copied: its count reads as none (-1).
  let ours = h <= HEAD_MAX;
  for (let i = 0; i < h; i++) {
    const k = r.byte();
    if (k === T_END) r.fail('head cut short');
    const key = readString(r, k);
    const value = readValue(r, 1);
    if (key === '__proto__') Object.defineProperty(record, key, { value, writable: true, enumerable: true, configurable: true });
    else record[key] = value;
    if (key !== HEAD_KEYS[i]) ours = false;
    values.push(value);
  }
  const receipts: Json[] = [];
  for (let i = 0; i < count; i++) receipts.push(readValue(r, 0));
  const head: StoredHead = ours ? { count: h, values } : { count: -1, values: [] };
  const stored: StoredReceipts = { bytes: b.subarray(from, r.p), count, strings: r.strings.slice(), lastTime: r.lastTime, lastBig: r.lastBig, head };
  readObject(r, 0, record);
  if (r.p !== end) r.fail('bytes after the record');
  return { record, receipts, stored };
}

/** Decodes a binary body, format 2 or 3 by its first byte. */
export function decodeBinaryBody(body: Uint8Array): DecodedBody2 {
  return body[0] === BODY_BINARY_3 ? decodeBody3(body) : decodeBody2(body);
}

/**
 * For tests that fuzz the decoder's own checks: `body` (format 2 bytes whose last 4 are a checksum,
 * possibly cut or edited) with its checksum recomputed, so the decoder gets past it.
 */
export function resealBody2(body: Uint8Array): Buffer {
  const b = Buffer.from(body);
  if (b.length >= 4) b.writeUInt32LE(crc32(b, b.length - 4), b.length - 4);
  return b;
}
