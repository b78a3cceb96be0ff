// The three workloads measured side by side on one store. One "op" is one business operation
// performed once, successfully, with a fresh id:
//   raw         the bare database pattern: INSERT the claim, then UPDATE it complete (two transactions)
//   runner      retrysafe's runner.run against the in-process no-op adapter, on the retrysafe ledger
//   hand        "same content, hand-written": what the retrysafe ledger stores per op (the operation record
//               and its receipt, the same fields and sizes) with the fewest statements — INSERT the claim
//               row with its record, then one UPDATE that writes the final record and the receipt into it
//   layout      PostgreSQL only: the retrysafe ledger's own table and the two statements it sends for a clean
//               op (src/ledger-statements.mjs), with the hand-written side's content: what the ledger's layout
//               costs without the runner's code (runner/layout is then what the runner's code costs)
//   powertools  AWS Powertools' makeIdempotent around the same no-op function, persisted on the same store,
//               with payload validation on (the runner always fingerprints the params)
//   strict      the runner with the ledger's `deferrableWrites: 'sync'`: every commit waits for the disk,
//               also the final `succeeded` the runner may defer (runner: the ledger's default, `defer`)
import { execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import pg from 'pg';
import { LEDGER_STATEMENTS } from './ledger-statements.mjs';
import { createNoopAdapter } from './noop-adapter.mjs';
import { PostgresPersistenceLayer, SqlitePersistenceLayer } from './powertools-persistence.mjs';

const LEASE_MS = 30_000;

/**
 * SQLite durability for all three sides: the SQLite ledger's default is synchronous=FULL (a committed
 * `dispatched` survives power loss); BENCH_SQLITE_SYNC=NORMAL measures all three at NORMAL instead.
 */
export const SQLITE_SYNC = (process.env.BENCH_SQLITE_SYNC ?? 'FULL').toUpperCase();
if (SQLITE_SYNC !== 'FULL' && SQLITE_SYNC !== 'NORMAL') throw new Error(`BENCH_SQLITE_SYNC must be FULL or NORMAL, got ${SQLITE_SYNC}`);
export const SQLITE_PRAGMAS = ['journal_mode = WAL', `synchronous = ${SQLITE_SYNC}`, 'busy_timeout = 10000'];

/** The SQLite driver every side runs on: the ledger's, node:sqlite. */
export async function defaultSqliteDriver() {
  return 'node:sqlite';
}

/** The drivers to compare side by side: the ledger runs on node:sqlite only. */
export async function availableSqliteDrivers() {
  return ['node:sqlite'];
}

/** A raw node:sqlite connection with the ledger's pragmas (what the raw and Powertools sides use). */
export function openSqlite(path) {
  const db = new DatabaseSync(path);
  for (const p of SQLITE_PRAGMAS) db.exec(`PRAGMA ${p}`);
  return db;
}

const noop = async (params) => ({ id: `ord_${params.orderRef}` });
const powertoolsConfig = () =>
  new IdempotencyConfig({
    eventKeyJmesPath: 'orderRef',
    // Like for like: the runner refuses a reused id with other params (params fingerprint); Powertools does
    // the same with payload validation, which hashes the payload and stores the hash with the record.
    payloadValidationJmesPath: '[orderRef, amount]',
    expiresAfterSeconds: 24 * 3600,
    // Not in Lambda: the in-progress expiry comes from the remaining time; give it the runner's lease.
    lambdaContext: { getRemainingTimeInMillis: () => LEASE_MS },
  });

/**
 * `before`: the runner on a baseline build, for before/after measured interleaved in one run.
 * BENCH_BASELINE=<dir> holds `core-dist/` (a copy of packages/core/dist) and `pg-dist/` (of
 * packages/ledger-postgres/dist) built from the baseline commit, and a `node_modules` link to this
 * package's node_modules (so their imports resolve).
 */
function baselineDir() {
  const dir = process.env.BENCH_BASELINE;
  if (!dir) throw new Error('mode `before` needs BENCH_BASELINE=<dir with core-dist/ and pg-dist/ of the baseline build>');
  return dir;
}
const core = (mode) => (mode === 'before' ? import(`${baselineDir()}/core-dist/index.bundle.js`) : import('@retrysafe/core'));

/** Modes with no SQLite or memory-ledger form (the bench leaves them out of those stores' measurements). */
export const POSTGRES_ONLY = new Set(['layout']);

/**
 * @param {{ store: 'sqlite' | 'postgres', mode: 'raw' | 'runner' | 'powertools', sqlitePath?: string, databaseUrl?: string, schema?: string, worker: number }} cfg
 * @returns {Promise<{ op(i: number): Promise<void> | void, close(): Promise<void> }>}
 */
export async function setupWorkload(cfg) {
  const tag = `w${cfg.worker}`;
  if (POSTGRES_ONLY.has(cfg.mode) && cfg.store !== 'postgres') throw new Error(`mode ${cfg.mode} runs on PostgreSQL only, not on ${cfg.store}`);
  if (cfg.store === 'memory') {
    const { createRunner, createMemoryLedger } = await core(cfg.mode);
    return runnerWorkload(createRunner, createMemoryLedger(), tag);
  }
  if (cfg.store === 'dynamodb') {
    // The runner only: raw, hand and Powertools sides are SQL (or Powertools' own DynamoDB layer, not measured here).
    if (cfg.mode !== 'runner') throw new Error(`mode ${cfg.mode} is not measured on DynamoDB`);
    const [{ createRunner }, { dynamoDbLedger }] = await Promise.all([core(cfg.mode), import('./dynamodb.mjs')]);
    return runnerWorkload(createRunner, dynamoDbLedger(cfg), tag);
  }
  if (cfg.store === 'sqlite') {
    if (cfg.mode === 'raw' || cfg.mode === 'rawid') {
      const idFor = rawIds(cfg.mode, tag);
      const db = openSqlite(cfg.sqlitePath, cfg.driver);
      const claim = db.prepare(`INSERT INTO raw_ops (id, state, owner, lease_expires_at, created_at, updated_at) VALUES (?, 'claimed', ?, ?, ?, ?)`);
      const complete = db.prepare(`UPDATE raw_ops SET state = 'succeeded', result = ?, owner = NULL, lease_expires_at = NULL, updated_at = ? WHERE id = ?`);
      return {
        op(i) {
          const id = idFor(i);
          const now = Date.now();
          claim.run(id, tag, now + LEASE_MS, now, now);
          complete.run(JSON.stringify({ id: `ord_${tag}-${i}` }), Date.now(), id);
        },
        async close() {
          db.close();
        },
      };
    }
    if (cfg.mode === 'hand') {
      const db = openSqlite(cfg.sqlitePath, cfg.driver);
      const claim = db.prepare(`INSERT INTO hand_ops (id, state, fence, lease_expires_at, created_at, updated_at, record) VALUES (?, 'dispatched', 1, ?, ?, ?, ?)`);
      const complete = db.prepare(`UPDATE hand_ops SET state = 'succeeded', lease_expires_at = NULL, updated_at = ?, record = ?, receipt = ? WHERE id = ? AND fence = 1`);
      return {
        op(i) {
          const c = handContent(tag, i);
          const now = Date.now();
          claim.run(c.id, now + LEASE_MS, now, now, c.claimed(now));
          const done = Date.now();
          complete.run(done, c.succeeded(now, done), c.receipt(now, done), c.id);
        },
        async close() {
          db.close();
        },
      };
    }
    if (cfg.mode === 'powertools') {
      const db = openSqlite(cfg.sqlitePath, cfg.driver);
      const fn = makeIdempotent(noop, { persistenceStore: new SqlitePersistenceLayer(db), config: powertoolsConfig() });
      return { op: (i) => fn({ orderRef: `${tag}-${i}`, amount: 1 }), async close() { db.close(); } };
    }
    const { createRunner, ...baseline } = await core(cfg.mode);
    // A baseline build from before the ledger had its own package has it in core.
    const createSqliteLedger = baseline.createSqliteLedger ?? (await import('@retrysafe/ledger-sqlite')).createSqliteLedger;
    const ledger = createSqliteLedger({ path: cfg.sqlitePath, synchronous: SQLITE_SYNC, ...deferrable(cfg.mode) });
    return runnerWorkload(createRunner, ledger, tag);
  }

  if (cfg.mode === 'raw' || cfg.mode === 'rawid') {
    const idFor = rawIds(cfg.mode, tag);
    const client = new pg.Client({ connectionString: cfg.databaseUrl });
    await client.connect();
    const t = `"${cfg.schema}".raw_ops`;
    return {
      async op(i) {
        const id = idFor(i);
        const now = Date.now();
        await client.query({ name: 'claim', text: `INSERT INTO ${t} (id, state, owner, lease_expires_at, created_at, updated_at) VALUES ($1, 'claimed', $2, $3, $4, $4)`, values: [id, tag, now + LEASE_MS, now] });
        await client.query({ name: 'complete', text: `UPDATE ${t} SET state = 'succeeded', result = $1, owner = NULL, lease_expires_at = NULL, updated_at = $2 WHERE id = $3`, values: [JSON.stringify({ id: `ord_${tag}-${i}` }), Date.now(), id] });
      },
      async close() {
        await client.end();
      },
    };
  }
  if (cfg.mode === 'hand') {
    const client = new pg.Client({ connectionString: cfg.databaseUrl });
    await client.connect();
    const t = `"${cfg.schema}".hand_ops`;
    return {
      async op(i) {
        const c = handContent(tag, i);
        const now = Date.now();
        await client.query({ name: 'hand-claim', text: `INSERT INTO ${t} (id, state, fence, lease_expires_at, created_at, updated_at, record) VALUES ($1, 'dispatched', 1, $2, $3, $3, $4)`, values: [c.id, now + LEASE_MS, now, c.claimed(now)] });
        const done = Date.now();
        await client.query({ name: 'hand-complete', text: `UPDATE ${t} SET state = 'succeeded', lease_expires_at = NULL, updated_at = $1, record = $2, receipt = $3 WHERE id = $4 AND fence = 1`, values: [done, c.succeeded(now, done), c.receipt(now, done), c.id] });
      },
      async close() {
        await client.end();
      },
    };
  }
  if (cfg.mode === 'layout') {
    // The ledger's own table (migrated by the ledger) and the two statements it sends for a clean op, with
    // the hand-written side's content: what the ledger's layout costs the server and pg, with none of the
    // runner's code (no canonical JSON, fingerprints, receipts sealed, card or decision).
    const client = new pg.Client({ connectionString: cfg.databaseUrl });
    await client.connect();
    const ops = `"${cfg.schema}".retrysafe_operations`;
    const claim = LEDGER_STATEMENTS.claim(ops);
    const complete = LEDGER_STATEMENTS.complete(ops);
    const owner = `bench:${process.pid}:${tag}`;
    return {
      async op(i) {
        const c = handContent(tag, i);
        const now = Date.now();
        const claimed = await client.query({ name: 'layout-claim', text: claim, values: [c.id, 'noop', 'noop.orders.create', c.intentFingerprint, c.paramsFingerprint, c.params, c.id, owner, LEASE_MS, now] });
        if (claimed.rowCount !== 1) throw new Error(`layout: the claim of ${c.id} wrote no row`);
        const done = Date.now();
        const completed = await client.query({ name: 'layout-complete', text: complete, values: ['succeeded', done, 'succeeded', `{"id":"${c.ref}"}`, c.ref, c.id, 1, 1, c.receipt(now, done), c.hash, claimed.rows[0].xmin] });
        if (completed.rowCount !== 1) throw new Error(`layout: the completion of ${c.id} wrote no row`);
      },
      async close() {
        await client.end();
      },
    };
  }
  if (cfg.mode === 'powertools') {
    const client = new pg.Client({ connectionString: cfg.databaseUrl });
    await client.connect();
    const fn = makeIdempotent(noop, { persistenceStore: new PostgresPersistenceLayer(client, `"${cfg.schema}".powertools_idempotency`), config: powertoolsConfig() });
    return { op: (i) => fn({ orderRef: `${tag}-${i}`, amount: 1 }), async close() { await client.end(); } };
  }
  const { createRunner } = await core(cfg.mode);
  const { createPostgresLedger } = cfg.mode === 'before' ? await import(`${baselineDir()}/pg-dist/index.js`) : await import('@retrysafe/ledger-postgres');
  // One runner.run at a time per worker: one connection does; a second covers the claim transaction.
  const ledger = createPostgresLedger({ connectionString: cfg.databaseUrl, schema: cfg.schema, poolSize: 2, migrate: false, ...deferrable(cfg.mode) });
  return runnerWorkload(createRunner, ledger, tag);
}

/**
 * The ids of the raw pattern: `raw` numbers them per worker (`<tag>-<i>`, so new ids sort together: each claim
 * appends to the `id` index); `rawid` uses content-derived ids of the ledger's shape (contentId), so each claim
 * is a random insert into it, as the ledger's and the hand-written side's are. rawid is the floor of what a store
 * with a unique index on content-derived ids pays as it grows (the scale part's bound).
 */
const rawIds = (mode, tag) => (mode === 'raw' ? (i) => `${tag}-${i}` : (i) => contentId(tag, i));

/** The ledger option of a runner mode: `strict` syncs every commit; the others keep the ledger's default. */
const deferrable = (mode) => (mode === 'strict' ? { deferrableWrites: 'sync' } : {});

function runnerWorkload(createRunner, ledger, tag) {
  const adapter = createNoopAdapter({ remember: false });
  const runner = createRunner({ ledger, owner: `bench:${process.pid}:${tag}`, policy: { leaseMs: LEASE_MS } });
  return {
    async op(i) {
      const res = await runner.run(adapter, 'orders.create', { params: { orderRef: `${tag}-${i}`, amount: 1 } });
      if (res.status !== 'done') throw new Error(`runner returned ${res.status} for ${tag}-${i}`);
    },
    async close() {
      await ledger.close();
    },
  };
}

const paramsOf = (tag, i) => `{"orderRef":"${tag}-${i}","amount":1}`;
const intentOf = (params) => `sha256:${createHash('sha256').update(`noop.orders.create${params}`).digest('hex')}`;
/** An id in the ledger's shape: the no-op adapter's operation, then 32 hex digits of the intent fingerprint. */
const idOf = (intent) => `noop.orders.create:${intent.slice(7, 39)}`;
/**
 * A content-derived id of op `i` in the ledger's shape, derived as hand-written code would (one SHA-256 of
 * the params): the hand-written side's id. The ledger's own ids digest a canonical form, so they differ,
 * but they are as random and as long.
 */
export const contentId = (tag, i) => idOf(intentOf(paramsOf(tag, i)));

/**
 * The hand-written baseline's content for op `i`: the operation record (claimed, then succeeded) and
 * the receipt, with the same fields, shapes and sizes the retrysafe ledger stores, written as literals
 * (no canonical JSON, one SHA-256 for the params fingerprint — what hand-written code would do).
 */
export function handContent(tag, i) {
  const params = paramsOf(tag, i);
  const fp = `sha256:${createHash('sha256').update(params).digest('hex')}`;
  const intent = intentOf(params);
  const id = idOf(intent);
  const ref = `ord_${tag}-${i}`;
  const hash = createHash('sha256').update(id).update(fp).digest('hex');
  const base = `{"businessOperationId":"${id}","provider":"noop","operation":"noop.orders.create","intentFingerprint":"${intent}","paramsFingerprint":"${fp}","params":${params},"providerKey":"${id}"`;
  return {
    id,
    params,
    paramsFingerprint: fp,
    intentFingerprint: intent,
    ref,
    hash,
    claimed: (now) => `${base},"state":"dispatched","fence":1,"leaseOwner":"bench:${tag}","leaseExpiresAt":${now + LEASE_MS},"updatedAt":${now},"createdAt":${now},"firstDispatchedAt":${now},"attemptCount":1,"lastOutcome":null,"result":null,"providerRef":null,"statusRef":null,"handoff":null,"resolution":null,"receiptChain":{"head":null,"length":0}}`,
    succeeded: (now, done) => `${base},"state":"succeeded","fence":1,"leaseOwner":null,"leaseExpiresAt":null,"updatedAt":${done},"createdAt":${now},"firstDispatchedAt":${now},"attemptCount":1,"lastOutcome":"succeeded","result":{"id":"${ref}"},"providerRef":"${ref}","statusRef":null,"handoff":null,"resolution":null,"receiptChain":{"head":"${hash}","length":1}}`,
    receipt: (now, done) => `{"businessOperationId":"${id}","seq":1,"runId":"run_${randomUUID()}","attemptId":"att_${randomUUID()}","provider":"noop","operation":"noop.orders.create","kind":"dispatch","startedAt":"${new Date(now).toISOString()}","finishedAt":"${new Date(done).toISOString()}","outcome":"succeeded","decision":{"action":"complete","reason":"the provider performed it"},"providerKey":"${id}","providerRef":"${ref}","requestFingerprint":"${fp}","prevHash":null,"hash":"${hash}"}`,
  };
}

const HAND_TABLE = (t, int) => `CREATE TABLE ${t} (id TEXT PRIMARY KEY, state TEXT NOT NULL, fence ${int} NOT NULL, lease_expires_at ${int}, created_at ${int} NOT NULL, updated_at ${int} NOT NULL, record TEXT NOT NULL, receipt TEXT)`;

/** Tables the raw, hand-written and Powertools sides write to (the runner's ledger migrates its own). */
export function prepareSqlite(path, driver) {
  const db = openSqlite(path, driver);
  db.exec(`CREATE TABLE raw_ops (id TEXT PRIMARY KEY, state TEXT NOT NULL, owner TEXT, lease_expires_at INTEGER, result TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`);
  db.exec(HAND_TABLE('hand_ops', 'INTEGER'));
  db.close();
}

/** `mode` 'before': the ledger's tables are migrated by the baseline build's own migrations (its layout, not this one's). */
export async function preparePostgres(databaseUrl, schema, mode) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA "${schema}"`);
    await client.query(`CREATE TABLE "${schema}".raw_ops (id text PRIMARY KEY, state text NOT NULL, owner text, lease_expires_at bigint, result text, created_at bigint NOT NULL, updated_at bigint NOT NULL)`);
    await client.query(HAND_TABLE(`"${schema}".hand_ops`, 'bigint'));
    await PostgresPersistenceLayer.createTable(client, `"${schema}".powertools_idempotency`);
    const { migrate } = mode === 'before' ? await import(`${baselineDir()}/pg-dist/index.js`) : await import('@retrysafe/ledger-postgres');
    await migrate(client, schema);
  } finally {
    await client.end();
  }
}

export async function dropPostgres(databaseUrl, schema) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/**
 * A reader of the CPU time (µs, user + system) the PostgreSQL server at `databaseUrl` has used so far: its
 * postmaster's own and its children's (backends, WAL writer, checkpointer …), live ones from
 * /proc/<pid>/stat and exited ones from the postmaster's reaped-children counters. null when the server
 * is not a process of this machine (or /proc cannot be read): the bench then prints n/a.
 */
export async function postgresServerCpu(databaseUrl) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const stat = (pid) => {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(f[1]), own: Number(f[11]) + Number(f[12]), reaped: Number(f[13]) + Number(f[14]) };
  };
  // The backend serving this connection is a child of the postmaster: read while it is alive.
  let postmaster;
  try {
    postmaster = stat(Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid)).ppid;
    stat(postmaster);
  } catch {
    return null;
  } finally {
    await client.end();
  }
  const tickUs = 1e6 / clockTicks();
  return () => {
    let ticks = 0;
    try {
      const pm = stat(postmaster);
      ticks += pm.own + pm.reaped;
    } catch {
      return null;
    }
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const s = stat(name);
        if (s.ppid === postmaster) ticks += s.own;
      } catch {
        /* gone meanwhile */
      }
    }
    return ticks * tickUs;
  };
}
function clockTicks() {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
}

/** CHECKPOINT (needs a superuser, as the bench's bytes-per-op figure does): dirty buffers written out before a measurement. */
export async function postgresCheckpoint(databaseUrl) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('CHECKPOINT');
  } finally {
    await client.end();
  }
}

/** The server settings that decide what a commit costs, printed next to the numbers. */
export async function postgresSettings(databaseUrl) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const q = async (sql) => (await client.query(sql)).rows[0];
    const v = await q('SHOW server_version');
    const f = await q('SHOW fsync');
    const sc = await q('SHOW synchronous_commit');
    return `${v.server_version}, fsync=${f.fsync}, synchronous_commit=${sc.synchronous_commit}`;
  } finally {
    await client.end();
  }
}
