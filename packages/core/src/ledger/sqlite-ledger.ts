import { setTimeout as sleep } from 'node:timers/promises';
import {
  LedgerError,
  PRUNABLE_STATES,
  RECOVERABLE_STATES,
  RetrysafeError,
  type BusinessOperationId,
  type ClaimInput,
  type ClaimResult,
  type Fenced,
  type Ledger,
  type ListFilter,
  type OperationRecord,
  type OperationState,
  type PruneOptions,
  type PruneReport,
  type Receipt,
  type StatePatch,
} from '@retrysafe/contract';
import { RunnerConfigurationError } from '../errors/runner-configuration-error.js';
import { BODY_BINARY_2, BODY_BINARY_3, decodeBinaryBody, encodeBody2, encodeBody3, type StoredReceipts } from './sqlite-body2.js';
import { decodeBody, encodeBody } from './sqlite-layout.js';
import {
  chainedTransition,
  checkFence,
  checkReceipt,
  claimTransition,
  dispatchedTransition,
  handOffTransition,
  pruneStates,
  releaseTransition,
  renewTransition,
  resolveTransition,
  setStateTransition,
  isTerminal,
} from '@retrysafe/contract';
import { isBusy, resolveDriver, type SqliteConnection, type SqliteDriverName, type SqliteStatement } from './sqlite-driver.js';

export interface SqliteLedgerOptions {
  /** Database file (created if missing). `:memory:` works for a single connection. */
  readonly path: string;
  /**
   * How long a writer waits for another process's write lock (default 10 s). The wait is asynchronous,
   * in short steps: the event loop (other operations' lease heartbeats) keeps running meanwhile.
   */
  readonly busyTimeoutMs?: number;
  /**
   * `FULL` (default): a committed `dispatched` survives power loss, not only a process crash.
   * `NORMAL` is ~5x faster in WAL mode and still survives a process crash.
   */
  readonly synchronous?: 'FULL' | 'NORMAL';
  /**
   * Under `FULL`, what a write the runner marks deferrable costs (StatePatch.durability: an operation's
   * final `succeeded`, for a card with a lookup: completionRecoverable). `defer` (default): committed at
   * `NORMAL`, without waiting for the disk; it is durable once any later commit on the file (the next
   * claim) or a checkpoint syncs the WAL, and an OS crash or power loss before that leaves the operation
   * `dispatched`, which the next run or recover() looks up and adopts, never sends again. A process crash
   * loses nothing either way. `sync`: every commit waits for the disk
   * (docs/decisions/2026-12-01-deferred-completion-sync.md).
   */
  readonly deferrableWrites?: 'defer' | 'sync';
  /**
   * The SQLite binding. `auto` (default): `node:sqlite` when the runtime has it (Node ≥ 22.13, nothing
   * to install), else the optional peer `better-sqlite3`. Both store the same file format and schema.
   */
  readonly driver?: SqliteDriverName | 'auto';
}

/** The SQLite ledger, with the driver it runs on. */
export interface SqliteLedger extends Ledger {
  readonly driver: SqliteDriverName;
}

/** The longest a single SQLite call may block the event loop on a lock before giving the loop a turn. */
const SYNC_BUSY_MS = 20;

/**
 * File layout 6 (see sqlite-layout.ts for the body formats): one row per operation, receipts inside its
 * body (format 3 for new rows, format 2 rows kept as they are: sqlite-body2.ts). `id` has its own unique index. The partial index holds only
 * operations that are not closed (in flight, stuck or handed off): it stays small however long the
 * history grows, and serves recovery and the handoff queue.
 *
 * The rowid is the creation order (docs/decisions/2026-12-01-sqlite-rowid-creation-order.md): a row's
 * rowid is `bucket(created_at) * 2^20 + n`, n a number unique among the rows created in that
 * millisecond (the claiming connection's guess, else the next after the bucket's highest). So the table
 * itself is in created_at order by whole milliseconds: listings and retention walk it by rowid, and no
 * `created_at` index is written on every claim (layout 4 had one: a third b-tree page in each claim's
 * commit). bucket() is created_at's whole milliseconds, clamped to [0, 2^43): rowids stay below 2^63.
 * A rowid is beyond 2^53, so it is never read as a number (node:sqlite refuses to): only as text, or
 * as its bucket (`rowid >> 20`).
 */
const OPEN_STATES_SQL = `state <> 'succeeded' AND state <> 'rejected' AND state <> 'abandoned'`;
/*
 * Until 2026-12 the term was `state NOT IN ('succeeded', 'rejected', 'abandoned')`: the same rows, but
 * SQLite evaluates an IN list of three, on every INSERT and UPDATE the index sees, through a temporary
 * b-tree it opens, zeroes and frees for the statement: 3 per clean operation, ~18k instructions each
 * in SQLite and libc (callgrind); three comparisons cost a few. setUp replaces such an index once per
 * file: a build that still has the old term reads and writes the file as before (only its open-state
 * queries no longer find the index).
 */
/** The table of layouts 3 to 5 (layout 0/2 files are converted into it). */
const TABLE_V3 = `
CREATE TABLE IF NOT EXISTS retrysafe_operations (
  id TEXT NOT NULL UNIQUE,
  provider TEXT NOT NULL,
  operation TEXT NOT NULL,
  state TEXT NOT NULL,
  fence INTEGER NOT NULL,
  lease_expires_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  body BLOB NOT NULL
);`;
const SCHEMA_V5 = `${TABLE_V3}
CREATE INDEX IF NOT EXISTS retrysafe_operations_open ON retrysafe_operations (state, updated_at) WHERE ${OPEN_STATES_SQL};
CREATE TABLE IF NOT EXISTS retrysafe_migrations (name TEXT PRIMARY KEY);
`;
/** Rows per millisecond of creation the rowid has room for (see the layout above). */
const BUCKET_BITS = 20;
const BUCKET_SIZE = 2 ** BUCKET_BITS;
/** The last bucket: 2^43 - 1 ms after the epoch (the year 2248); later (and earlier than 0) times share the end buckets. */
const LAST_BUCKET = 2 ** 43 - 1;
/** SQL: the bucket of the created_at value `v` (an SQL expression). */
const bucketSql = (v: string) => `max(0, min(CAST(${v} AS INTEGER), ${LAST_BUCKET}))`;
/**
 * SQL: the rowid of a new row created at `?` (the last positional parameter of the INSERT): the next
 * after its bucket's highest (a claim whose guess was taken, after its read found no row). A bucket whose highest rowid is its last gives a text rowid, which
 * SQLite refuses (datatype mismatch): the claim fails whole, nothing is written. That takes at least
 * 2^19 operations created in one millisecond (guesses start below 2^19).
 */
