import {
  businessOperationIdProblem,
  type ClaimInput,
  type ClaimResult,
  ClockSkewError,
  type Ledger,
  LedgerError,
  type OperationRecord,
  type OperationState,
  type PruneOptions,
  type PruneReport,
} from '@retrysafe/contract';
import {
  checkListFilter,
  checkPacket,
  checkPruneOptions,
  checkRecoverCandidates,
  checkRenewal,
  checkStatePatch,
  choiceOption,
  claimTransition,
  dispatchedTransition,
  handOffTransition,
  numberOption,
  pruneTally,
  readEach,
  readLimited,
  renewTransition,
  resolveTransition,
  resultJson,
  setStateTransition,
} from '@retrysafe/contract/ledger';
import type pg from 'pg';
import { createWrites, jsonParam, type OperationRow, parseJson, toReceipts, toRecord } from './rows.js';
import type { MigrateReport } from './schema.js';
import { createStatements, type Statements, setStateWrite, WRITES } from './statements.js';
import { createDb, type Db } from './tx.js';

const idOfRow = (row: OperationRow) => row.business_operation_id;

/** The README's table says what each option does and why its default is what it is. */
export interface PostgresLedgerOptions {
  readonly connectionString?: string;
  readonly pool?: pg.Pool;
  readonly schema?: string;
  readonly migrate?: boolean;
  readonly poolSize?: number;
  readonly queryTimeoutMs?: number;
  readonly idleTimeoutMs?: number;
  readonly leaseClock?: 'database' | 'caller';
  readonly maxClockSkewMs?: number;
  readonly deferrableWrites?: 'defer' | 'sync';
}

export interface PostgresLedger extends Ledger {
  /** Resolves once the schema is migrated (every method awaits it too). */
  ready(): Promise<MigrateReport | null>;
  readonly schema: string;
}

/** The ledger for many workers: every write carries the claim's fencing token, refused once another worker took
 * over; any failure rejects with LedgerError, so nothing uncommitted lets the runner call the provider. Each fenced
 * write is one UPDATE guarded by that token; the contract's rule gives the record it leaves. */
export function createPostgresLedger(options: PostgresLedgerOptions): PostgresLedger {
  const c = parts(options);
  const { db, st, writes, dbClock } = c;
  return {
    schema: c.schema,
    ready: db.ready,
    capabilities: { sharedLeaseClock: dbClock },
    claim: (input) => claim(c, input),
    async renewLease(ref, leaseMs, now) {
      checkRenewal(leaseMs, now); // the SQL would renew for 0 ms or less
      const rule = (r: OperationRecord) => renewTransition(r, ref, leaseMs, now);
      const values = [now, Math.ceil(leaseMs), dbClock];
      await writes.fenced(ref, { what: 'renewLease', write: WRITES.renew, values, rule });
    },
    async markDispatched(ref, now) {
      const rule = (r: OperationRecord) => dispatchedTransition(r, now);
      return (await writes.fenced(ref, { what: 'markDispatched', write: WRITES.dispatched, values: [now], rule }))!;
    },
    async setState(ref, patch) {
      checkStatePatch(patch);
      const result = patch.result === undefined ? undefined : resultJson(patch.result, 'PostgreSQL ledger');
      return (await writes.fenced(ref, {
        what: 'setState',
        ...setStateWrite(patch, result),
        rule: (r) => setStateTransition(r, patch),
        json: result === undefined ? {} : { result },
        receipt: patch.receipt,
        deferred: patch.durability === 'deferrable',
      }))!;
    },
    async handOff(ref, packet, now, receipt) {
      checkPacket(packet);
      const handoff = jsonParam(packet);
      const { outcome = null, providerRef = null } = packet.lastKnown;
      return (await writes.fenced(ref, {
        what: 'handOff',
        write: WRITES.handOff,
        values: [handoff, now, outcome, providerRef],
        rule: (r) => handOffTransition(r, packet, now),
        json: { handoff },
        receipt,
      }))!;
    },
    async appendReceipt(ref, receipt) {
      await writes.fenced(ref, { what: 'appendReceipt', write: WRITES.append, values: [], receipt });
    },
    async release(ref) {
      await writes.fenced(ref, { what: 'release', write: WRITES.release, values: [] });
    },
    resolve: (id, resolution, now, receipt) =>
      db.tx('resolve', async (run) => {
        const { rows } = await run<OperationRow>(st.resolveLock, [id]);
        const row = rows[0];
        const next = resolveTransition(row ? toRecord(row) : null, id, resolution, now, receipt, row?.receipt_count);
        return writes.writeLocked(run, 'resolve', row!.fence, next, receipt);
      }),
    async get(id) {
      // No claim stores an id the contract refuses; PostgreSQL would refuse some as text (U+0000) where the others find none.
      if (businessOperationIdProblem(id) !== null) return null;
      const { rows } = await db.query<OperationRow>('get', st.get, [id]);
      return rows[0] ? toRecord(rows[0]) : null;
    },
    async list(filter = {}) {
      checkListFilter(filter);
      const page = async (limit: number | undefined) => {
        const { sql, values } = st.list({ ...filter, limit });
        return (await db.query<OperationRow>('list', sql, values)).rows;
      };
      return readLimited(page, filter.limit, idOfRow, toRecord, filter.onUnreadable);
    },
    async receipts(id) {
      if (businessOperationIdProblem(id) !== null) return [];
      const { rows } = await db.query<{ receipts: string | null }>('receipts', st.receipts, [id]);
      return rows[0] ? toReceipts(rows[0].receipts, id) : [];
    },
    async recoverCandidates(now, limit, onUnreadable) {
      checkRecoverCandidates(now, limit, onUnreadable);
      const page = async (n: number | undefined) =>
        (await db.query<OperationRow>('recoverCandidates', st.recover, [now, n ?? null, dbClock])).rows;
      return readLimited(page, limit, idOfRow, toRecord, onUnreadable);
    },
    prune: (opts) => prune(c, opts),
    close: db.close,
  };
}

