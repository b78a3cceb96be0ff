import { createHash } from 'node:crypto';
import { LedgerError, type ListFilter, type StatePatch } from '@retrysafe/contract';
import { PRUNABLE_STATES, RECOVERABLE_STATES, TERMINAL_STATES } from '@retrysafe/contract/ledger';
import type pg from 'pg';
import { RECORD_COLUMNS, RECORD_FIELD_COUNT, SET_EVERY_COLUMN } from './rows.js';
import { quoteSchema } from './schema.js';

/** Prepared once per connection under `name`, or sent unnamed when its text varies. */
export type Sql = Readonly<Pick<pg.QueryConfig, 'name' | 'text'>>;

const sqlList = (states: readonly string[]) => states.map((s) => `'${s}'`).join(', ');
/** The partial index's predicate, repeated in a query so the planner can use it. */
const OPEN_STATES = `state NOT IN (${sqlList(PRUNABLE_STATES)})`;
const NOT_TERMINAL = `state NOT IN (${sqlList(TERMINAL_STATES)})`;
const DB_NOW = `(extract(epoch from now()) * 1000)::bigint`;
/** The database's "now" when the boolean parameter `flag` is true, else the caller's. */
const clock = (flag: string, callerNow: string) =>
  `(CASE WHEN ${flag}::boolean THEN ${DB_NOW} ELSE ${callerNow}::bigint END)`;
/** In a RETURNING: this transaction alone commits without waiting for the WAL flush. */
const DEFER_COMMIT = `set_config('synchronous_commit', 'off', true) AS deferred_commit`;
const RELEASED = 'lease_owner = NULL, lease_expires_at = NULL';
/** `set`, and the receipt in $seq (seq), $seq+1 (JSON), $seq+2 (hash) appended to the array kept as text (an empty one,
 * emptied from outside, as none: the server parses neither): only the chain's next, and only onto an array, as
 * appendStoredReceipt checks it (text edited into other JSON would be appended to as cut JSON). */
const updateWithReceipt = (ops: string, set: string, where: string, seq: number) =>
  `UPDATE ${ops} SET ${set ? `${set}, ` : ''}receipts = (CASE WHEN receipts IS NULL OR receipts ~ '^[[][[:space:]]*[]]$' THEN '[' ELSE left(receipts, -1) || ',' END) || $${seq + 1}::text || ']', receipt_head = $${seq + 2}, receipt_count = $${seq}
     WHERE ${where} AND receipt_count + 1 = $${seq}::integer AND (receipts IS NULL OR (left(receipts, 1) = '[' AND right(receipts, 1) = ']'))`;

/** A fenced write's SET (parameters from $1) and the state guard its rule implies. */
export type FencedWrite = { readonly name: string; readonly set: string; readonly guard: string | null };

export const WRITES = {
  /** $1 now, $2 lease ms, $3 database clock?: never of a terminal operation or a released lease. */
  renew: {
    name: 'renew',
    set: `lease_expires_at = ${clock('$3', '$1')} + $2::bigint, updated_at = $1`,
    guard: `${NOT_TERMINAL} AND lease_owner IS NOT NULL`,
  },
  /** $1 now. */
  dispatched: {
    name: 'dispatched',
    set: `state = 'dispatched', attempt_count = attempt_count + 1, first_dispatched_at = coalesce(first_dispatched_at, $1), updated_at = $1`,
    guard: NOT_TERMINAL,
  },
  /** $1 packet, $2 now, $3 last outcome, $4 provider reference (null: keep the record's). */
  handOff: {
    name: 'hand-off',
    set: `state = 'handed-off', handoff = $1::json, last_outcome = coalesce($3, last_outcome), provider_ref = coalesce($4, provider_ref),
         updated_at = $2, ${RELEASED}`,
    guard: `state NOT IN ('succeeded', 'abandoned', 'handed-off')`,
  },
  /** Only the receipt the fenced write appends. */
  append: { name: 'append', set: '', guard: null },
  release: { name: 'release', set: RELEASED, guard: null },
} as const satisfies Record<string, FencedWrite>;

/** setState's optional fields in parameter order: field, column, cast, letter in the statement's name. */
const SET_STATE_FIELDS = [
  ['lastOutcome', 'last_outcome', '', 'o'],
  ['result', 'result', '::json', 'r'],
  ['providerRef', 'provider_ref', '', 'p'],
  ['statusRef', 'status_ref', '', 's'],
] as const;