const NEW_ROWID = `(SELECT CASE WHEN n < (b + 1) * ${BUCKET_SIZE} THEN n ELSE 'bucket full' END FROM
  (SELECT coalesce((SELECT max(rowid) + 1 FROM retrysafe_operations WHERE rowid >= b * ${BUCKET_SIZE} AND rowid < (b + 1) * ${BUCKET_SIZE}), b * ${BUCKET_SIZE}) AS n, b
   FROM (SELECT ${bucketSql('?')} AS b)))`;
const BIG_BUCKET_SIZE = BigInt(BUCKET_SIZE);
/** A connection's guessed rowids start at a random place below this in their bucket (see guessRowid). */
const GUESS_STARTS = 2 ** 19;
/** The bucket of a created_at value, as bucketSql computes it (JS side: which bucket a listing's last row is in). */
const bucketOf = (createdAt: number): number => Math.max(0, Math.min(Math.trunc(createdAt), LAST_BUCKET));

/**
 * The file layouts: 0 = the first release, 2 = rows anchor their receipt chain (issue 18), both with
 * the record as JSON text and receipts in their own table; 3 = the compact layout above (issue 23),
 * bodies in formats 0/1; 4 = the same table, new bodies in format 2 (sqlite-body2.ts). 3 → 4 touches
 * no row (this version reads formats 0 and 1 too): the number only makes a build that knows layout 3
 * refuse the file at open ("upgrade") instead of failing on each format-2 row it meets — a listing or
 * recovery scan would fail whole on one such row. 5 = the same table and bodies, rowids in creation
 * order and no `created_at` index: 4 → 5 renumbers the rows (one rebuild of the table, in one
 * transaction); a build that knows layout 4 refuses the file, since the rows it would add would not
 * follow the rowid rule. 6 = the same table and rows, new bodies in format 3 (the record's head before the
 * receipts: sqlite-body2.ts, docs/decisions/2026-12-02-sqlite-body-format-3.md): 5 → 6 touches no row, and a
 * build that knows layout 5 refuses the file rather than fail on each format 3 row it meets.
 */
const SQLITE_LAYOUT_VERSION = 6;
/** The first layout whose rowids are in creation order (earlier ones are renumbered on the way up). */
const ROWIDS_IN_ORDER_LAYOUT = 5;
/** Layout 0 → 2: rows written before anchoring get the anchor of the receipts they hold (once per file). */
const ANCHOR_MIGRATION = `
CREATE TABLE IF NOT EXISTS retrysafe_migrations (name TEXT PRIMARY KEY);
BEGIN IMMEDIATE;
UPDATE retrysafe_operations SET record = json_set(record, '$.receiptChain', json_object(
  'head', (SELECT json_extract(r.receipt, '$.hash') FROM retrysafe_receipts r WHERE r.id = retrysafe_operations.id ORDER BY r.seq DESC LIMIT 1),
  'length', (SELECT count(*) FROM retrysafe_receipts r WHERE r.id = retrysafe_operations.id)))
WHERE json_type(record, '$.receiptChain') IS NULL AND NOT EXISTS (SELECT 1 FROM retrysafe_migrations WHERE name = 'receipt-anchor');
INSERT OR IGNORE INTO retrysafe_migrations (name) VALUES ('receipt-anchor');
COMMIT;
`;

interface Row {
  body: Uint8Array | string;
}
/**
 * The stored form of one operation: the record and, from a format 2 or 3 body, its receipts (values) and
 * their stored bytes (the next write copies them); from a format 0/1 body, the receipts' JSON lines
 * as stored (parsed when asked for, as before).
 */
interface Stored {
  readonly record: OperationRecord;
  readonly receipts: readonly Receipt[] | null;
  readonly prior: StoredReceipts | null;
  readonly lines: readonly string[];
}

/**
 * The values of format 0/1 receipt lines when each is exactly what JSON.stringify writes for its value
 * (then format 2 reads them back with the same text), else null (the row keeps its text, format 1).
 */
function exactValues(lines: readonly string[]): unknown[] | null {
  const values: unknown[] = [];
  for (const line of lines) {
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      return null;
    }
    if (JSON.stringify(v) !== line) return null;
    values.push(v);
  }
  return values;
}

/**
 * A body for `record` after the receipts of `stored`, a format 0/1 row (an earlier release's), and
 * then `added` (format 2 and 3 rows and new ones: encodeKept in createSqliteLedger).
 */
function legacyBody(record: OperationRecord, stored: Stored, added: Receipt | undefined): Uint8Array {
  const more = added === undefined ? [] : [added];
  const old = exactValues(stored.lines);
  if (old !== null) return encodeBody2(record, [...old, ...more], null);
  // A row from an earlier release whose receipt text is not JSON.stringify's: keep it as it is.
  return encodeBody({ record: JSON.stringify(record), receipts: [...stored.lines, ...more.map((r) => JSON.stringify(r))] });
}

/** Thrown inside jsonCopy when a value would not read back from a body as the same value. */
const NOT_EXACT: unique symbol = Symbol('not exact');
/** How deep jsonCopy goes: records are shallow; a deeper one (or a cycle) is simply not kept. */
const COPY_DEPTH = 64;

function copyExact(v: unknown, depth: number): unknown {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      // NaN, ±Infinity read back as null and -0 as 0.
      if (!Number.isFinite(v) || Object.is(v, -0)) throw NOT_EXACT;
      return v;
    case 'object':
      break;
    default:
      throw NOT_EXACT;
  }
  if (v === null) return v;
  if (depth >= COPY_DEPTH || (v as { toJSON?: unknown }).toJSON !== undefined) throw NOT_EXACT;
  const proto = Object.getPrototypeOf(v);
  if (proto === Array.prototype) {
    const a = v as unknown[];
    const n = a.length;
    const out = new Array<unknown>(n);
    for (let i = 0; i < n; i++) {
      if (!(i in a)) throw NOT_EXACT;
      out[i] = copyExact(a[i], depth + 1);
    }
    if (Object.keys(a).length !== n) throw NOT_EXACT;
    return out;
  }
  if (proto !== Object.prototype) throw NOT_EXACT;
  const o = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  // Object.keys: the keys the encoder writes, in its order.
  for (const k of Object.keys(o)) {
    if (k === '__proto__') throw NOT_EXACT;
    out[k] = copyExact(o[k], depth + 1);
  }
  return out;
}

/**
 * A deep copy of `r` that is exactly what decoding its format 2 or 3 body gives — plain objects and dense
 * arrays of strings, finite numbers, booleans and null, with data properties only — or null when `r`
 * holds anything else (a Date, undefined, NaN, a class instance, an accessor's second answer...):
 * such a record is not kept, and its next write reads the row.
 */
export function jsonCopy(r: OperationRecord): OperationRecord | null {
  try {
    return copyRecord(r) ?? (copyExact(r, 0) as OperationRecord);
  } catch (err) {
    if (err === NOT_EXACT) return null;
    throw err;
  }
}

