import { setTimeout as sleep } from 'node:timers/promises';
import {
  InvalidStateError,
  LeaseLostError,
  LedgerError,
  RECOVERABLE_STATES,
  RetrysafeError,
  TERMINAL_STATES,
  type BusinessOperationId,
  type ClaimInput,
  type ClaimResult,
  type Fenced,
  type Ledger,
  type ListFilter,
  type OperationRecord,
  type Receipt,
  type StatePatch,
} from '@retrysafe/contract';
import { RunnerConfigurationError } from '../errors/runner-configuration-error.js';
import { checkFence, checkReceipt, claimTransition, resolveTransition } from './transitions.js';
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

const SCHEMA = `
CREATE TABLE IF NOT EXISTS retrysafe_operations (
  id TEXT PRIMARY KEY,
  provider TEXT NOT NULL,
  operation TEXT NOT NULL,
  state TEXT NOT NULL,
  fence INTEGER NOT NULL,
  lease_expires_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS retrysafe_operations_state ON retrysafe_operations (state, updated_at);
CREATE TABLE IF NOT EXISTS retrysafe_receipts (
  id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  receipt TEXT NOT NULL,
  PRIMARY KEY (id, seq)
);
`;

/**
 * Rows written before receipt-chain anchoring get the anchor of the receipts they hold now (issue 18):
 * from here on every receipt write moves it. Runs once per file (recorded in retrysafe_migrations).
 */
/** The file layout this code writes: 0 = the first release, 2 = rows anchor their receipt chain. */
const SQLITE_LAYOUT_VERSION = 2;
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
  record: string;
}

const sqlList = (states: readonly string[]) => states.map((st) => `'${st}'`).join(', ');
const NOT_TERMINAL = `state NOT IN (${sqlList(TERMINAL_STATES)})`;
const HANDOFF_BLOCKED: readonly string[] = ['succeeded', 'abandoned', 'handed-off'];
/** JSON text of a value, for `json(?)` inside `json_set` (exact for numbers, strings, objects, null). */
const j = (v: unknown): string => (v === undefined ? 'null' : JSON.stringify(v));
/** Why a guarded write matched no row (the fence was right): an error, `'no-op'`, or null (not explained). */
type Blocked = (r: OperationRecord) => Error | 'no-op' | null;

/**
 * The embedded default ledger: one SQLite file in WAL mode, shared safely by several OS processes.
 * Every write runs in `BEGIN IMMEDIATE`, so claims from separate processes are serialised and exactly
 * one gets the lease; `dispatched` is committed before the runner calls the provider. Fenced writes are
 * single UPDATEs guarded by the fencing token (and the state they may leave), patching the stored
 * record with `json_set` inside SQLite; a receipt given with a state goes in the same transaction.
 */