function parts(options: PostgresLedgerOptions) {
  if (!options || (!options.connectionString && !options.pool))
    throw new LedgerError('createPostgresLedger needs a connectionString or a pool');
  const dbClock = choiceOption(options.leaseClock, ['database', 'caller'], 'leaseClock') === 'database';
  const defers = choiceOption(options.deferrableWrites, ['defer', 'sync'], 'deferrableWrites') === 'defer';
  const maxSkew = numberOption(options.maxClockSkewMs, 1000, 'maxClockSkewMs', 0);
  const schema = options.schema ?? 'public';
  const st = createStatements(schema, dbClock);
  const db = createDb({
    connectionString: options.connectionString,
    pool: options.pool ?? null,
    schema,
    migrate: options.migrate !== false,
    max: numberOption(options.poolSize, 10, 'poolSize', 1, true),
    timeoutMs: numberOption(options.queryTimeoutMs, 15_000, 'queryTimeoutMs', 0),
    idleMs: numberOption(options.idleTimeoutMs, 10_000, 'idleTimeoutMs', 0),
  });
  return { schema, db, st, dbClock, writes: createWrites(db, st, defers), checkSkew: createSkewCheck(db, st, maxSkew) };
}
type Parts = ReturnType<typeof parts>;

/** A new operation is one INSERT; its record is what was sent, not read back, with the lease's end the database wrote.
 * Lease lengths are rounded up to whole ms for the bigint columns (the runner's own lease, unrounded, ends first). */
async function claim(c: Parts, input: ClaimInput): Promise<ClaimResult> {
  const params = jsonParam(input.params);
  const stored = { ...input, params: parseJson(params), providerKey: input.providerKey ?? null };
  // A claim of a stored row (`existing`, or with its receipt) is decided on that row only.
  const claimed = input.existing || input.receipt !== undefined ? null : claimTransition(null, stored).result;
  if (c.dbClock) await c.checkSkew(input.now, input.businessOperationId);
  if (claimed?.kind !== 'claimed') return claimExisting(c, input);
  const { rows } = await c.db.query<{ lease_expires_at: string; xmin: string }>(
    'claim',
    input.dispatch === true ? c.st.claimInsertDispatched : c.st.claimInsert,
    [
      input.businessOperationId,
      input.provider,
      input.operation,
      input.intentFingerprint,
      input.paramsFingerprint,
      params,
      input.providerKey,
      input.owner,
      Math.ceil(input.leaseMs),
      input.now,
      input.account ?? null,
      input.intentFrom ?? null,
    ],
  );
  if (rows.length === 0) return claimExisting(c, input);
  const record = { ...claimed.record, leaseExpiresAt: Number(rows[0]!.lease_expires_at) };
  c.writes.remember(record, rows[0]!.xmin, { params, result: null, handoff: null, resolution: null });
  return { ...claimed, record };
}