/** An OperationRecord's keys in the order the contract's transitions write them. */
const RECORD_KEYS = [
  'businessOperationId', 'provider', 'operation', 'intentFingerprint', 'paramsFingerprint', 'params', 'providerKey', 'state', 'fence', 'leaseOwner', 'leaseExpiresAt',
  'updatedAt', 'createdAt', 'firstDispatchedAt', 'attemptCount', 'lastOutcome', 'result', 'providerRef', 'statusRef', 'handoff', 'resolution', 'receiptChain',
] as const satisfies ReadonlyArray<keyof OperationRecord>;
/** copyExact of one value inside a record (strings, the commonest, as they are). */
const exactIn = (v: unknown): unknown => (typeof v === 'string' ? v : copyExact(v, 1));

/**
 * copyExact of a record with exactly the keys the transitions write, in their order (every record the
 * ledger stores, in practice), built as one object literal: the generic copy's key-by-key stores on a
 * new object are megamorphic (~5k instructions per claim). Undefined for any other object, which takes
 * the generic copy (the same answer, slower). Reads each property once, in order, as copyExact does.
 */
function copyRecord(r: OperationRecord): OperationRecord | undefined {
  if (Object.getPrototypeOf(r) !== Object.prototype || (r as { toJSON?: unknown }).toJSON !== undefined) return undefined;
  // for-in: own enumerable keys in order, then inherited ones (none, or this is not taken).
  let i = 0;
  for (const k in r) if (k !== RECORD_KEYS[i++]) return undefined;
  if (i !== RECORD_KEYS.length) return undefined;
  return {
    businessOperationId: exactIn(r.businessOperationId),
    provider: exactIn(r.provider),
    operation: exactIn(r.operation),
    intentFingerprint: exactIn(r.intentFingerprint),
    paramsFingerprint: exactIn(r.paramsFingerprint),
    params: exactIn(r.params),
    providerKey: exactIn(r.providerKey),
    state: exactIn(r.state),
    fence: exactIn(r.fence),
    leaseOwner: exactIn(r.leaseOwner),
    leaseExpiresAt: exactIn(r.leaseExpiresAt),
    updatedAt: exactIn(r.updatedAt),
    createdAt: exactIn(r.createdAt),
    firstDispatchedAt: exactIn(r.firstDispatchedAt),
    attemptCount: exactIn(r.attemptCount),
    lastOutcome: exactIn(r.lastOutcome),
    result: exactIn(r.result),
    providerRef: exactIn(r.providerRef),
    statusRef: exactIn(r.statusRef),
    handoff: exactIn(r.handoff),
    resolution: exactIn(r.resolution),
    receiptChain: exactIn(r.receiptChain),
  } as OperationRecord;
}

/**
 * What this connection last stored for an open operation, while it is kept (docs/decisions/
 * 2026-12-01-sqlite-known-rows.md): the body's bytes, its record (a copy nobody else holds, equal to
 * the body's decoded record), its receipts' stored form and last seq. The next fenced write computes
 * on these and writes only `WHERE body = <these bytes>`: any other write to the row since (another
 * process, another connection, an operator) leaves no row matching, and the write then reads the row
 * as always, in the same transaction.
 */
interface Known {
  readonly body: Uint8Array;
  readonly record: OperationRecord;
  readonly prior: StoredReceipts;
  readonly lastSeq: number;
}
/** Open operations kept per ledger (a runner has a few in flight; more only cost a read each). */
const KNOWN_MAX = 256;

const PRUNE_BATCH = 500;

/** What one attempt of a transaction answers when the write lock was busy: nothing written (see tx). */
const BUSY: unique symbol = Symbol('busy');

/**
 * A deferred write's safety level, and back (see deferrableWrites). Run through exec: SQLite prepares a
 * PRAGMA again on every run anyway, and a prepared statement's run() builds a result object exec() does not.
 */
const SYNC_NORMAL = 'PRAGMA synchronous = NORMAL';
const SYNC_FULL = 'PRAGMA synchronous = FULL';

/**
 * The embedded default ledger: one SQLite file in WAL mode, shared safely by several OS processes.
 * Every write is one transaction that holds the write lock from its start — `BEGIN IMMEDIATE`, or a
 * single statement on its own (the claim's INSERT of a new id, the UPDATE of a row this connection
 * knows) — so claims from separate processes are serialised and exactly one gets the lease;
 * `dispatched` is committed before the runner calls the provider. A fenced write reads the row (or
 * writes only if the row still holds the bytes this connection stored), checks the fencing token and
 * applies the same transition rules as every ledger (transitions.ts) inside that transaction; a receipt
 * given with a state goes in the same row write.
 */