/** $1 state, $2 now, a parameter per field the patch carries (`result` as its JSON text): one statement per shape. */
export function setStateWrite(patch: StatePatch, result: string | null | undefined) {
  const values: unknown[] = [patch.state, patch.now];
  let set = 'state = $1, updated_at = $2';
  let letters = '';
  for (const [field, column, cast, letter] of SET_STATE_FIELDS) {
    if (patch[field] === undefined) continue;
    values.push(field === 'result' ? result : patch[field]);
    set += `, ${column} = $${values.length}${cast}`;
    letters += letter;
  }
  const terminal = TERMINAL_STATES.includes(patch.state);
  if (terminal) set += `, ${RELEASED}`;
  const name = `set-state${terminal ? '-terminal' : ''}${letters ? `.${letters}` : ''}`;
  return { write: { name, set, guard: NOT_TERMINAL }, values };
}

/** A fenced write returning the id only, the record and its xmin, or (guarded by the remembered xmin) the new xmin and lease. */
type FencedTexts = Readonly<Record<'bare' | 'full' | 'known', Sql>>;

/** Every statement the ledger sends, for the table in `schema`; named per schema, as prepared statements are. */
export function createStatements(schema: string, dbClock: boolean) {
  const ops = `${quoteSchema(schema)}.retrysafe_operations`;
  const named = (name: string, text: string): Sql => ({ name: statementName(schema, name), text });
  const returning = `RETURNING ${RECORD_COLUMNS}, xmin`;
  const claimInsert = (dispatch: boolean) =>
    named(
      `claim-insert${dispatch ? '-dispatched' : ''}${dbClock ? '' : ':caller-clock'}`,
      // $1 id, $2 provider, $3 operation, $4 intent fp, $5 params fp, $6 params, $7 provider key, $8 owner, $9 lease ms, $10 now, $11 account, $12 intent from.
      `INSERT INTO ${ops} (business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, params, provider_key,
           state, fence, lease_owner, lease_expires_at, created_at, updated_at, attempt_count, first_dispatched_at, account, intent_from)
         VALUES ($1, $2, $3, $4, $5, $6::json, $7, ${dispatch ? `'dispatched'` : `'claimed'`}, 1, $8, ${dbClock ? DB_NOW : '$10::bigint'} + $9::bigint, $10, $10, ${dispatch ? '1, $10' : '0, NULL'}, $11, $12)
         ON CONFLICT (business_operation_id) DO NOTHING RETURNING lease_expires_at, xmin`,
    );
  /** $1 state, $2 before, $3/$4 after (created_at, id), $5 page size; the records and receipts only to export them. */
  const prunePage = (exporting: boolean) =>
    named(
      exporting ? 'prune-page-receipts' : 'prune-page',
      `SELECT ${exporting ? `${RECORD_COLUMNS}, receipts` : 'business_operation_id, created_at'} FROM ${ops} WHERE state = $1 AND created_at < $2 AND updated_at < $2 AND (created_at, business_operation_id) > ($3::bigint, $4::text)
             ORDER BY created_at, business_operation_id LIMIT $5`,
    );
  const fencedCache = new Map<string, FencedTexts>();

  return {
    clockProbe: named('clock-probe', `SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS db`),
    get: named('get', `SELECT ${RECORD_COLUMNS} FROM ${ops} WHERE business_operation_id = $1`),
    receipts: named('receipts', `SELECT receipts FROM ${ops} WHERE business_operation_id = $1`),
    claimInsert: claimInsert(false),
    claimInsertDispatched: claimInsert(true),
    /** $1 id, $2 database clock?, $3 caller's now. */
    claimLock: named(
      'claim-lock-clock',
      `SELECT ${RECORD_COLUMNS}, ${clock('$2', '$3')} AS lease_now FROM ${ops} WHERE business_operation_id = $1 FOR UPDATE`,
    ),
    resolveLock: named('lock', `SELECT ${RECORD_COLUMNS} FROM ${ops} WHERE business_operation_id = $1 FOR UPDATE`),
    /** The transition's record over the row whose fence ($1) was read under the lock. */
    writeLocked: named(
      'write-locked',
      `UPDATE ${ops} SET ${SET_EVERY_COLUMN} WHERE business_operation_id = $2 AND fence = $1 ${returning}`,
    ),
    /** The same with a receipt after the record's parameters (seq, JSON, hash), which must be the chain's next. */
    writeLockedReceipt: named(
      'write-locked+receipt',
      `${updateWithReceipt(ops, SET_EVERY_COLUMN, 'business_operation_id = $2 AND fence = $1', RECORD_FIELD_COUNT + 2)} ${returning}`,
    ),
    /** $1 caller's now, $2 limit, $3 database clock?: served by the partial index of open rows. */
    recover: named(
      'recover',
      `SELECT ${RECORD_COLUMNS} FROM ${ops}
         WHERE state IN (${sqlList(RECOVERABLE_STATES)}) AND ${OPEN_STATES} AND coalesce(lease_expires_at, 0) <= ${clock('$3', '$1')}
         ORDER BY updated_at, business_operation_id LIMIT $2`,
    ),
    prunePage: prunePage(false),
    prunePageReceipts: prunePage(true),
    /** Only rows still closed and old (one may have been superseded or revised meanwhile). */
    pruneDelete: named(
      'prune-delete',
      `DELETE FROM ${ops} WHERE business_operation_id = ANY($1::text[]) AND state = ANY($2::text[]) AND updated_at < $3 RETURNING state`,
    ),
    list: (filter: ListFilter) => listStatement(ops, filter),
    /** `write.set` guarded by $n+1 id, $n+2 fence; a receipt ($n+3 seq, $n+4 JSON, $n+5 hash) must be the chain's next. */
    fenced(write: FencedWrite, n: number, withReceipt: boolean, defer: boolean): FencedTexts {
      const name = `${write.name}${withReceipt ? '+receipt' : ''}${defer ? ':deferred' : ''}`;
      let texts = fencedCache.get(name);
      if (texts !== undefined) return texts;
      const where = `business_operation_id = $${n + 1} AND fence = $${n + 2}${write.guard ? ` AND ${write.guard}` : ''}`;
      const sql = withReceipt
        ? updateWithReceipt(ops, write.set, where, n + 3)
        : `UPDATE ${ops} SET ${write.set} WHERE ${where}`;
      const extra = defer ? `, ${DEFER_COMMIT}` : '';
      const xmin = (withReceipt ? n + 5 : n + 2) + 1;
      texts = {
        bare: named(name, `${sql} RETURNING business_operation_id`),
        full: named(name, `${sql} ${returning}${extra}`),
        known: named(`${name}:known`, `${sql} AND xmin = $${xmin}::xid RETURNING xmin, lease_expires_at${extra}`),
      };
      fencedCache.set(name, texts);
      return texts;
    },
  };
}