/** It exists: claimTransition decides under the row lock, with the lease clock read in the same statement. */
function claimExisting(c: Parts, input: ClaimInput): Promise<ClaimResult> {
  return c.db.tx('claim', async (run) => {
    const values = [input.businessOperationId, c.dbClock, input.now];
    const { rows } = await run<OperationRow & { lease_now: string }>(c.st.claimLock, values);
    if (rows.length === 0 && input.existing) return claimTransition(null, input).result; // gone
    if (rows.length === 0)
      throw new LedgerError(`claim: ${input.businessOperationId} was neither inserted nor found; nothing written`);
    const whole = Number.isInteger(input.leaseMs) ? input : { ...input, leaseMs: Math.ceil(input.leaseMs) };
    const { result, write } = claimTransition(toRecord(rows[0]!), whole, Number(rows[0]!.lease_now));
    if (write === null) return result;
    const record = await c.writes.writeLocked(run, 'claim', rows[0]!.fence, write, input.receipt);
    return { ...result, record } as ClaimResult;
  });
}

/** Each state's old rows, a keyset page at a time: counted (dry run), or exported if asked, then deleted. */
async function prune(c: Parts, options: PruneOptions): Promise<PruneReport> {
  const states = [...checkPruneOptions(options)];
  const { count, report } = pruneTally(options.dryRun);
  const page = options.onPrune !== undefined && !options.dryRun ? c.st.prunePageReceipts : c.st.prunePage;
  for (const state of states) {
    for (let after: unknown[] = [-1, '']; ; ) {
      const values = [state, options.before, ...after, options.batchSize ?? 500];
      const { rows } = await c.db.query<OperationRow & { receipts?: string | null }>('prune', page, values);
      if (rows.length === 0) break;
      const ids = rows.map((r) => r.business_operation_id);
      after = [rows.at(-1)!.created_at, ids.at(-1)];
      if (options.dryRun) {
        count(state, rows.length);
        continue;
      }
      // To export, a row whose record or receipts cannot be read is kept and told; the others are pruned.
      const read = readEach(
        options.onPrune ? rows : [],
        idOfRow,
        (row) => ({ record: toRecord(row), receipts: toReceipts(row.receipts ?? null, row.business_operation_id) }),
        options.onUnreadable,
      );
      for (const { record, receipts } of read) await options.onPrune!(record, receipts);
      const old = [options.onPrune ? read.map((r) => r.record.businessOperationId) : ids, states, options.before];
      const gone = await c.db.query<{ state: OperationState }>('prune', c.st.pruneDelete, old);
      for (const g of gone.rows) count(g.state);
    }
  }
  return report();
}

/** How long a probe of the database clock is trusted. */
const PROBE_EVERY_MS = 10_000;

/** Refuses a claim whose `now` is surely more than `maxSkew` ms off the database's clock: a probe brackets that clock
 * between two local readings, so a slow round trip widens the interval instead of looking like skew. */
function createSkewCheck(db: Db, st: Statements, maxSkew: number) {
  let probedAt = -Infinity;
  /** This process's clock minus the database's, bracketed: [lo, hi] ms. */
  let offset = { lo: 0, hi: 0 };

  return async function checkSkew(now: number, claimOf: string): Promise<void> {
    const entry = Date.now();
    if (entry - probedAt >= PROBE_EVERY_MS || entry < probedAt) {
      const { rows } = await db.query<{ db: string }>('clock', st.clockProbe, []);
      probedAt = Date.now();
      const dbNow = Number(rows[0]!.db);
      offset = { lo: entry - dbNow, hi: probedAt - dbNow };
    }
    const caller = now - entry; // the caller's clock may differ from this process's
    const lo = offset.lo + caller;
    const hi = offset.hi + caller;
    if (lo > maxSkew) throw new ClockSkewError(Math.round(lo), maxSkew, `claim of ${claimOf}`);
    if (hi < -maxSkew) throw new ClockSkewError(Math.round(hi), maxSkew, `claim of ${claimOf}`);
  };
}