export function createSqliteLedger(options: SqliteLedgerOptions): SqliteLedger {
  if (typeof options?.path !== 'string' || options.path.length === 0) throw new RunnerConfigurationError('ledger.path', 'createSqliteLedger needs { path }');
  const busy = options.busyTimeoutMs ?? 10_000;
  if (!Number.isFinite(busy) || busy < 0) throw new RunnerConfigurationError('ledger.busyTimeoutMs', 'expected a number ≥ 0');
  const sync = options.synchronous ?? 'FULL';
  if (sync !== 'FULL' && sync !== 'NORMAL') throw new RunnerConfigurationError('ledger.synchronous', 'expected FULL or NORMAL');
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
    // timeout for a process that is creating the schema. After that, a single call waits at most
    // SYNC_BUSY_MS synchronously; longer waits are asynchronous steps (tx, read).
    db.exec(`PRAGMA busy_timeout = ${Math.floor(busy)}`);
    // SQLite answers some lock conflicts at open with SQLITE_BUSY without calling the busy handler
    // (another process switching the journal mode or creating the schema): retry the idempotent setup
    // in short steps until busyTimeoutMs.
    const deadline = Date.now() + busy;
    for (let step = 1; ; step = Math.min(step * 2, SYNC_BUSY_MS)) {
      try {
        db.exec('PRAGMA journal_mode = WAL');
        db.exec(`PRAGMA synchronous = ${sync}`);
        db.exec(SCHEMA);
        break;
      } catch (err) {
        if (!isBusy(err) || Date.now() >= deadline) throw err;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, step);
      }
    }
    // Migrations run once per file, not as a scan on every open. The file's layout version lives in
    // the header page (PRAGMA user_version), so the check reads nothing else: a file whose data pages
    // are damaged still opens, and its reads fail typed. The migration also records itself in
    // retrysafe_migrations, so a second run (a crash before user_version was set) changes nothing.
    const layout = Number((db.prepare('PRAGMA user_version').get() as { user_version?: number } | undefined)?.user_version ?? 0);
    if (layout < SQLITE_LAYOUT_VERSION) {
      db.exec(ANCHOR_MIGRATION);
      db.exec(`PRAGMA user_version = ${SQLITE_LAYOUT_VERSION}`);
    }
    db.exec(`PRAGMA busy_timeout = ${Math.min(Math.floor(busy), SYNC_BUSY_MS)}`);
  } catch (cause) {
    // Close what was opened: a failed open must not leave its file descriptor behind.
    try {
      db?.close();
    } catch {
      /* already unusable */
    }
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
  const parseRecord = (row: Row): OperationRecord => parse<OperationRecord>(row.record, 'a stored record');
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

  const selectOne = prep('SELECT record FROM retrysafe_operations WHERE id = ?');
  const upsert = prep(
    `INSERT INTO retrysafe_operations (id, provider, operation, state, fence, lease_expires_at, created_at, updated_at, record)
     VALUES (@id, @provider, @operation, @state, @fence, @lease, @created, @updated, @record)
     ON CONFLICT (id) DO UPDATE SET state = excluded.state, fence = excluded.fence, lease_expires_at = excluded.lease_expires_at,
       updated_at = excluded.updated_at, record = excluded.record`,
  );
  const lastSeq = prep('SELECT MAX(seq) AS seq FROM retrysafe_receipts WHERE id = ?');
  const insertReceipt = prep('INSERT INTO retrysafe_receipts (id, seq, receipt) VALUES (?, ?, ?)');
  const selectReceipts = prep('SELECT receipt FROM retrysafe_receipts WHERE id = ? ORDER BY seq');

  const read = (id: string): OperationRecord | null => {
    const row = selectOne.get(id) as Row | undefined;
    return row ? parseRecord(row) : null;
  };
  const write = (r: OperationRecord): OperationRecord => {
    upsert.run({
      id: r.businessOperationId,
      provider: r.provider,
      operation: r.operation,
      state: r.state,
      fence: r.fence,
      lease: r.leaseExpiresAt,
      created: r.createdAt,
      updated: r.updatedAt,
      record: JSON.stringify(r),
    });
    return r;
  };

  /**
   * Runs `fn` in one BEGIN IMMEDIATE transaction. BEGIN IMMEDIATE takes the write lock up front, so
   * two processes never both read "free" and both claim. While another process holds the lock, wait
   * in short asynchronous steps (up to busyTimeoutMs), never in one long synchronous wait that would
   * stall this process's event loop (other operations' lease heartbeats). BEGIN, `fn` and COMMIT run
   * in one synchronous stretch, so nothing else on this connection runs inside the transaction.
   * Library errors become LedgerError, retrysafe errors pass through; any failure rolls back.
   */
  async function tx<T>(what: string, fn: () => T): Promise<T> {
    const deadline = Date.now() + busy;
    // At least one asynchronous step before giving up, even when one attempt's own short synchronous
    // wait already used up a small busy timeout.
    for (let step = 1, waited = false; ; step = Math.min(step * 2, SYNC_BUSY_MS), waited = true) {
      try {
        conn.exec('BEGIN IMMEDIATE');
      } catch (err) {
        if (!isBusy(err) || (waited && Date.now() >= deadline)) {
          throw new LedgerError(`SQLite ledger ${what} failed: ${(err as Error).message}`, { cause: err });
        }
        await sleep(Math.max(0, Math.min(step, deadline - Date.now())));
        continue;
      }
      try {
        const out = fn();
        conn.exec('COMMIT');
        return out;
      } catch (err) {
        try {
          conn.exec('ROLLBACK');
        } catch {
          /* no transaction left to roll back */
        }
        if (RetrysafeError.isInstance(err)) throw err;
        throw new LedgerError(`SQLite ledger ${what} failed: ${(err as Error).message}`, { cause: err });
      }
    }
  }
  const selectFence = prep('SELECT fence FROM retrysafe_operations WHERE id = ?');
  const setChain = prep(`UPDATE retrysafe_operations SET record = json_set(record, '$.receiptChain', json(?)) WHERE id = ?`);
  const statements = new Map<string, SqliteStatement>();
  const prepared = (sql: string): SqliteStatement => {
    let st = statements.get(sql);
    if (!st) statements.set(sql, (st = conn.prepare(sql)));
    return st;
  };

  /** Inside a transaction: the receipt must be the operation's next seq (the fence was checked by the caller). */
  const insertNextReceipt = (ref: Fenced, receipt: Receipt) => {
    checkReceipt(ref, receipt, (lastSeq.get(ref.businessOperationId) as { seq: number | null } | undefined)?.seq ?? 0);
    insertReceipt.run(receipt.businessOperationId, receipt.seq, JSON.stringify(receipt));
  };

  /**
   * One UPDATE guarded by the fencing token (and `guard` on the state), in one transaction with the
   * receipt if one is given. `columns` sets the indexed columns; `paths` patches the stored record
   * (JSON path → SQL expression over the old row). A refused write (or receipt) rolls back both.
   */
  function fencedUpdate(
    ref: Fenced,
    what: string,
    write: { columns: string; paths: ReadonlyArray<readonly [string, string]>; params: Record<string, unknown>; guard?: { sql: string; blocked: Blocked } },
    receipt?: Receipt,
  ): Promise<OperationRecord> {
    return tx(what, () => {
      // A receipt moves the row's chain anchor in the same UPDATE (issue 18).
      const paths = receipt === undefined ? write.paths : [...write.paths, ['$.receiptChain', 'json(@receiptChain)'] as const];
      const sql = `UPDATE retrysafe_operations SET ${write.columns ? `${write.columns}, ` : ''}record = json_set(record, ${paths
        .map(([path, expr]) => `'${path}', ${expr}`)
        .join(', ')}) WHERE id = @id AND fence = @fence${write.guard ? ` AND ${write.guard.sql}` : ''} RETURNING record`;
      const chain = receipt === undefined ? {} : { receiptChain: j({ head: receipt.hash, length: receipt.seq }) };
      const row = prepared(sql).get({ ...write.params, ...chain, id: ref.businessOperationId, fence: ref.fence }) as Row | undefined;
      if (!row) {
        const current = checkFence(read(ref.businessOperationId), ref);
        const why = write.guard?.blocked(current) ?? null;
        if (why === 'no-op') return current;
        throw why ?? new LedgerError(`${what}: ${ref.businessOperationId} changed concurrently; write refused`);
      }
      if (receipt !== undefined) insertNextReceipt(ref, receipt);
      return parseRecord(row);
    });
  }
  const terminalBlocks = (action: string): Blocked => (r) =>
    (TERMINAL_STATES as readonly string[]).includes(r.state) ? new InvalidStateError(r.businessOperationId, r.state, action) : null;

  return {
    driver: found.driver,
    capabilities: { claimDispatch: true, receiptWithState: true },
    async claim(input: ClaimInput): Promise<ClaimResult> {
      return tx('claim', () => {
        const { result, write: w } = claimTransition(read(input.businessOperationId), input);
        if (w) write(w);
        return result;
      });
    },
    async renewLease(ref, leaseMs, now) {
      // A terminal operation holds no lease: renewing it is a no-op.
      await fencedUpdate(ref, 'renewLease', {
        columns: 'lease_expires_at = @expires, updated_at = @now',
        paths: [['$.leaseExpiresAt', 'json(@expiresJ)'], ['$.updatedAt', 'json(@nowJ)']],
        params: { expires: now + leaseMs, now, expiresJ: j(now + leaseMs), nowJ: j(now) },
        guard: { sql: NOT_TERMINAL, blocked: (r) => ((TERMINAL_STATES as readonly string[]).includes(r.state) ? 'no-op' : null) },
      });
    },
    async markDispatched(ref, now) {
      return fencedUpdate(ref, 'markDispatched', {
        columns: `state = 'dispatched', updated_at = @now`,
        paths: [
          ['$.state', `'dispatched'`],
          ['$.attemptCount', `json_extract(record, '$.attemptCount') + 1`],
          ['$.firstDispatchedAt', `json(coalesce(json_extract(record, '$.firstDispatchedAt'), @nowJ))`],
          ['$.updatedAt', 'json(@nowJ)'],
        ],
        params: { now, nowJ: j(now) },
        guard: { sql: NOT_TERMINAL, blocked: terminalBlocks('cannot dispatch a terminal operation') },
      });
    },
    async setState(ref, patch: StatePatch) {
      if (patch.state === 'handed-off') throw new LedgerError('setState cannot hand off: use handOff(ref, packet)');
      if (patch.state === 'abandoned') throw new LedgerError('setState cannot abandon: a person does that through resolve()');
      const terminal = (TERMINAL_STATES as readonly string[]).includes(patch.state);
      const paths: Array<readonly [string, string]> = [['$.state', '@state'], ['$.updatedAt', 'json(@nowJ)']];
      if (patch.lastOutcome !== undefined) paths.push(['$.lastOutcome', 'json(@lastOutcome)']);
      if (patch.result !== undefined) paths.push(['$.result', 'json(@result)']);
      if (patch.providerRef !== undefined) paths.push(['$.providerRef', 'json(@providerRef)']);
      if (patch.statusRef !== undefined) paths.push(['$.statusRef', 'json(@statusRef)']);
      if (terminal) paths.push(['$.leaseOwner', 'NULL'], ['$.leaseExpiresAt', 'NULL']);
      return fencedUpdate(
        ref,
        'setState',
        {
          columns: `state = @state, updated_at = @now${terminal ? ', lease_expires_at = NULL' : ''}`,
          paths,
          params: { state: patch.state, now: patch.now, nowJ: j(patch.now), lastOutcome: j(patch.lastOutcome), result: j(patch.result), providerRef: j(patch.providerRef), statusRef: j(patch.statusRef) },
          guard: { sql: NOT_TERMINAL, blocked: terminalBlocks(`cannot move a terminal operation to ${patch.state}`) },
        },
        patch.receipt,
      );
    },
    async handOff(ref, packet, now, receipt?: Receipt) {
      const outcome = packet.lastKnown.outcome ?? null;
      const providerRef = packet.lastKnown.providerRef ?? null;
      const paths: Array<readonly [string, string]> = [
        ['$.state', `'handed-off'`],
        ['$.handoff', 'json(@packet)'],
        ['$.leaseOwner', 'NULL'],
        ['$.leaseExpiresAt', 'NULL'],
        ['$.updatedAt', 'json(@nowJ)'],
      ];
      // The packet's last known outcome and provider reference become the record's, when it has them.
      if (outcome !== null) paths.push(['$.lastOutcome', 'json(@outcome)']);
      if (providerRef !== null) paths.push(['$.providerRef', 'json(@providerRef)']);
      return fencedUpdate(
        ref,
        'handOff',
        {
          columns: `state = 'handed-off', updated_at = @now, lease_expires_at = NULL`,
          paths,
          params: { packet: j(packet), now, nowJ: j(now), outcome: j(outcome), providerRef: j(providerRef) },
          guard: {
            sql: `state NOT IN (${sqlList(HANDOFF_BLOCKED)})`,
            blocked: (r) => (HANDOFF_BLOCKED.includes(r.state) ? new InvalidStateError(r.businessOperationId, r.state, 'cannot hand off') : null),
          },
        },
        receipt,
      );
    },
    async appendReceipt(ref, receipt: Receipt) {
      await tx('appendReceipt', () => {
        const row = selectFence.get(ref.businessOperationId) as { fence: number } | undefined;
        if (!row) throw new LedgerError(`no operation ${ref.businessOperationId} in the ledger`);
        if (row.fence !== ref.fence) throw new LeaseLostError(ref.businessOperationId, ref.fence);
        insertNextReceipt(ref, receipt);
        setChain.run(j({ head: receipt.hash, length: receipt.seq }), ref.businessOperationId);
      });
    },
    async release(ref) {
      await fencedUpdate(ref, 'release', {
        columns: 'lease_expires_at = NULL',
        paths: [['$.leaseOwner', 'NULL'], ['$.leaseExpiresAt', 'NULL']],
        params: {},
      });
    },
    async resolve(id, resolution, now) {
      return tx('resolve', () => write(resolveTransition(read(id), id, resolution, now)));
    },
    async get(id: BusinessOperationId) {
      return guard('get', () => read(id));
    },
    async list(filter: ListFilter = {}) {
      const where: string[] = [];
      const args: unknown[] = [];
      if (filter.states) {
        if (filter.states.length === 0) return [];
        where.push(`state IN (${filter.states.map(() => '?').join(',')})`);
        args.push(...filter.states);
      }
      if (filter.provider) (where.push('provider = ?'), args.push(filter.provider));
      if (filter.operation) (where.push('operation = ?'), args.push(filter.operation));
      const sql = `SELECT record FROM retrysafe_operations ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY ${filter.newestFirst ? 'created_at DESC, id DESC' : 'created_at, id'}${filter.limit !== undefined ? ' LIMIT ?' : ''}`;
      if (filter.limit !== undefined) args.push(filter.limit);
      return guard('list', () => (conn.prepare(sql).all(...args) as Row[]).map(parseRecord));
    },
    async receipts(id) {
      return guard('receipts', () => (selectReceipts.all(id) as Array<{ receipt: string }>).map((r) => parse<Receipt>(r.receipt, `a receipt of ${id}`)));
    },
    async recoverCandidates(now, limit) {
      const states = RECOVERABLE_STATES;
      const sql = `SELECT record FROM retrysafe_operations WHERE state IN (${states.map(() => '?').join(',')})
        AND (lease_expires_at IS NULL OR lease_expires_at <= ?) ORDER BY updated_at${limit !== undefined ? ' LIMIT ?' : ''}`;
      const args: unknown[] = [...states, now];
      if (limit !== undefined) args.push(limit);
      return (await guard('recoverCandidates', () => (conn.prepare(sql).all(...args) as Row[]).map(parseRecord))).filter((r) => r.leaseOwner === null || r.leaseExpiresAt === null || r.leaseExpiresAt <= now);
    },
    async close() {
      if (conn.open) conn.close();
    },
  };
}
