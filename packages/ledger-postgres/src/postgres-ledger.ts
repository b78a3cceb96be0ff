import {
  ClockSkewError,
  LeaseLostError,
  LedgerError,
  RetrysafeError,
  type BusinessOperationId,
  type ClaimInput,
  type ClaimResult,
  type Fenced,
  type HandoffPacket,
  type Ledger,
  type ListFilter,
  type OperationRecord,
  type OperationState,
  type PruneOptions,
  type PruneReport,
  type Receipt,
  type StatePatch,
} from '@retrysafe/contract';
import {
  PRUNABLE_STATES,
  RECOVERABLE_STATES,
  chainedTransition,
  checkPruneOptions,
  claimTransition,
  dispatchedTransition,
  handOffTransition,
  isTerminal,
  renewTransition,
  resolveTransition,
  setStateTransition,
  TERMINAL_STATES,
} from '@retrysafe/contract/ledger';
import { createHash } from 'node:crypto';
import pg from 'pg';
import { Connections, type Conn, type Statement } from './connections.js';
import { migrate, quoteSchema, type MigrateReport } from './migrations.js';
import { appendReceiptSql, jsonParam, RECORD_COLUMNS, toReceipts, toRecord, type OperationRow } from './rows.js';

export interface PostgresLedgerOptions {
  /** e.g. `postgres://user@127.0.0.1:5432/db`. Either this or `pool`. */
  readonly connectionString?: string;
  /** Your own pool; `close()` leaves it open. */
  readonly pool?: pg.Pool;
  /** Schema holding the tables (created if missing). Default `public`. */
  readonly schema?: string;
  /** Run the shipped migrations before the first query (default true). Set false when a deploy step runs `migrate()`. */
  readonly migrate?: boolean;
  /** How many connections the ledger opens at most, when it opens its own (default 10). */
  readonly poolSize?: number;
  /**
   * Client-side limit on one query, in ms (default 15 000), when the ledger opens its own connections
   * (with `pool`, your pool's settings apply). A query that does not answer in time fails with
   * LedgerError, so the runner does not dispatch (fail closed), and its connection is closed; so does a
   * wait for a free connection that lasts this long (its query is then never sent), and opening one.
   * Checked by one timer per ledger, so it fires up to an eighth of it (at most 1 s) late. 0: no limit.
   */
  readonly queryTimeoutMs?: number;
  /**
   * When the ledger opens its own connections: how long (ms) one may stay unused before it is closed
   * (default 10 000, as pg.Pool's; 0: never).
   */
  readonly idleTimeoutMs?: number;
  /**
   * Whose clock judges lease expiry and takeover. `database` (default): PostgreSQL's `now()`, inside the
   * same statement that claims, renews or lists recoverable operations, so workers on machines whose
   * clocks disagree never both hold a lease. `caller`: the `now` each call passes in (simulated time in
   * tests; a single machine).
   */
  readonly leaseClock?: 'database' | 'caller';
  /**
   * With `leaseClock: 'database'`: how far (ms) a worker's clock may be from the database's before its
   * claims are refused with ClockSkewError (default 1000). Keep it below the runner's send margin (a
   * tenth of the lease, at most 2 s): a worker checks its own lease on its own clock before it sends.
   */
  readonly maxClockSkewMs?: number;
  /**
   * What a write the runner marks deferrable costs (StatePatch.durability: an operation's final
   * `succeeded`, for a card with a lookup: completionRecoverable). `defer` (default): its transaction
   * commits with `synchronous_commit = off` for that transaction alone (set_config(…, true) in the
   * statement), so it does not wait for the WAL flush; the server flushes it within a few hundred ms (and
   * with any later synchronous commit). A server crash before that, or a failover to a standby it had not
   * reached (with synchronous replication it does not wait for the standby either), leaves the operation `dispatched`,
   * which the next run or recover() looks up and adopts, never sends again. `sync`: every commit waits
   * (docs/decisions/2026-12-01-deferred-completion-sync.md). Commits already asynchronous on the server
   * (synchronous_commit = off there) stay so either way.
   */
  readonly deferrableWrites?: 'defer' | 'sync';
}

export interface PostgresLedger extends Ledger {
  /** Resolves once the schema is migrated (also awaited by every method). */
  ready(): Promise<MigrateReport | null>;
  readonly schema: string;
}

/**
 * In a write's RETURNING: this statement's transaction (autocommit: the statement itself) commits without
 * waiting for the WAL flush. `true`: for this transaction only; the session's setting is untouched.
 */
const DEFER_COMMIT = `set_config('synchronous_commit', 'off', true) AS deferred_commit`;

const sqlList = (states: readonly string[]) => states.map((s) => `'${s}'`).join(', ');
/** The predicate of the partial index of migration 4 (operations that are not closed). */
const OPEN_STATES_SQL = `state NOT IN (${sqlList(PRUNABLE_STATES)})`;

/**
 * The retrysafe ledger on PostgreSQL, for many workers on many machines. Claims hold a lease with an
 * expiry and a fencing token that grows on every claim; every write carries the token and is refused
 * (`LeaseLostError`) once another worker has taken the operation over. Every method is durable when
 * its promise resolves; any database or connection failure rejects with `LedgerError`, so a
 * `markDispatched` that did not commit never lets the runner call the provider.
 */