export function createSqliteLedger(options: SqliteLedgerOptions): SqliteLedger {
  if (typeof options?.path !== 'string' || options.path.length === 0) throw new RunnerConfigurationError('ledger.path', 'createSqliteLedger needs { path }');
  const busy = options.busyTimeoutMs ?? 10_000;
  if (!Number.isFinite(busy) || busy < 0) throw new RunnerConfigurationError('ledger.busyTimeoutMs', 'expected a number ≥ 0');
  const sync = options.synchronous ?? 'FULL';
  if (sync !== 'FULL' && sync !== 'NORMAL') throw new RunnerConfigurationError('ledger.synchronous', 'expected FULL or NORMAL');
  const deferrable = options.deferrableWrites ?? 'defer';
  if (deferrable !== 'defer' && deferrable !== 'sync') throw new RunnerConfigurationError('ledger.deferrableWrites', 'expected defer or sync');
  // Only FULL has a wait to leave out.
  const defers = sync === 'FULL' && deferrable === 'defer';
  const choice = options.driver ?? 'auto';
  if (choice !== 'auto' && choice !== 'node:sqlite' && choice !== 'better-sqlite3') {
    throw new RunnerConfigurationError('ledger.driver', 'expected auto, node:sqlite or better-sqlite3');
  }
  const found = resolveDriver(choice);
  if ('reasons' in found) {
    throw new RunnerConfigurationError('ledger.driver', `no SQLite driver for the ledger here: ${found.reasons.join('; ')}`);
  }

  let db: SqliteConnection | undefined;
  try {
    db = found.open(options.path);
    // Opening is synchronous (createSqliteLedger returns the ledger): it may wait the whole busy
    // timeout for a process that is creating the schema or migrating the file. After that, a single
    // call waits at most SYNC_BUSY_MS synchronously; longer waits are asynchronous steps (tx, read).
    db.exec(`PRAGMA busy_timeout = ${Math.floor(busy)}`);
    // SQLite answers some lock conflicts at open with SQLITE_BUSY without calling the busy handler
    // (another process switching the journal mode or creating the schema): retry the idempotent setup
    // in short steps until busyTimeoutMs.
    const deadline = Date.now() + busy;
    for (let step = 1; ; step = Math.min(step * 2, SYNC_BUSY_MS)) {
      try {
        db.exec('PRAGMA journal_mode = WAL');
        db.exec(`PRAGMA synchronous = ${sync}`);
        setUp(db, options.path);
        break;
      } catch (err) {
        if (!isBusy(err) || Date.now() >= deadline) throw err;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, step);
      }
    }
    db.exec(`PRAGMA busy_timeout = ${Math.min(Math.floor(busy), SYNC_BUSY_MS)}`);
  } catch (cause) {
    // Close what was opened: a failed open must not leave its file descriptor behind.
    try {
      db?.close();
    } catch {
      /* already unusable */
    }
    if (RetrysafeError.isInstance(cause)) throw cause;
    throw new LedgerError(`cannot open SQLite ledger at ${options.path}: ${(cause as Error).message}`, { cause });
  }
  const conn: SqliteConnection = db;
  /** Prepares a statement of the open ledger; a failure (a corrupt schema) closes the file and is a LedgerError. */
  const prep = (sql: string): SqliteStatement => {
    try {
      return conn.prepare(sql);
    } catch (cause) {
      conn.close();
      throw new LedgerError(`cannot open SQLite ledger at ${options.path}: ${(cause as Error).message}`, { cause });
    }
  };

  const parse = <T>(text: string, what: string): T => {
    try {
      return JSON.parse(text) as T;
    } catch (cause) {
      throw new LedgerError(`SQLite ledger at ${options.path}: ${what} is not valid JSON (cut or corrupt): ${(cause as Error).message}`, { cause });
    }
  };
  const lines = (row: Row): { record: string; receipts: readonly string[] } => {
    try {
      return decodeBody(row.body);
    } catch (cause) {
      throw corrupt(cause);
    }
  };
  const corrupt = (cause: unknown) =>
    new LedgerError(`SQLite ledger at ${options.path}: a stored operation cannot be read (cut or corrupt): ${(cause as Error).message}`, { cause });
  /** A row's operation: formats 2 and 3 decoded, formats 0/1 through their JSON lines. */
  const decodeRow = (row: Row): Stored => {
    const body = row.body;
    if (typeof body !== 'string' && (body[0] === BODY_BINARY_3 || body[0] === BODY_BINARY_2)) {
      let d;
      try {
        d = decodeBinaryBody(body);
      } catch (cause) {
        throw corrupt(cause);
      }
      return { record: d.record as OperationRecord, receipts: d.receipts as Receipt[], prior: d.stored, lines: [] };
    }
    const l = lines(row);
    return { record: parse<OperationRecord>(l.record, 'a stored record'), receipts: null, prior: null, lines: l.receipts };
  };
  const receiptsOf = (stored: Stored): readonly Receipt[] =>
    stored.receipts ?? stored.lines.map((line) => parse<Receipt>(line, `a receipt of ${stored.record.businessOperationId}`));
  const parseRecord = (row: Row): OperationRecord => decodeRow(row).record;
  /**
   * Runs a read; a lock (rare in WAL mode: recovery, a truncating checkpoint) is waited for in short
   * asynchronous steps; library errors (a corrupt file, a closed database) become LedgerError.
   */
  const guard = async <T>(what: string, fn: () => T): Promise<T> => {
    const deadline = Date.now() + busy;
    for (let step = 1, waited = false; ; step = Math.min(step * 2, SYNC_BUSY_MS), waited = true) {
      try {
        return fn();
      } catch (err) {
        if (RetrysafeError.isInstance(err)) throw err;
        if (!isBusy(err) || (waited && Date.now() >= deadline)) throw new LedgerError(`SQLite ledger ${what} failed: ${(err as Error).message}`, { cause: err });
      }
      await sleep(Math.max(0, Math.min(step, deadline - Date.now())));
    }
  };

  // Every statement is prepared once; writes bind positional parameters.
  const selectOne = prep('SELECT body FROM retrysafe_operations WHERE id = ?');
  // New rows: created_at is bound twice (the column, then the rowid's bucket: NEW_ROWID's parameter comes last).
  const insertRow = prep(
    `INSERT INTO retrysafe_operations (id, provider, operation, state, fence, lease_expires_at, created_at, updated_at, body, rowid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ${NEW_ROWID})`,
  );
  // A claim tries the new row first: its unique index answers "new id?" in the INSERT (no SELECT before it).
  // It takes the rowid this connection guesses is free in its bucket (see guessRowid), and does nothing on
  // any uniqueness conflict: the id exists, or another connection's row holds the guess. Either way the
  // claim then reads the row and goes on as for an existing id (a new one is inserted by insertRow).
  const insertGuess = prep(
    `INSERT INTO retrysafe_operations (id, provider, operation, state, fence, lease_expires_at, created_at, updated_at, body, rowid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  );
  const updateRow = prep(`UPDATE retrysafe_operations SET state = ?, fence = ?, lease_expires_at = ?, updated_at = ?, body = ? WHERE id = ?`);
  // The write on what this connection knows of a row: only if the row still holds those bytes.
  const updateKnown = prep(`UPDATE retrysafe_operations SET state = ?, fence = ?, lease_expires_at = ?, updated_at = ?, body = ? WHERE id = ? AND body = ?`);
  const lists = new Map<string, SqliteStatement>();
  const listed = (sql: string): SqliteStatement => {
    let st = lists.get(sql);
    if (!st) lists.set(sql, (st = conn.prepare(sql)));
    return st;
  };

  /**
   * The rowid this connection's next claim tries: its bucket, then a number of this connection's (from a
   * random start below 2^19, one up per claim in the same millisecond). Any free rowid of the bucket keeps
   * the layout's rule; the guess saves the INSERT the search for one (~6k of SQLite's instructions per
   * claim, callgrind). Another connection's row in that slot (two connections' counts meeting in one
   * millisecond) sends the claim to its read and then to insertRow (NEW_ROWID's search).
   */
  let guessBucket = -1;
  let guessNext = 0;
  const guessStart = Math.floor(Math.random() * GUESS_STARTS);
  const guessRowid = (createdAt: number): bigint => {
    const b = bucketOf(createdAt);
    if (b !== guessBucket || guessNext >= BUCKET_SIZE) (guessBucket = b), (guessNext = guessStart);
    return BigInt(b) * BIG_BUCKET_SIZE + BigInt(guessNext++);
  };

  const read = (id: string): Stored | null => {
    const row = selectOne.get(id) as Row | undefined;
    return row ? decodeRow(row) : null;
  };

  /** Rows this connection stored, by id (insertion order: the first is the oldest; see Known). */
  const known = new Map<string, Known>();
  /**
   * The row the running transaction stored (a transaction writes at most one: through `write`, the
   * claim's INSERT or a knownWrite) and what to keep of it: applied to `known` only once it committed (see tx).
   */
  let pendingId: string | null = null;
  let pendingKept: Known | null = null;
  const stage = (id: string, kept: Known | null) => ((pendingId = id), (pendingKept = kept));
  const keep = () => {
    if (pendingId === null) return;
    known.delete(pendingId);
    if (pendingKept !== null) {
      if (known.size >= KNOWN_MAX) known.delete(known.keys().next().value!);
      known.set(pendingId, pendingKept);
    }
    pendingId = pendingKept = null;
  };
  /**
   * The body to store for `r` after the stored receipts (`prior`; null: a new row) and `added`, and what
   * to keep of it: an open operation with no receipt added whose record copies exactly. The copy is what
   * is encoded, so the kept record is the body's. New rows and rows written in format 3 get format 3
   * (the record's head is copied when `r` keeps the stored one's values: encodeBody3); a row stored in
   * format 2 stays format 2 (its receipts' bytes copied). Null when the head changed and the stored
   * receipts' values (`priorValues`) are not at hand: the caller reads the row.
   */
  const encodeKept = (
    r: OperationRecord,
    prior: StoredReceipts | null,
    seq: number,
    added: Receipt | undefined,
    priorValues: readonly Receipt[] | null,
  ): { body: Uint8Array; kept: Known | null } | null => {
    const copy = added === undefined && !isTerminal(r) ? jsonCopy(r) : null;
    const more = added === undefined ? [] : [added];
    if (prior !== null && prior.head === null) {
      const body = encodeBody2(copy ?? r, more, prior);
      return { body, kept: copy === null ? null : { body, record: copy, prior, lastSeq: seq } };
    }
    // The stored part is built only for a record that is kept.
    const out = encodeBody3(copy ?? r, more, prior, priorValues, r, copy !== null);
    if (out === null) return null;
    return { body: out.body, kept: copy === null ? null : { body: out.body, record: copy, prior: out.stored!, lastSeq: seq } };
  };
  /** Stores `r` (replacing the row of `stored`, or new) with the receipts of `stored` and then `added`. */
  const write = (r: OperationRecord, stored: Stored | null, added?: Receipt): OperationRecord => {
    let body: Uint8Array;
    let kept: Known | null = null;
    // The stored receipts' values are at hand (decoded), so the encode always answers.
    if (stored === null || stored.prior !== null) ({ body, kept } = encodeKept(r, stored?.prior ?? null, stored === null ? 0 : lastSeq(stored), added, stored?.receipts ?? null)!);
    else body = legacyBody(r, stored, added);
    if (stored !== null) updateRow.run(r.state, r.fence, r.leaseExpiresAt, r.updatedAt, body, r.businessOperationId);
    else insertRow.run(r.businessOperationId, r.provider, r.operation, r.state, r.fence, r.leaseExpiresAt, r.createdAt, r.updatedAt, body, r.createdAt);
    stage(r.businessOperationId, kept);
    return r;
  };
  /**
   * A fenced write on the known row of `ref`, computed: the same rules on the kept record, the body to
   * store and the UPDATE that stores it only if the row still holds the kept bytes (run by `fenced`).
   * Undefined when it cannot answer — no row kept, a rule refused or the write is a no-op (the row
   * must say which: the caller reads it).
   */
  const knownWrite = (ref: Fenced, next: (current: OperationRecord) => OperationRecord, receipt: Receipt | undefined): { record: OperationRecord; run: () => boolean } | undefined => {
    const id = ref.businessOperationId;
    const k = known.get(id);
    if (k === undefined) return undefined;
    let r: OperationRecord;
    let out: { body: Uint8Array; kept: Known | null } | null;
    try {
      const current = checkFence(k.record, ref);
      r = next(current);
      if (r === current && receipt === undefined) return undefined;
      if (receipt !== undefined) (checkReceipt(ref, receipt, k.lastSeq), (r = chainedTransition(r, receipt)));
      out = encodeKept(r, k.prior, receipt?.seq ?? k.lastSeq, receipt, null);
    } catch {
      return undefined;
    }
    // The head changed and the stored receipts are not re-encoded without their values: the row is read.
    if (out === null) return undefined;
    const o = out;
    const record = r;
    return {
      record,
      run: () => {
        const res = updateKnown.run(record.state, record.fence, record.leaseExpiresAt, record.updatedAt, o.body, id, k.body) as { changes?: number | bigint };
        if (Number(res.changes) !== 1) return false;
        stage(id, o.kept);
        return true;
      },
    };
  };
  const lastSeq = (stored: Stored): number => {
    if (stored.receipts !== null) return stored.receipts[stored.receipts.length - 1]?.seq ?? 0;
    const last = stored.lines[stored.lines.length - 1];
    return last === undefined ? 0 : parse<Receipt>(last, `a receipt of ${stored.record.businessOperationId}`).seq;
  };

  /**
   * Runs `fn` in one BEGIN IMMEDIATE transaction. BEGIN IMMEDIATE takes the write lock up front, so
   * two processes never both read "free" and both claim. While another process holds the lock, wait
   * in short asynchronous steps (up to busyTimeoutMs), never in one long synchronous wait that would
   * stall this process's event loop (other operations' lease heartbeats). BEGIN, `fn` and COMMIT run
   * in one synchronous stretch, so nothing else on this connection runs inside the transaction.
   * Library errors become LedgerError, retrysafe errors pass through; any failure rolls back.
   *
   * `alone`: `fn` runs exactly one write statement, which is its own transaction (SQLite's autocommit:
   * the statement takes the write lock when it starts and commits when it ends, or writes nothing) —
   * the claim's INSERT of a new id and the UPDATE of a known row. The same waits and deferral, without
   * parsing BEGIN IMMEDIATE and COMMIT (~19k instructions per clean operation, callgrind). A busy
   * statement wrote nothing and is run again after the wait, as a busy BEGIN is.
   */
  async function tx<T>(what: string, fn: () => T, deferred = false, alone = false): Promise<T> {
    return txNow(what, fn, deferred, alone);
  }
  /**
   * tx with its first attempt run synchronously: its answer itself when that attempt took the lock (the
   * common case: no promise of tx's own and no await at the caller, ~1k instructions per write), else
   * the promise of the waits and attempts that follow. Errors are thrown, as tx rejects with them.
   */
  function txNow<T>(what: string, fn: () => T, deferred = false, alone = false): T | Promise<T> {
    const deadline = Date.now() + busy;
    // Deferred: this commit at NORMAL (see deferrableWrites). Set and restored in the same synchronous
    // stretch as the transaction, so no other transaction of this connection ever runs at NORMAL.
    const relax = deferred && defers;
    const out = attempt(what, fn, relax, alone, false, deadline);
    return out !== BUSY ? out : txWaits(what, fn, relax, alone, deadline);
  }
  /** tx after a first attempt found the lock busy: short asynchronous waits, each followed by an attempt. */
  async function txWaits<T>(what: string, fn: () => T, relax: boolean, alone: boolean, deadline: number): Promise<T> {
    // At least one asynchronous step before giving up, even when one attempt's own short synchronous
    // wait already used up a small busy timeout.
    for (let step = 1; ; step = Math.min(step * 2, SYNC_BUSY_MS)) {
      await sleep(Math.max(0, Math.min(step, deadline - Date.now())));
      const out = attempt(what, fn, relax, alone, true, deadline);
      if (out !== BUSY) return out;
    }
  }
  /**
   * One attempt of a transaction: its answer, or BUSY when another connection held the lock before this
   * one took it (nothing written: the caller waits and tries again). Any other failure is thrown: a
   * retrysafe error as it is, a library error as a LedgerError (and a busy lock once `waited` past the deadline).
   */
  function attempt<T>(what: string, fn: () => T, relax: boolean, alone: boolean, waited: boolean, deadline: number): T | typeof BUSY {
    // Whether this attempt holds the write lock (BEGIN IMMEDIATE returned): from then on a failure rolls back.
    let locked = false;
    let out: T;
    try {
      // The safety level may not change inside a transaction: set before it, restored after it.
      if (relax) conn.exec(SYNC_NORMAL);
      pendingId = pendingKept = null;
      if (!alone) (conn.exec('BEGIN IMMEDIATE'), (locked = true));
      out = fn();
      if (!alone) conn.exec('COMMIT');
      keep();
    } catch (err) {
      pendingId = pendingKept = null;
      if (locked) {
        try {
          conn.exec('ROLLBACK');
        } catch {
          /* no transaction left to roll back */
        }
      }
      if (relax) restoreSync(what, err);
      if (RetrysafeError.isInstance(err)) throw err;
      // Busy before the lock was taken (BEGIN, or the lone statement): nothing written, wait and try again.
      if (locked || !isBusy(err) || (waited && Date.now() >= deadline)) {
        throw new LedgerError(`SQLite ledger ${what} failed: ${(err as Error).message}`, { cause: err });
      }
      return BUSY;
    }
    if (relax) restoreSync(what, null);
    return out;
  }
  /**
   * Back to FULL after a deferred write. If even that fails the connection cannot be trusted to sync:
   * closed. `first`: the error that ended the transaction (null: it committed), which stays the cause
   * and leads the message, so a broken connection is reported by what broke it, not by the restore.
   */
  function restoreSync(what: string, first: unknown): void {
    try {
      conn.exec(SYNC_FULL);
    } catch (restore) {
      try {
        conn.close();
      } catch {
        /* already unusable */
      }
      const how = first === null ? 'the write is committed' : `nothing written: ${(first as Error)?.message ?? String(first)}`;
      throw new LedgerError(
        `SQLite ledger ${what} at ${options.path} (${how}); then synchronous = FULL could not be restored (${(restore as Error)?.message ?? String(restore)}): the ledger is closed`,
        { cause: first ?? restore },
      );
    }
  }

  /**
   * A fenced write: inside one transaction, read the row, check the token, apply the ledger's
   * transition rule (transitions.ts, the same as every ledger's) and store the result with the
   * receipt, if one is given, appended to the body. A refused write (or receipt) writes nothing.
   * `next` returning the record unchanged (a no-op) writes nothing either.
   */
  async function fenced(ref: Fenced, what: string, next: (current: OperationRecord) => OperationRecord, receipt?: Receipt, deferred = false): Promise<OperationRecord> {
    // The known row first: one UPDATE, its own transaction. Any other write to the row since leaves it
    // nothing to change; then (and when it cannot answer) the row is read in a transaction of its own.
    const fast = knownWrite(ref, next, receipt);
    if (fast !== undefined) {
      const done = txNow(what, fast.run, deferred, true);
      if (done === true || (done !== false && (await done))) return fast.record;
      // Written by someone else since: forget it now (a stale entry is only ever a missed shortcut).
      known.delete(ref.businessOperationId);
    }
    return tx(what, () => {
      const stored = read(ref.businessOperationId);
      const current = checkFence(stored?.record ?? null, ref);
      const updated = next(current);
      if (receipt === undefined) return updated === current ? current : write(updated, stored);
      checkReceipt(ref, receipt, lastSeq(stored!));
      return write(chainedTransition(updated, receipt), stored, receipt);
    }, deferred);
  }

  return {
    driver: found.driver,
    capabilities: { claimDispatch: true, receiptWithState: true },
    async claim(input: ClaimInput): Promise<ClaimResult> {
      // A new id (the common case): claimTransition's record for "no row", inserted unless the id has a
      // row, by one INSERT that is its own transaction. Anything else (the id exists, the guessed rowid is
      // taken; the input or its params throw) takes the path that reads the row first, in a transaction,
      // so its answer or error is exactly that path's.
      let fresh: ReturnType<typeof claimTransition> | undefined;
      let out: { body: Uint8Array; kept: Known | null } | undefined;
      try {
        fresh = claimTransition(null, input);
        out = encodeKept(fresh.write!, null, 0, undefined, null) ?? undefined;
      } catch {
        fresh = undefined;
      }
      if (fresh !== undefined && out !== undefined) {
        const r = fresh.write!;
        const { body, kept } = out;
        const inserted = txNow(
          'claim',
          () => {
            const res = insertGuess.run(r.businessOperationId, r.provider, r.operation, r.state, r.fence, r.leaseExpiresAt, r.createdAt, r.updatedAt, body, guessRowid(r.createdAt)) as { changes?: number | bigint };
            if (Number(res.changes) !== 1) return false;
            stage(r.businessOperationId, kept);
            return true;
          },
          false,
          true,
        );
        if (inserted === true || (inserted !== false && (await inserted))) return fresh.result;
      }
      return tx('claim', () => {
        const stored = read(input.businessOperationId);
        const { result, write: w } = claimTransition(stored?.record ?? null, input);
        if (w) write(w, stored);
        return result;
      });
    },
    async renewLease(ref, leaseMs, now) {
      // A terminal operation holds no lease: renewing it is a no-op (renewTransition returns it unchanged).
      await fenced(ref, 'renewLease', (r) => renewTransition(r, ref, leaseMs, now));
    },
    async markDispatched(ref, now) {
      return fenced(ref, 'markDispatched', (r) => dispatchedTransition(r, now));
    },
    async setState(ref, patch: StatePatch) {
      // setStateTransition reads the patch's own fields only (not its receipt or durability): no copy without them.
      return fenced(ref, 'setState', (r) => setStateTransition(r, patch), patch.receipt, patch.durability === 'deferrable');
    },
    async handOff(ref, packet, now, receipt?: Receipt) {
      return fenced(ref, 'handOff', (r) => handOffTransition(r, packet, now), receipt);
    },
    async appendReceipt(ref, receipt: Receipt) {
      await fenced(ref, 'appendReceipt', (r) => r, receipt);
    },
    async release(ref) {
      await fenced(ref, 'release', (r) => releaseTransition(r));
    },
    async resolve(id, resolution, now) {
      return tx('resolve', () => {
        const stored = read(id);
        // resolveTransition refuses a missing operation, so `stored` is there when it returns.
        return write(resolveTransition(stored?.record ?? null, id, resolution, now), stored);
      });
    },
    async get(id: BusinessOperationId) {
      return guard('get', () => read(id)?.record ?? null);
    },
    async list(filter: ListFilter = {}) {
      const where: string[] = [];
      const args: unknown[] = [];
      if (filter.states) {
        if (filter.states.length === 0) return [];
        // Only open (and handed-off) states: the same term as the partial index's, so the index serves it.
        if (filter.states.every((st) => !(PRUNABLE_STATES as readonly string[]).includes(st))) where.push(OPEN_STATES_SQL);
        where.push(`state IN (${filter.states.map(() => '?').join(',')})`);
        args.push(...filter.states);
      }
      if (filter.provider) (where.push('provider = ?'), args.push(filter.provider));
      if (filter.operation) (where.push('operation = ?'), args.push(filter.operation));
      const filtered = where.length ? `WHERE ${where.join(' AND ')}` : '';
      const limit = filter.limit;
      // The table is in creation order by whole milliseconds (see the layout): read it by rowid, then order
      // each millisecond's rows by created_at and id. With a limit, the last millisecond read is read whole
      // (it may go on past the limit): its order, not the rowid order within it, decides which rows are in.
      const sql = `SELECT rowid >> ${BUCKET_BITS} AS b, body FROM retrysafe_operations ${filtered} ORDER BY rowid${filter.newestFirst ? ' DESC' : ''}${limit !== undefined ? ' LIMIT ?' : ''}`;
      const bucketSqlText = `SELECT body FROM retrysafe_operations ${filtered ? `${filtered} AND` : 'WHERE'} rowid >= CAST(? AS INTEGER) * ${BUCKET_SIZE} AND rowid < (CAST(? AS INTEGER) + 1) * ${BUCKET_SIZE}`;
      return guard('list', () => {
        const rows = listed(sql).all(...args, ...(limit !== undefined ? [limit] : [])) as Array<Row & { b: number }>;
        let records: OperationRecord[];
        if (limit !== undefined && limit > 0 && rows.length === limit) {
          const last = rows[rows.length - 1]!.b;
          let cut = rows.length;
          while (cut > 0 && rows[cut - 1]!.b === last) cut--;
          records = rows.slice(0, cut).map(parseRecord);
          for (const row of listed(bucketSqlText).all(...args, last, last) as Row[]) records.push(parseRecord(row));
        } else records = rows.map(parseRecord);
        const dir = filter.newestFirst ? -1 : 1;
        records.sort((x, y) => dir * (x.createdAt - y.createdAt || (x.businessOperationId < y.businessOperationId ? -1 : x.businessOperationId > y.businessOperationId ? 1 : 0)));
        return limit !== undefined && records.length > limit ? records.slice(0, limit) : records;
      });
    },
    async receipts(id) {
      return guard('receipts', () => {
        const stored = read(id);
        return stored ? [...receiptsOf(stored)] : [];
      });
    },
    async recoverCandidates(now, limit) {
      const states = RECOVERABLE_STATES;
      const sql = `SELECT body FROM retrysafe_operations WHERE ${OPEN_STATES_SQL} AND state IN (${states.map(() => '?').join(',')})
        AND (lease_expires_at IS NULL OR lease_expires_at <= ?) ORDER BY updated_at${limit !== undefined ? ' LIMIT ?' : ''}`;
      const args: unknown[] = [...states, now];
      if (limit !== undefined) args.push(limit);
      return (await guard('recoverCandidates', () => (listed(sql).all(...args) as Row[]).map(parseRecord))).filter((r) => r.leaseOwner === null || r.leaseExpiresAt === null || r.leaseExpiresAt <= now);
    },
    async prune(options: PruneOptions): Promise<PruneReport> {
      const states = pruneStates(options);
      const batch = options.batchSize ?? PRUNE_BATCH;
      const byState: Partial<Record<OperationState, number>> = {};
      let pruned = 0;
      // created_at <= updated_at and the rowid is in creation order (see the layout), so the rows old enough
      // are all below the rowids of the bucket after the cutoff's: the walk reads old rows only, never the whole
      // table. The state and updated_at are checked again in the DELETE (a rejected operation may be superseded meanwhile).
      const inStates = states.map(() => '?').join(',');
      // Keyset pages by rowid, carried as text (a rowid is beyond 2^53: see the layout).
      const pick = listed(
        `SELECT CAST(rowid AS TEXT) AS n, body FROM retrysafe_operations WHERE rowid < (CAST(? AS INTEGER) + 1) * ${BUCKET_SIZE} AND rowid > CAST(? AS INTEGER) AND created_at < ? AND updated_at < ? AND state IN (${inStates}) ORDER BY rowid LIMIT ?`,
      );
      const del = listed(`DELETE FROM retrysafe_operations WHERE rowid = CAST(? AS INTEGER) AND updated_at < ? AND state IN (${inStates})`);
      const lastBucket = bucketOf(options.before);
      for (let after = '-1'; ; ) {
        const rows = await guard('prune', () => pick.all(lastBucket, after, options.before, options.before, ...states, batch) as Array<Row & { n: string }>);
        if (rows.length === 0) break;
        after = rows[rows.length - 1]!.n;
        const found = rows.map((row) => ({ n: row.n, ...decodeRow(row) }));
        if (options.dryRun) {
          for (const f of found) (pruned++, (byState[f.record.state] = (byState[f.record.state] ?? 0) + 1));
          continue;
        }
        if (options.onPrune) for (const f of found) await options.onPrune(f.record, receiptsOf(f));
        await tx('prune', () => {
          for (const f of found) {
            const changes = Number((del.run(f.n, options.before, ...states) as { changes?: number | bigint }).changes ?? 0);
            if (changes > 0) (pruned++, (byState[f.record.state] = (byState[f.record.state] ?? 0) + 1));
          }
        });
      }
      return { pruned, byState, dryRun: options.dryRun === true };
    },
    async close() {
      known.clear();
      if (conn.open) conn.close();
    },
  };
}

/**
 * Brings the file to layout 6: creates it when new; a layout 5 file only gets the number; renumbers a layout 3/4 file's rows into creation
 * order (bodies unchanged) and drops its `created_at` index; converts a layout 0/2 file (record JSON text,
 * receipts in their own table) first, keeping each record's and receipt's JSON text as stored (format 2
 * reads back the same text; a row it would not is kept as text, format 1). All in one transaction, under
 * BEGIN IMMEDIATE, re-checked inside, so concurrent openers convert once.
 * Refuses a file from a newer layout rather than guess at it.
 */
function setUp(db: SqliteConnection, path: string): void {
  const version = () => Number((db.prepare('PRAGMA user_version').get() as { user_version?: number } | undefined)?.user_version ?? 0);
  const columns = () => (db.prepare(`PRAGMA table_info(retrysafe_operations)`).all() as Array<{ name: string }>).map((c) => c.name);
  const v = version();
  if (v > SQLITE_LAYOUT_VERSION) throw new LedgerError(`cannot open SQLite ledger at ${path}: its layout ${v} is newer than this @retrysafe/core knows (${SQLITE_LAYOUT_VERSION}): upgrade`);
  // The open-rows index as this release writes it (the index of an earlier release has the IN-list term).
  const openIndexCurrent = () =>
    ((db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'retrysafe_operations_open'`).get() as { sql?: string } | undefined)?.sql ?? '').includes(OPEN_STATES_SQL);
  if (v === SQLITE_LAYOUT_VERSION && columns().includes('body') && openIndexCurrent()) return;
  const old = columns().includes('record');
  // Layout 0 → 2 first (its own transaction, recorded): anchors rows written before receipt chains were anchored.
  if (old && v < 2) db.exec(ANCHOR_MIGRATION);
  db.exec('BEGIN IMMEDIATE');
  try {
    if (version() < SQLITE_LAYOUT_VERSION || !columns().includes('body')) {
      if (columns().includes('record')) convertLayout2(db);
      // Layout 3/4 (or the table convertLayout2 just wrote): rowids into creation order. Layout 5's already are.
      if (columns().includes('body') && version() < ROWIDS_IN_ORDER_LAYOUT) renumber(db);
      db.exec(SCHEMA_V5);
      db.exec('DROP INDEX IF EXISTS retrysafe_operations_created');
      db.exec(`INSERT OR IGNORE INTO retrysafe_migrations (name) VALUES ('compact-layout')`);
      db.exec(`INSERT OR IGNORE INTO retrysafe_migrations (name) VALUES ('body-format-2')`);
      db.exec(`INSERT OR IGNORE INTO retrysafe_migrations (name) VALUES ('rowid-creation-order')`);
      db.exec(`INSERT OR IGNORE INTO retrysafe_migrations (name) VALUES ('body-format-3')`);
      db.exec(`PRAGMA user_version = ${SQLITE_LAYOUT_VERSION}`);
    }
    if (!openIndexCurrent()) {
      db.exec('DROP INDEX IF EXISTS retrysafe_operations_open');
      db.exec(SCHEMA_V5);
    }
    db.exec('COMMIT');
  } catch (err) {
    try {
      db.exec('ROLLBACK');
    } catch {
      /* nothing to roll back */
    }
    throw err;
  }
}