export type Statements = ReturnType<typeof createStatements>;

/** Its WHERE follows the filter, so it is sent unnamed. */
function listStatement(ops: string, filter: ListFilter): { sql: Sql; values: unknown[] } {
  const where: string[] = [];
  const values: unknown[] = [];
  const param = (v: unknown) => `$${values.push(v)}`;
  if (filter.states !== undefined) {
    where.push(`state = ANY(${param([...filter.states])}::text[])`);
    if (filter.states.every((st) => !PRUNABLE_STATES.includes(st))) where.push(OPEN_STATES);
  }
  // An empty value filters nothing, as on the other ledgers.
  if (filter.provider) where.push(`provider = ${param(filter.provider)}`);
  if (filter.operation) where.push(`operation = ${param(filter.operation)}`);
  const limit = filter.limit !== undefined ? ` LIMIT ${param(filter.limit)}` : '';
  // Ties by code unit, as on the other ledgers, whatever collation the database or column has.
  const dir = filter.newestFirst ? ' DESC' : '';
  const text = `SELECT ${RECORD_COLUMNS} FROM ${ops}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at${dir}, business_operation_id COLLATE "C"${dir}${limit}`;
  return { sql: { text }, values };
}

/** `rs:<schema>:<name>`, or past PostgreSQL's 63 bytes `rs:<name>#<schema hash>` (schema names hold no `#`). */
function statementName(schema: string, name: string): string {
  const full = `rs:${schema}:${name}`;
  if (full.length <= 63) return full;
  const short = `rs:${name}#${createHash('sha256').update(schema).digest('hex').slice(0, 12)}`;
  if (short.length > 63) throw new LedgerError(`statement name ${name} is too long for PostgreSQL`);
  return short;
}