export function createPostgresLedger(options: PostgresLedgerOptions): PostgresLedger {
  if (!options || (!options.connectionString && !options.pool)) {
    throw new LedgerError('createPostgresLedger needs a connectionString or a pool');
  }
  const dbClock = (options.leaseClock ?? 'database') === 'database';
  if (options.deferrableWrites !== undefined && options.deferrableWrites !== 'defer' && options.deferrableWrites !== 'sync') throw new LedgerError(`deferrableWrites must be 'defer' or 'sync', got ${JSON.stringify(options.deferrableWrites)}`);
  const defers = (options.deferrableWrites ?? 'defer') === 'defer';
  if (options.leaseClock !== undefined && options.leaseClock !== 'database' && options.leaseClock !== 'caller') throw new LedgerError(`leaseClock must be 'database' or 'caller', got ${JSON.stringify(options.leaseClock)}`);
  const maxSkew = options.maxClockSkewMs ?? 1000;
  if (!(Number.isFinite(maxSkew) && maxSkew >= 0)) throw new LedgerError(`maxClockSkewMs must be a number ≥ 0, got ${String(options.maxClockSkewMs)}`);
  const schemaName = options.schema ?? 'public';
  const s = quoteSchema(schemaName);
  const ops = `${s}.retrysafe_operations`;
  const timeoutMs = options.queryTimeoutMs ?? 15_000;
  if (!(Number.isFinite(timeoutMs) && timeoutMs >= 0)) throw new LedgerError(`queryTimeoutMs must be a number ≥ 0, got ${String(options.queryTimeoutMs)}`);
  const idleMs = options.idleTimeoutMs ?? 10_000;
  if (!(Number.isFinite(idleMs) && idleMs >= 0)) throw new LedgerError(`idleTimeoutMs must be a number ≥ 0, got ${String(options.idleTimeoutMs)}`);
  const poolSize = options.poolSize ?? 10;
  if (!(Number.isInteger(poolSize) && poolSize >= 1)) throw new LedgerError(`poolSize must be an integer ≥ 1, got ${String(options.poolSize)}`);
  // Your pool, used as it is; or the ledger's own connections (see Connections: one timer per ledger).
  const pool = options.pool ?? null;
  const own = pool === null ? new Connections({ connectionString: options.connectionString, max: poolSize, timeoutMs, idleMs }) : null;
  // An idle client losing its connection emits 'error' on the pool; unhandled, it would kill the
  // process. The pool drops that client; the next query gets a fresh one or fails with LedgerError.
  const onPoolError = () => undefined;
  pool?.on('error', onPoolError);

  let closed = false;
  let readyPromise: Promise<MigrateReport | null> | null = null;
  let migrated = options.migrate === false;
  const ready = () => {
    readyPromise ??= options.migrate === false
      ? Promise.resolve(null)
      : migrateOnce().then(
          (report) => {
            migrated = true;
            return report;
          },
          (err: unknown) => {
            readyPromise = null; // a database that was down may be back next time
            throw err;
          },
        );
    return readyPromise;
  };
  /** Migrates on your pool, or on a connection of its own with the ledger's time limit on each statement. */
  async function migrateOnce(): Promise<MigrateReport> {
    if (pool !== null) return migrate(pool, schemaName);
    const client = new pg.Client({ connectionString: options.connectionString, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
    // A connection that breaks emits 'error' too; the statement running on it fails with it.
    client.on('error', () => undefined);
    try {
      await client.connect();
      return await migrate(client, schemaName);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /**
   * With the database clock: is the caller's clock (the `now` it passes) within maxClockSkewMs of the database's? Probed with
   * one round trip at most every 10 s (cached), before a claim writes anything. The probe brackets the
   * database's `now()` between two local readings, so a slow round trip (a busy pool) widens the interval
   * instead of looking like skew: only a clock that is off for certain is refused.
   */
  let probedAt = -Infinity;
  /** This process's clock minus the database's, bracketed: [lo, hi] ms (from the last probe). */
  let offset = { lo: 0, hi: 0 };
  /** One probe of the database clock (see above): the offset, bracketed, and when it was taken. */
  async function probeClock(): Promise<void> {
    const t0 = Date.now();
    const { rows } = await query<{ db: string }>('clock', 'clock-probe', `SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS db`, []);
    const t1 = Date.now();
    const db = Number(rows[0]!.db);
    offset = { lo: t0 - db, hi: t1 - db };
    probedAt = t1;
  }
  /** The caller's `now` (passed when this process's clock read `entry`) against the database's clock, from the last probe. */
  function skewWithin(now: number, entry: number, claimOf: string): void {
    // The caller's clock (the `now` it passes) may differ from this process's: add that difference.
    const caller = now - entry;
    const lo = offset.lo + caller;
    const hi = offset.hi + caller;
    if (lo > maxSkew) throw new ClockSkewError(Math.round(lo), maxSkew, `claim of ${claimOf}`);
    if (hi < -maxSkew) throw new ClockSkewError(Math.round(hi), maxSkew, `claim of ${claimOf}`);
  }

  // Statement names are per connection; the schema is part of the text, so it is part of the name.
  // Built once per name (a clean operation's statements are the same few every time).
  const stmtNames = new Map<string, string>();
  const stmt = (name: string): string => {
    let full = stmtNames.get(name);
    if (full === undefined) stmtNames.set(name, (full = statementName(schemaName, name)));
    return full;
  };

  /**
   * One statement, its failure a LedgerError. Not an async function: on the ledger's own connections,
   * migrated, outside a transaction (a clean operation's every statement) it is the connection's promise
   * and one rejection handler; everything else goes through `queryAsync`, as before.
   */
  function query<R extends pg.QueryResultRow>(what: string, name: string | null, text: string, values: unknown[], tx?: Tx): Promise<pg.QueryResult<R>> {
    if (closed || !migrated || tx !== undefined || own === null) return queryAsync<R>(what, name, text, values, tx);
    let sent: Promise<pg.QueryResult<R>>;
    let config: Statement;
    try {
      config = name ? { name: stmt(name), text, values } : { text, values };
      sent = own.query<R>(config);
    } catch (err) {
      return Promise.reject(asLedgerError(err, what));
    }
    // A stale prepared statement (see queryAsync) is sent again on another connection; any other failure is the answer.
    return sent.then(undefined, (err: unknown) => ((err as { code?: unknown }).code === '0A000' && poolSize > 0 ? resend<R>(what, config, 1) : Promise.reject(asLedgerError(err, what))));
  }
  /** `config` sent again after `from` stale-statement refusals (queryAsync's loop, from there). */
  async function resend<R extends pg.QueryResultRow>(what: string, config: Statement, from: number): Promise<pg.QueryResult<R>> {
    try {
      for (let stale = from; ; stale++) {
        try {
          return await own!.query<R>(config);
        } catch (err) {
          if ((err as { code?: unknown }).code !== '0A000' || stale >= poolSize) throw err;
        }
      }
    } catch (err) {
      throw asLedgerError(err, what);
    }
  }
  async function queryAsync<R extends pg.QueryResultRow>(what: string, name: string | null, text: string, values: unknown[], tx?: Tx): Promise<pg.QueryResult<R>> {
    if (closed) throw new LedgerError(`ledger is closed (${what})`);
    try {
      if (!migrated) await ready();
      const config: Statement = name ? { name: stmt(name), text, values } : { text, values };
      if (tx !== undefined) return await tx.query<R>(config);
      for (let stale = 0; ; stale++) {
        try {
          return await (own !== null ? own.query<R>(config) : pool!.query<R>(config));
        } catch (err) {
          // A statement prepared on a connection before a migration changed the type of a column it returns
          // (6: state, fence) is refused before it runs: 0A000, "cached plan must not change result type". A
          // failed query closes its connection (here and in pg.Pool), so on another one it is prepared anew.
          if ((err as { code?: unknown }).code !== '0A000' || stale >= poolSize) throw err;
        }
      }
    } catch (err) {
      throw asLedgerError(err, what);
    }
  }
  /**
   * A write returns the record's columns, never the receipts (the caller has the one it wrote), and the
   * row version's xmin, so the next write of this operation can skip the read-back (see `known`).
   */
  const RETURNING = `RETURNING ${RECORD_COLUMNS}, xmin`;

  /**
   * The record this ledger last wrote to an operation's row, with the row version holding it (`xmin`,
   * the id of the transaction that wrote that version). A fenced write of a remembered operation
   * computes the new record with the contract's transition rule and sends the same UPDATE, guarded
   * also by `xmin = <remembered>`, returning only the new xmin: the guard matches only the very row
   * version the record was read from or written as (any other write, by any worker or person, makes a
   * new version with another xmin; the takeover re-check under READ COMMITTED sees the new version),
   * so the record is the row's without parsing it back. No match: the write is sent again as before
   * (returning the whole row, or explaining why it was refused). json values are kept as their text and
   * parsed for each record handed out, as a read of the column would, so callers never share objects.
   * Bounded; an operation that reaches a terminal state is forgotten.
   */
  const known = new Map<string, Known>();
  const remember = (record: OperationRecord, xmin: string, json: JsonTexts) => {
    const id = record.businessOperationId;
    known.delete(id);
    if (isTerminal(record)) return;
    if (known.size >= KNOWN_MAX) known.delete(known.keys().next().value!);
    // A copy: the caller may change the record it was handed; the json values are kept as text.
    known.set(id, { xmin, record: record.receiptChain ? { ...record, receiptChain: { ...record.receiptChain } } : { ...record }, json });
  };
  /** The record of a row version that was read back from a write: remembered with its xmin, returned. */
  const fromRow = (row: OperationRow & { xmin: string }): OperationRecord => {
    const record = toRecord(row);
    remember(record, row.xmin, {
      params: jsonParam(record.params),
      result: jsonParam(record.result),
      handoff: jsonParam(record.handoff),
      resolution: jsonParam(record.resolution),
    });
    return record;
  };

  /**
   * 0 rows from a fenced write: say why. A missing operation is a LedgerError, a stale token a
   * LeaseLostError (checked first, as the other ledgers do), a state the write may not leave an
   * InvalidStateError; `'no-op'` means the guard asked for a silent no-op.
   */
  async function refused(ref: Fenced, what: string, blocked?: Blocked, receipt?: Receipt): Promise<OperationRecord | null> {
    const { rows } = await query<OperationRow>(what, 'get', `SELECT ${RECORD_COLUMNS} FROM ${ops} WHERE business_operation_id = $1`, [ref.businessOperationId]);
    if (rows.length === 0) throw new LedgerError(`no operation ${ref.businessOperationId} in the ledger`);
    const current = toRecord(rows[0]!);
    if (current.fence !== ref.fence) throw new LeaseLostError(ref.businessOperationId, ref.fence);
    const why = blocked?.(current) ?? null;
    if (why === 'no-op') return null;
    if (why === null && receipt !== undefined) {
      const expected = (rows[0]!.receipt_count ?? 0) + 1;
      if (receipt.seq !== expected) throw new LedgerError(`${what}: receipt seq ${receipt.seq} for ${ref.businessOperationId} is not the next one (expected ${expected}); nothing written`);
    }
    // null: the row now passes the guard, so it changed between the write and this read.
    throw why ?? new LedgerError(`${what}: ${ref.businessOperationId} changed concurrently; write refused`);
  }

  /**
   * One UPDATE guarded by the fencing token (and optionally by the state), in one round trip.
   * Under READ COMMITTED an UPDATE that waits on a concurrent takeover re-checks its WHERE against
   * the new row version, so a stale token can never land after the takeover commits.
   * `record: false` (a write whose caller gets nothing back: renew, release) returns only the id, not
   * the whole row with its params and result, and resolves to null.
   */
  function fencedUpdate(
    ref: Fenced,
    what: string,
    name: string,
    set: string,
    values: unknown[],
    guard: { sql: string; blocked: Blocked } | null,
    receipt?: Receipt,
    next?: Next,
    deferred = false,
  ): Promise<OperationRecord | null> {
    // Not an async function: a clean write (a remembered operation, with its receipt) is the known write's
    // promise and its continuations, with no coroutine to optimise; the other writes are async functions
    // of their own (plainWrite, fullWrite). Anything thrown comes back as a rejection.
    try {
      checkRef(ref, what);
      // Deferred (see deferrableWrites), with or without a receipt: the statement turns synchronous_commit off
      // for its own transaction, in RETURNING, which runs only for the row it wrote. Its own statement (the text differs).
      const texts = writeTextsOf(name, set, values.length, guard, receipt !== undefined, deferred && defers);
      if (receipt === undefined) return plainWrite(ref, what, texts, [...values, ref.businessOperationId, ref.fence], guard, next);
      checkReceiptShape(ref, receipt, what);
      // The state and its receipt in ONE statement on ONE row (migration 5: the receipts live in the
      // operation's row): it applies only when the receipt is the next seq of the row's chain anchor.
      // Under the row lock a concurrent writer of the same seq re-checks against the new count: one lands.
      const args = [...values, ref.businessOperationId, ref.fence, receipt.seq, jsonParam(receipt), receipt.hash];
      const fast = next ? knownWrite(ref, what, texts, args, next, receipt) : null;
      if (fast === null) return fullWrite(ref, what, texts, args, guard, receipt);
      return fast.then((written) => written ?? fullWrite(ref, what, texts, args, guard, receipt));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** A fenced write without a receipt (renew, release, markDispatched, handOff without one). */
  async function plainWrite(ref: Fenced, what: string, texts: WriteTexts, args: unknown[], guard: { sql: string; blocked: Blocked } | null, next: Next | undefined): Promise<OperationRecord | null> {
    if (next === undefined) {
      // Nothing comes back (renew, release): only the id is returned, and the row is no longer the remembered version.
      known.delete(ref.businessOperationId);
      const { rows } = await query<{ business_operation_id: string }>(what, texts.name, texts.bare, args);
      if (rows.length === 0) await refused(ref, what, guard?.blocked);
      return null;
    }
    const fast = await knownWrite(ref, what, texts, args, next, undefined);
    if (fast) return fast;
    return fullWrite(ref, what, texts, args, guard, undefined);
  }

  /** The write sent as it is, returning the whole row (or explaining why it was refused). */
  async function fullWrite(ref: Fenced, what: string, texts: WriteTexts, args: unknown[], guard: { sql: string; blocked: Blocked } | null, receipt: Receipt | undefined): Promise<OperationRecord | null> {
    const { rows } = await query<OperationRow & { xmin: string }>(what, texts.name, texts.full, args);
    if (rows.length === 0) return refused(ref, what, guard?.blocked, receipt);
    return fromRow(rows[0]!);
  }

  /**
   * The statements of a fenced write, built once per statement name and kind: the name is the text's
   * (pg refuses one name with two texts on a connection), so the cache cannot hand out another's.
   * `set` and `guard` are the same for every call under one name (each caller passes constants).
   * Per name, four kinds: [plain, plain deferred, with receipt, with receipt deferred].
   */
  const writeTextKinds = new Map<string, (WriteTexts | undefined)[]>();
  function writeTextsOf(name: string, set: string, n: number, guard: { sql: string } | null, withReceipt: boolean, defer: boolean): WriteTexts {
    const slot = (withReceipt ? 2 : 0) + (defer ? 1 : 0);
    let kinds = writeTextKinds.get(name);
    if (kinds === undefined) writeTextKinds.set(name, (kinds = [undefined, undefined, undefined, undefined]));
    const hit = kinds[slot];
    if (hit !== undefined) return hit;
    const where = `business_operation_id = $${n + 1} AND fence = $${n + 2}${guard ? ` AND ${guard.sql}` : ''}`;
    const named = `${name}${withReceipt ? '+receipt' : ''}${defer ? ':deferred' : ''}`;
    const extra = defer ? `, ${DEFER_COMMIT}` : '';
    // With a receipt: it applies only when it is the next seq of the row's chain anchor ($n+3).
    const sql = withReceipt
      ? `UPDATE ${ops} SET ${set}, ${appendReceiptSql(`$${n + 4}`)}, receipt_head = $${n + 5}, receipt_count = $${n + 3}
       WHERE ${where} AND receipt_count + 1 = $${n + 3}::integer`
      : `UPDATE ${ops} SET ${set} WHERE ${where}`;
    const args = withReceipt ? n + 5 : n + 2;
    const texts: WriteTexts = {
      name: named,
      bare: `${sql} RETURNING business_operation_id`,
      full: `${sql} ${RETURNING}${extra}`,
      knownName: `${named}:known`,
      known: `${sql} AND xmin = $${args + 1}::xid RETURNING xmin${extra}`,
    };
    kinds[slot] = texts;
    return texts;
  }

  /**
   * The write of a remembered operation (see `known`): the write's UPDATE (`texts.known`) guarded
   * also by the remembered xmin, returning only the new one. The record is `next` applied to the
   * remembered one. null at once: not remembered, or the rule refuses (the full write explains why); a
   * promise of null: the row is another version now. Either way nothing was written, and the caller
   * sends the full write.
   */
  function knownWrite(ref: Fenced, what: string, texts: WriteTexts, args: unknown[], next: Next, receipt: Receipt | undefined): Promise<OperationRecord | null> | null {
    const k = known.get(ref.businessOperationId);
    if (k === undefined || k.record.fence !== ref.fence) return null;
    let out: { record: OperationRecord; json: JsonTexts };
    try {
      out = next(k.record, k.json);
    } catch {
      return null;
    }
    return query<{ xmin: string }>(what, texts.knownName, texts.known, [...args, k.xmin]).then(({ rows }) => {
      if (rows.length === 0) {
        known.delete(ref.businessOperationId);
        return null;
      }
      const record = chainedTransition(out.record, receipt);
      remember(record, rows[0]!.xmin, out.json);
      return handOut(record, out.json);
    });
  }
  const must = (r: OperationRecord | null): OperationRecord => r!;

  /**
   * Stores the record a transition rule returned, for a row this transaction holds `FOR UPDATE`
   * (`locked`): every column a transition may change; identity, creation time and the receipt chain
   * (moved only with a receipt) stay. The fence in the WHERE is the one read under the lock.
   */
  async function writeLocked(client: Tx, what: string, locked: OperationRow, r: OperationRecord): Promise<OperationRecord> {
    const { rows } = await query<OperationRow & { xmin: string }>(
      what,
      'write-locked',
      `UPDATE ${ops} SET params = $3::json, params_fingerprint = $4, provider_key = $5, state = $6, fence = $7, lease_owner = $8,
         lease_expires_at = $9, updated_at = $10, first_dispatched_at = $11, attempt_count = $12, last_outcome = $13, result = $14::json,
         provider_ref = $15, status_ref = $16, handoff = $17::json, resolution = $18::json
       WHERE business_operation_id = $1 AND fence = $2 ${RETURNING}`,
      [r.businessOperationId, locked.fence, jsonParam(r.params), r.paramsFingerprint, r.providerKey, r.state, r.fence, r.leaseOwner,
        r.leaseExpiresAt, r.updatedAt, r.firstDispatchedAt, r.attemptCount, r.lastOutcome, jsonParam(r.result),
        r.providerRef, r.statusRef, jsonParam(r.handoff), jsonParam(r.resolution)],
      client,
    );
    if (rows.length === 0) throw new LedgerError(`${what}: ${r.businessOperationId} changed under its row lock; nothing written`);
    return fromRow(rows[0]!);
  }
  const NOT_TERMINAL = `state NOT IN (${sqlList(TERMINAL_STATES)})`;
  /** Why a guarded write's rule refuses the current record: the contract's transition rule, asked. */
  const ruleBlocks = (rule: (r: OperationRecord) => unknown) => (r: OperationRecord): Error | null => {
    try {
      rule(r);
      return null;
    } catch (err) {
      return err as Error;
    }
  };

  // A renewal: the lease's end on the ledger's clock; never of a terminal operation or a released lease.
  const RENEW_SET = `lease_expires_at = ${CLOCK('$3', '$1')} + $2::bigint, updated_at = $1`;
  const RENEW_GUARD = `${NOT_TERMINAL} AND lease_owner IS NOT NULL`;
  const RENEW_KNOWN = `UPDATE ${ops} SET ${RENEW_SET} WHERE business_operation_id = $4 AND fence = $5 AND ${RENEW_GUARD} AND xmin = $6::xid RETURNING lease_expires_at, xmin`;
  // The claim's INSERT, fixed per ledger: a plain VALUES row (no CTE, no CASE for the server to evaluate),
  // the clock the ledger's; one statement per birth state, whose fixed columns are in its text.
  const claimInsert = (dispatch: boolean) => ({
    name: `claim-insert${dispatch ? '-dispatched' : ''}${dbClock ? '' : ':caller-clock'}`,
    text: `INSERT INTO ${ops} (business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, params, provider_key,
           state, fence, lease_owner, lease_expires_at, created_at, updated_at, attempt_count, first_dispatched_at)
         VALUES ($1, $2, $3, $4, $5, $6::json, $7, ${dispatch ? `'dispatched'` : `'claimed'`}, 1, $8, ${dbClock ? DB_NOW : '$10::bigint'} + $9::bigint, $10, $10, ${dispatch ? '1, $10' : '0, NULL'})
         ON CONFLICT (business_operation_id) DO NOTHING RETURNING lease_expires_at, xmin`,
  });
  const CLAIM_INSERT = claimInsert(false);
  const CLAIM_INSERT_DISPATCHED = claimInsert(true);

  /** setState's checks, then its fenced write (a setState with a next rule: never null). */
  function setStateWrite(ref: Fenced, patch: StatePatch): Promise<OperationRecord> {
    if (!patch || typeof patch.state !== 'string') throw new LedgerError('setState: patch.state is required');
    if (patch.state === 'handed-off') throw new LedgerError('setState cannot hand off: use handOff(ref, packet)');
    if (patch.state === 'abandoned') throw new LedgerError('setState cannot abandon: a person does that through resolve()');
    if (!ALL_STATES.has(patch.state)) throw new LedgerError(`setState: unknown state ${JSON.stringify(patch.state)}`);
    checkNumber(patch.now, 'now', 'setState');
    const terminal = TERMINAL_STATES.includes(patch.state);
    // The result's json text, as the column will hold it (undefined: the patch leaves the result as it is).
    const result = patch.result === undefined ? undefined : jsonParam(patch.result);
    // The statement of this patch's shape: a column per field it has (see setStateShape).
    const values: unknown[] = [patch.state, patch.now];
    let fields = 0;
    if (patch.lastOutcome !== undefined) (fields |= 1), values.push(patch.lastOutcome);
    if (result !== undefined) (fields |= 2), values.push(result);
    if (patch.providerRef !== undefined) (fields |= 4), values.push(patch.providerRef);
    if (patch.statusRef !== undefined) (fields |= 8), values.push(patch.statusRef);
    const shape = setStateShape(fields, terminal);
    return fencedUpdate(
      ref,
      'setState',
      shape.name,
      shape.set,
      values,
      { sql: NOT_TERMINAL, blocked: ruleBlocks((r) => setStateTransition(r, patch)) },
      patch.receipt,
      (r, json) => ({ record: setStateTransition(r, patch), json: result === undefined ? json : { ...json, result } }),
      patch.durability === 'deferrable',
    ) as Promise<OperationRecord>;
  }

  /**
   * Fast path: a new operation is one INSERT, atomic under the primary key; with `dispatch` it is born
   * `dispatched` (the runner calls the provider next), so the clean path needs no second write. A worker
   * whose clock is too far from the database's writes nothing (checked before); the lease ends at the
   * ledger's clock + leaseMs.
   */
  function claimNew(input: ClaimInput): Promise<ClaimResult> {
    const insert = input.dispatch === true ? CLAIM_INSERT_DISPATCHED : CLAIM_INSERT;
    const params = jsonParam(input.params);
    return query<{ lease_expires_at: string; xmin: string }>(
      'claim',
      insert.name,
      insert.text,
      [input.businessOperationId, input.provider, input.operation, input.intentFingerprint, input.paramsFingerprint,
        params, input.providerKey, input.owner, input.leaseMs, input.now],
    ).then(({ rows: inserted }) => (inserted.length === 1 ? claimInserted(input, params, inserted[0]!) : claimExisting(input)));
  }
  /**
   * The new row holds exactly what this call sent, so its record is not read back: it is the contract's
   * new-operation record (the rule every ledger applies) for the params as the json column reads them
   * back, and the lease's end the database wrote (its clock: leaseNow = that end - leaseMs).
   */
  function claimInserted(input: ClaimInput, params: string | null, row: { lease_expires_at: string; xmin: string }): ClaimResult {
    const { lease_expires_at: leaseEnd, xmin } = row;
    const stored = { ...input, params: parseJson(params), providerKey: input.providerKey ?? null };
    const claimed = claimTransition(null, stored, Number(leaseEnd) - input.leaseMs).result;
    remember(claimed.record, xmin, { params, result: null, handoff: null, resolution: null });
    return claimed;
  }
  /**
   * It exists: decide under a row lock, so two workers never both take it over. The decision is the
   * contract's claimTransition (the rule every ledger applies); the lease is judged on the ledger's
   * clock (see leaseClock), read in the same statement as the lock: now() is the transaction's time.
   */
  function claimExisting(input: ClaimInput): Promise<ClaimResult> {
    return withTransaction('claim', async (client) => {
      const { rows } = await query<OperationRow & { lease_now: string }>(
        'claim',
        'claim-lock-clock',
        `SELECT ${RECORD_COLUMNS}, ${CLOCK('$2', '$3')} AS lease_now FROM ${ops} WHERE business_operation_id = $1 FOR UPDATE`,
        [input.businessOperationId, dbClock, input.now],
        client,
      );
      if (rows.length === 0) throw new LedgerError(`claim: ${input.businessOperationId} was neither inserted nor found; nothing written`);
      const { result, write } = claimTransition(toRecord(rows[0]!), input, Number(rows[0]!.lease_now));
      if (write === null) return result;
      const record = await writeLocked(client, 'claim', rows[0]!, write);
      return { ...result, record } as ClaimResult;
    });
  }

  const ledger: PostgresLedger = {
    schema: schemaName,
    ready,
    capabilities: { claimDispatch: true, receiptWithState: true },

    // Not an async function: a clean claim is the skew check from the cached offset, one INSERT and one
    // continuation (claimInserted), with no coroutine to optimise; a due clock probe and an existing
    // operation (claimExisting) are async functions of their own. Anything thrown comes back as a rejection.
    claim(input: ClaimInput): Promise<ClaimResult> {
      try {
        checkClaim(input);
        if (!dbClock) return claimNew(input);
        const entry = Date.now();
        if (entry - probedAt >= 10_000 || entry < probedAt) return probeClock().then(() => (skewWithin(input.now, entry, input.businessOperationId), claimNew(input)));
        skewWithin(input.now, entry, input.businessOperationId);
        return claimNew(input);
      } catch (err) {
        return Promise.reject(err);
      }
    },

    async renewLease(ref, leaseMs, now) {
      checkNumber(leaseMs, 'leaseMs', 'renewLease', 1);
      checkNumber(now, 'now', 'renewLease');
      // A terminal operation holds no lease: renewing it is a no-op. A released lease stays released
      // (the caller gave it up; it must claim again).
      // A remembered operation is renewed on its remembered row version (see `known`) and stays remembered,
      // with the lease's end the database wrote; otherwise (a miss writes nothing) the renewal below.
      checkRef(ref, 'renewLease');
      const k = known.get(ref.businessOperationId);
      // The contract's rule on the remembered record (a stale fence or a released lease refuses: the full renewal below says why).
      let renewed: OperationRecord | undefined;
      try {
        renewed = k === undefined ? undefined : renewTransition(k.record, ref, leaseMs, now);
      } catch {
        renewed = undefined;
      }
      if (k !== undefined && renewed !== undefined && renewed !== k.record) {
        const { rows } = await query<{ lease_expires_at: string; xmin: string }>(
          'renewLease',
          'renew:known',
          RENEW_KNOWN,
          [now, leaseMs, dbClock, ref.businessOperationId, ref.fence, k.xmin],
        );
        if (rows.length === 1) {
          // The lease's end as the database wrote it (its clock when the ledger uses the database's).
          const { lease_expires_at: leaseEnd, xmin } = rows[0]!;
          remember({ ...renewed, leaseExpiresAt: Number(leaseEnd) }, xmin, k.json);
          return;
        }
      }
      await fencedUpdate(ref, 'renewLease', 'renew', RENEW_SET, [now, leaseMs, dbClock], {
        sql: RENEW_GUARD,
        // The contract's rule decides what the guard refused: a terminal operation is a no-op, a released lease LeaseLostError.
        blocked: (r) => (isTerminal(r) ? 'no-op' : ruleBlocks((x) => renewTransition(x, ref, leaseMs, now))(r)),
      });
    },

    async markDispatched(ref, now) {
      checkNumber(now, 'now', 'markDispatched');
      return must(await fencedUpdate(
        ref,
        'markDispatched',
        'dispatched',
        `state = 'dispatched', attempt_count = attempt_count + 1, first_dispatched_at = coalesce(first_dispatched_at, $1), updated_at = $1`,
        [now],
        { sql: NOT_TERMINAL, blocked: ruleBlocks((r) => dispatchedTransition(r, now)) },
        undefined,
        (r, json) => ({ record: dispatchedTransition(r, now), json }),
      ));
    },

    // Not an async function: the checks throw into a rejected promise (as an async function's would), and
    // the write's promise is handed back as it is, so the clean path has one coroutine less to optimise.
    setState(ref, patch: StatePatch) {
      try {
        return setStateWrite(ref, patch);
      } catch (err) {
        return Promise.reject(err);
      }
    },

    async handOff(ref, packet: HandoffPacket, now, receipt?: Receipt) {
      if (!packet || typeof packet !== 'object') throw new LedgerError('handOff: a handoff packet is required');
      checkNumber(now, 'now', 'handOff');
      // The packet's last known outcome and provider reference become the record's, when it has them.
      const handoff = jsonParam(packet);
      return must(await fencedUpdate(
        ref,
        'handOff',
        'hand-off',
        `state = 'handed-off', handoff = $1::json, last_outcome = coalesce($3, last_outcome), provider_ref = coalesce($4, provider_ref),
         updated_at = $2, lease_owner = NULL, lease_expires_at = NULL`,
        [handoff, now, packet.lastKnown?.outcome ?? null, packet.lastKnown?.providerRef ?? null],
        { sql: `state NOT IN ('succeeded', 'abandoned', 'handed-off')`, blocked: ruleBlocks((r) => handOffTransition(r, packet, now)) },
        receipt,
        (r, json) => ({ record: handOffTransition(r, packet, now), json: { ...json, handoff } }),
      ));
    },

    async appendReceipt(ref, receipt: Receipt) {
      checkRef(ref, 'appendReceipt');
      checkReceiptShape(ref, receipt, 'appendReceipt');
      known.delete(ref.businessOperationId); // the row becomes another version
      // The row lock on the operation orders this after any concurrent takeover, so a stale token is
      // seen as stale, and makes the "next seq" check race-free.
      const { rows } = await query<{ seq: number }>(
        'appendReceipt',
        'receipt',
        // One UPDATE of the operation's row: the receipt, the chain anchor (issue 18) and the seq check.
        `UPDATE ${ops} SET ${appendReceiptSql('$4')}, receipt_head = $5, receipt_count = $3
         WHERE business_operation_id = $1 AND fence = $2 AND receipt_count + 1 = $3::integer
         RETURNING receipt_count AS seq`,
        [ref.businessOperationId, ref.fence, receipt.seq, jsonParam(receipt), receipt.hash],
      );
      if (rows.length === 1) return;
      const check = await query<{ fence: string; seq: number | null }>(
        'appendReceipt',
        'receipt-check',
        `SELECT fence, receipt_count AS seq FROM ${ops} WHERE business_operation_id = $1`,
        [ref.businessOperationId],
      );
      const row = check.rows[0];
      if (!row) throw new LedgerError(`no operation ${ref.businessOperationId} in the ledger`);
      if (Number(row.fence) !== ref.fence) throw new LeaseLostError(ref.businessOperationId, ref.fence);
      const expected = (row.seq ?? 0) + 1;
      throw new LedgerError(`appendReceipt: receipt seq ${receipt.seq} for ${ref.businessOperationId} is not the next one (expected ${expected})`);
    },

    async release(ref) {
      await fencedUpdate(ref, 'release', 'release', 'lease_owner = NULL, lease_expires_at = NULL', [], null);
    },

    async resolve(id: BusinessOperationId, resolution, now) {
      if (!resolution || (resolution.action !== 'mark-done' && resolution.action !== 'abandon')) {
        throw new LedgerError(`resolve: action must be 'mark-done' or 'abandon' ('resume' goes through claim({ resume: true }))`);
      }
      checkNumber(now, 'now', 'resolve');
      return withTransaction('resolve', async (client) => {
        const { rows } = await query<OperationRow>('resolve', 'lock', `SELECT ${RECORD_COLUMNS} FROM ${ops} WHERE business_operation_id = $1 FOR UPDATE`, [id], client);
        // The state becomes terminal, so a worker still holding an old token cannot overwrite the person's decision.
        const next = resolveTransition(rows[0] ? toRecord(rows[0]) : null, id, resolution, now);
        return writeLocked(client, 'resolve', rows[0]!, next);
      });
    },

    async get(id) {
      const { rows } = await query<OperationRow>('get', 'get', `SELECT ${RECORD_COLUMNS} FROM ${ops} WHERE business_operation_id = $1`, [id]);
      return rows[0] ? toRecord(rows[0]) : null;
    },

    async list(filter: ListFilter = {}) {
      const where: string[] = [];
      const values: unknown[] = [];
      if (filter.states !== undefined) {
        for (const st of filter.states) if (!ALL_STATES.has(st)) throw new LedgerError(`list: unknown state ${JSON.stringify(st)}`);
        values.push([...filter.states]);
        where.push(`state = ANY($${values.length}::text[])`);
        // Only states that are not closed: the partial index's own predicate, so the planner can use it with a parameter.
        if (filter.states.every((st) => !PRUNABLE_STATES.includes(st))) where.push(OPEN_STATES_SQL);
      }
      if (filter.provider !== undefined) {
        values.push(filter.provider);
        where.push(`provider = $${values.length}`);
      }
      if (filter.operation !== undefined) {
        values.push(filter.operation);
        where.push(`operation = $${values.length}`);
      }
      let limit = '';
      if (filter.limit !== undefined) {
        checkNumber(filter.limit, 'limit', 'list', 0);
        values.push(filter.limit);
        limit = ` LIMIT $${values.length}`;
      }
      const { rows } = await query<OperationRow>(
        'list',
        null,
        `SELECT ${RECORD_COLUMNS} FROM ${ops}${where.length ? ' WHERE ' + where.join(' AND ') : ''} ORDER BY ${filter.newestFirst ? 'created_at DESC, business_operation_id DESC' : 'created_at, business_operation_id'}${limit}`,
        values,
      );
      return rows.map(toRecord);
    },

    async receipts(id) {
      const { rows } = await query<{ receipts: string | null }>('receipts', 'receipts', `SELECT receipts FROM ${ops} WHERE business_operation_id = $1`, [id]);
      return rows[0] ? toReceipts(rows[0].receipts, id) : [];
    },

    async recoverCandidates(now, limit) {
      checkNumber(now, 'now', 'recoverCandidates');
      if (limit !== undefined) checkNumber(limit, 'limit', 'recoverCandidates', 0);
      const { rows } = await query<OperationRow>(
        'recoverCandidates',
        'recover',
        // The partial index of open rows (migration 4) serves it: its predicate is repeated for the planner.
        `SELECT ${RECORD_COLUMNS} FROM ${ops}
         WHERE state IN (${sqlList(RECOVERABLE_STATES)}) AND ${OPEN_STATES_SQL} AND coalesce(lease_expires_at, 0) <= ${CLOCK('$3', '$1')}
         ORDER BY updated_at, business_operation_id LIMIT $2`,
        [now, limit ?? null, dbClock],
      );
      return rows.map(toRecord);
    },

    async prune(options: PruneOptions): Promise<PruneReport> {
      // The rule (which states, never open or handed-off) is the contract's, shared by every ledger.
      const states = [...checkPruneOptions(options)];
      const batch = options.batchSize ?? 500;
      const byState: Partial<Record<OperationState, number>> = {};
      let pruned = 0;
      const count = (st: string, n: number) => ((pruned += n), (byState[st as OperationState] = (byState[st as OperationState] ?? 0) + n));
      if (options.dryRun) {
        const { rows } = await query<{ state: string; n: string }>(
          'prune',
          'prune-count',
          `SELECT state, count(*) AS n FROM ${ops} WHERE state = ANY($1::text[]) AND created_at < $2 AND updated_at < $2 GROUP BY state`,
          [states, options.before],
        );
        for (const r of rows) count(r.state, Number(r.n));
        return { pruned, byState, dryRun: true };
      }
      // created_at <= updated_at: each state's (state, created_at) range bounds the walk; keyset pages by (created_at, id)
      // (the planner bounds the created_at index, which holds no id since migration 5, by the row comparison's first column).
      for (const state of states) {
        for (let after: [number, string] = [-1, '']; ; ) {
          const { rows } = await query<OperationRow & { receipts?: string | null }>(
            'prune',
            options.onPrune ? 'prune-page-receipts' : 'prune-page',
            `SELECT ${RECORD_COLUMNS}${options.onPrune ? ', receipts' : ''} FROM ${ops} WHERE state = $1 AND created_at < $2 AND updated_at < $2 AND (created_at, business_operation_id) > ($3::bigint, $4::text)
             ORDER BY created_at, business_operation_id LIMIT $5`,
            [state, options.before, after[0], after[1], batch],
          );
          if (rows.length === 0) break;
          const last = rows[rows.length - 1]!;
          after = [Number(last.created_at), last.business_operation_id];
          const ids = rows.map((r) => r.business_operation_id);
          if (options.onPrune) {
            for (const row of rows) await options.onPrune(toRecord(row), toReceipts(row.receipts ?? null, row.business_operation_id));
          }
          // The rows that are still closed and old (a rejected one may have been superseded meanwhile), their receipts with them.
          const { rows: gone } = await query<{ state: string }>(
            'prune',
            'prune-delete',
            `DELETE FROM ${ops} WHERE business_operation_id = ANY($1::text[]) AND state = ANY($2::text[]) AND updated_at < $3 RETURNING state`,
            [ids, states, options.before],
          );
          for (const g of gone) count(g.state, 1);
        }
      }
      return { pruned, byState, dryRun: false };
    },

    async close() {
      if (closed) return;
      closed = true;
      pool?.off('error', onPoolError);
      await own?.end();
    },
  };

  async function withTransaction<T>(what: string, fn: (client: Tx) => Promise<T>): Promise<T> {
    if (closed) throw new LedgerError(`ledger is closed (${what})`);
    let client: Tx;
    try {
      if (!migrated) await ready();
      client = own !== null ? ownTx(own, await own.acquire()) : await pool!.connect();
    } catch (err) {
      throw asLedgerError(err, what);
    }
    let broken: Error | undefined;
    try {
      await query(what, null, 'BEGIN', [], client);
      const out = await fn(client);
      await query(what, null, 'COMMIT', [], client);
      return out;
    } catch (err) {
      await client.query({ text: 'ROLLBACK' }).catch((e: Error) => {
        broken = e;
      });
      throw asLedgerError(err, what);
    } finally {
      client.release(broken);
    }
  }

  return ledger;
}

/** setState's optional fields, in the order of their bits and parameters: column, cast, letter in the statement's name. */
const SET_STATE_FIELDS = [['last_outcome', '', 'o'], ['result', '::json', 'r'], ['provider_ref', '', 'p'], ['status_ref', '', 's']] as const;
const setStateShapes: ({ readonly name: string; readonly set: string } | undefined)[] = [];
/**
 * setState's SET for a patch with the optional fields in `fields` (bit i: SET_STATE_FIELDS[i] is in the
 * patch; a field not in it leaves its column as it is): `state = $1, updated_at = $2`, then one parameter
 * per field present, in that order. One statement per shape (at most 32, built once), so the server
 * evaluates no CASE and the client binds no flags. A terminal state holds no lease.
 */
function setStateShape(fields: number, terminal: boolean): { readonly name: string; readonly set: string } {
  const slot = fields * 2 + (terminal ? 1 : 0);
  const hit = setStateShapes[slot];
  if (hit !== undefined) return hit;
  let set = 'state = $1, updated_at = $2';
  let letters = '';
  let n = 2;
  SET_STATE_FIELDS.forEach(([column, cast, letter], bit) => {
    if ((fields & (1 << bit)) === 0) return;
    set += `, ${column} = $${++n}${cast}`;
    letters += letter;
  });
  if (terminal) set += ', lease_owner = NULL, lease_expires_at = NULL';
  const shape = { name: `set-state${terminal ? '-terminal' : ''}${letters ? `.${letters}` : ''}`, set };
  setStateShapes[slot] = shape;
  return shape;
}

/**
 * The prepared statement's name of statement `name` in `schema`: `rs:<schema>:<name>`, or, when that is
 * longer than the 63 bytes PostgreSQL keeps of a name (NAMEDATALEN - 1; the rest is cut, so two long
 * names alike in their first 63 bytes are one statement to the server, and the second Parse fails with
 * "already exists"), `rs:<name>#<12 hex digits of the schema's SHA-256>`. Schema names hold no `#`, so the
 * two forms never meet; every statement name here is short enough for the second form.
 */
function statementName(schema: string, name: string): string {
  const full = `rs:${schema}:${name}`;
  if (full.length <= 63) return full;
  const short = `rs:${name}#${createHash('sha256').update(schema).digest('hex').slice(0, 12)}`;
  if (short.length > 63) throw new LedgerError(`statement name ${name} is too long for PostgreSQL`);
  return short;
}

/** The database's "now" in epoch ms (the transaction's start). */
const DB_NOW = `(extract(epoch from now()) * 1000)::bigint`;
/** SQL for "now" in epoch ms: the database's `now()` when `flag` (a boolean parameter) is true, else the caller's `now` parameter. */
function CLOCK(flag: string, callerNow: string): string {
  return `(CASE WHEN ${flag}::boolean THEN ${DB_NOW} ELSE ${callerNow}::bigint END)`;
}

/** The json columns of a remembered record, as the text the column holds (null: SQL NULL or JSON null, both read back as null). */
interface JsonTexts {
  readonly params: string | null;
  readonly result: string | null;
  readonly handoff: string | null;
  readonly resolution: string | null;
}
/** A fenced write's statements (see writeTextsOf): `name` for `bare` (returns the id) and `full` (the row), `knownName` for `known`. */
interface WriteTexts {
  readonly name: string;
  readonly bare: string;
  readonly full: string;
  readonly knownName: string;
  readonly known: string;
}
/** A remembered operation: the record of the row version whose xmin is `xmin`. */
interface Known {
  readonly xmin: string;
  readonly record: OperationRecord;
  readonly json: JsonTexts;
}
/** A fenced write's rule, applied to a remembered record: the new record and its json columns' text. Throws when the rule refuses. */
type Next = (record: OperationRecord, json: JsonTexts) => { record: OperationRecord; json: JsonTexts };
/** How many operations a ledger remembers (see `known`): a runner's operations in flight, with room. */
const KNOWN_MAX = 4096;

const parseJson = (text: string | null | undefined): unknown => (text == null ? null : JSON.parse(text));
/** A remembered record as a read of its row would give it: its own json values and chain anchor, shared with nobody. */
function handOut(record: OperationRecord, json: JsonTexts): OperationRecord {
  return {
    ...record,
    params: parseJson(json.params),
    result: parseJson(json.result),
    handoff: parseJson(json.handoff) as OperationRecord['handoff'],
    resolution: parseJson(json.resolution) as OperationRecord['resolution'],
    ...(record.receiptChain ? { receiptChain: { ...record.receiptChain } } : {}),
  };
}

/** A connection held for a transaction: a client of your pool, or one of the ledger's own. */
interface Tx {
  query<R extends pg.QueryResultRow>(config: Statement): Promise<pg.QueryResult<R>>;
  release(err?: Error): void;
}
const ownTx = (own: Connections, conn: Conn): Tx => ({
  query: <R extends pg.QueryResultRow>(config: Statement) => own.send<R>(conn, config, false),
  release: (err?: Error) => own.release(conn, err),
});

/** Why a guarded write matched no row: an error to throw, `'no-op'`, or null (not explained by the guard). */
type Blocked = (r: OperationRecord) => Error | 'no-op' | null;

const ALL_STATES = new Set<string>([...RECOVERABLE_STATES, ...TERMINAL_STATES]);

function asLedgerError(err: unknown, what: string): RetrysafeError {
  if (RetrysafeError.isInstance(err)) return err;
  const e = err as { message?: string; code?: string };
  return new LedgerError(`${what} failed in PostgreSQL${e?.code ? ` (${e.code})` : ''}: ${e?.message ?? String(err)}`, { cause: err });
}

function checkNumber(value: unknown, name: string, what: string, min = 0): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) throw new LedgerError(`${what}: ${name} must be a finite number ≥ ${min}, got ${String(value)}`);
}

function checkRef(ref: Fenced, what: string): void {
  if (!ref || typeof ref.businessOperationId !== 'string' || !Number.isInteger(ref.fence)) {
    throw new LedgerError(`${what}: a fenced reference { businessOperationId, fence } is required`);
  }
}

function checkReceiptShape(ref: Fenced, receipt: Receipt, what: string): void {
  if (!receipt || typeof receipt !== 'object' || !Number.isInteger(receipt.seq)) throw new LedgerError(`${what}: a receipt with an integer seq is required`);
  if (receipt.businessOperationId !== ref.businessOperationId) {
    throw new LedgerError(`${what}: receipt belongs to ${receipt.businessOperationId}, not ${ref.businessOperationId}`);
  }
}

function checkClaim(input: ClaimInput): void {
  if (!input || typeof input !== 'object') throw new LedgerError('claim: input is required');
  for (const k of ['businessOperationId', 'provider', 'operation', 'intentFingerprint', 'paramsFingerprint', 'owner'] as const) {
    if (typeof input[k] !== 'string' || input[k].length === 0) throw new LedgerError(`claim: ${k} must be a non-empty string`);
  }
  checkNumber(input.leaseMs, 'leaseMs', 'claim', 1);
  checkNumber(input.now, 'now', 'claim');
}