/**
 * Inside the caller's transaction: the layout 3 table rebuilt with each row's rowid in creation order
 * (its bucket, then its old rowid: the order it was inserted in). Refuses (nothing changed) a file with
 * more rows in one millisecond than a bucket holds.
 */
function renumber(db: SqliteConnection): void {
  const bucket = bucketSql('created_at');
  const fullest = db.prepare(`SELECT count(*) AS n FROM retrysafe_operations GROUP BY ${bucket} ORDER BY n DESC LIMIT 1`).get() as { n?: number } | undefined;
  if ((fullest?.n ?? 0) > BUCKET_SIZE) throw new LedgerError(`cannot bring the SQLite ledger to layout ${SQLITE_LAYOUT_VERSION}: more than ${BUCKET_SIZE} operations were created in one millisecond`);
  db.exec(TABLE_V3.replaceAll('retrysafe_operations', 'retrysafe_operations_v5'));
  const cols = 'id, provider, operation, state, fence, lease_expires_at, created_at, updated_at, body';
  db.exec(
    `INSERT INTO retrysafe_operations_v5 (rowid, ${cols})
     SELECT b * ${BUCKET_SIZE} + row_number() OVER (PARTITION BY b ORDER BY n) - 1, ${cols}
     FROM (SELECT ${bucket} AS b, rowid AS n, ${cols} FROM retrysafe_operations)`,
  );
  db.exec('DROP TABLE retrysafe_operations');
  db.exec('ALTER TABLE retrysafe_operations_v5 RENAME TO retrysafe_operations');
}

/** Inside the caller's transaction: layout 2 tables → layout 3 table, row by row in rowid pages. */
function convertLayout2(db: SqliteConnection): void {
  db.exec(TABLE_V3.replaceAll('retrysafe_operations', 'retrysafe_operations_v3'));
  const receiptsTable = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'retrysafe_receipts'`).get() as { name?: string } | undefined)?.name;
  const page = db.prepare(`SELECT rowid AS n, id, provider, operation, state, fence, lease_expires_at, created_at, updated_at, record FROM retrysafe_operations WHERE rowid > ? ORDER BY rowid LIMIT 500`);
  const receiptsOf = receiptsTable ? db.prepare('SELECT receipt FROM retrysafe_receipts WHERE id = ? ORDER BY seq') : null;
  const insert = db.prepare(
    `INSERT INTO retrysafe_operations_v3 (id, provider, operation, state, fence, lease_expires_at, created_at, updated_at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  type OldRow = { n: number; id: string; provider: string; operation: string; state: string; fence: number; lease_expires_at: number | null; created_at: number; updated_at: number; record: string };
  for (let after = 0; ; ) {
    const rows = page.all(after) as OldRow[];
    if (rows.length === 0) break;
    for (const r of rows) {
      const receipts = receiptsOf ? (receiptsOf.all(r.id) as Array<{ receipt: string }>).map((x) => x.receipt) : [];
      // Format 2 when every line reads back with the same text; else the lines as they are (format 1).
      const values = exactValues([r.record, ...receipts]);
      const body = values ? encodeBody2(values[0], values.slice(1)) : encodeBody({ record: r.record, receipts });
      insert.run(r.id, r.provider, r.operation, r.state, r.fence, r.lease_expires_at, r.created_at, r.updated_at, body);
    }
    after = rows[rows.length - 1]!.n;
  }
  if (receiptsTable) db.exec('DROP TABLE retrysafe_receipts');
  db.exec('DROP TABLE retrysafe_operations');
  db.exec('ALTER TABLE retrysafe_operations_v3 RENAME TO retrysafe_operations');
}
