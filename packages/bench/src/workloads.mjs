// The three workloads measured side by side on one store. One "op" is one business operation
// performed once, successfully, with a fresh id:
//   raw         the bare database pattern: INSERT the claim, then UPDATE it complete (two transactions)
//   runner      retrysafe's runner.run against the in-process no-op adapter, on the retrysafe ledger
//   powertools  AWS Powertools' makeIdempotent around the same no-op function, persisted on the same store
import { createRequire } from 'node:module';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import pg from 'pg';
import { createNoopAdapter } from './noop-adapter.mjs';
import { PostgresPersistenceLayer, SqlitePersistenceLayer } from './powertools-persistence.mjs';

const require = createRequire(import.meta.url);
const LEASE_MS = 30_000;

/**
 * SQLite durability for all three sides: the SQLite ledger's default is synchronous=FULL (a committed
 * `dispatched` survives power loss); BENCH_SQLITE_SYNC=NORMAL measures all three at NORMAL instead.
 */
export const SQLITE_SYNC = (process.env.BENCH_SQLITE_SYNC ?? 'FULL').toUpperCase();
if (SQLITE_SYNC !== 'FULL' && SQLITE_SYNC !== 'NORMAL') throw new Error(`BENCH_SQLITE_SYNC must be FULL or NORMAL, got ${SQLITE_SYNC}`);
export const SQLITE_PRAGMAS = ['journal_mode = WAL', `synchronous = ${SQLITE_SYNC}`, 'busy_timeout = 10000'];

/** The SQLite driver the ledger's `auto` picks in this runtime (node:sqlite on Node >= 22.13). */
export async function defaultSqliteDriver() {
  const { sqliteDrivers } = await import('@retrysafe/core');
  return sqliteDrivers().find((d) => d.available)?.driver ?? 'better-sqlite3';
}

/** Drivers this process can load (both on Node >= 22.13 with a better-sqlite3 built for it). */
export async function availableSqliteDrivers() {
  const { sqliteDrivers } = await import('@retrysafe/core');
  return sqliteDrivers().filter((d) => d.available).map((d) => d.driver);
}

/** A raw connection on `driver`: both bindings share exec/prepare/run/get/close, which is all the raw and Powertools sides use. */
function openSqlite(path, driver = 'better-sqlite3') {
  let db;
  if (driver === 'node:sqlite') {
    const { DatabaseSync } = process.getBuiltinModule('node:sqlite');
    db = new DatabaseSync(path);
  } else {
    const Database = require('better-sqlite3');
    db = new Database(path);
  }
  for (const p of SQLITE_PRAGMAS) db.exec(`PRAGMA ${p}`);
  return db;
}

const noop = async (params) => ({ id: `ord_${params.orderRef}` });
const powertoolsConfig = () =>
  new IdempotencyConfig({
    eventKeyJmesPath: 'orderRef',
    expiresAfterSeconds: 24 * 3600,
    // Not in Lambda: the in-progress expiry comes from the remaining time; give it the runner's lease.
    lambdaContext: { getRemainingTimeInMillis: () => LEASE_MS },
  });

/**
 * @param {{ store: 'sqlite' | 'postgres', mode: 'raw' | 'runner' | 'powertools', sqlitePath?: string, databaseUrl?: string, schema?: string, worker: number }} cfg
 * @returns {Promise<{ op(i: number): Promise<void> | void, close(): Promise<void> }>}
 */
export async function setupWorkload(cfg) {
  const tag = `w${cfg.worker}`;
  if (cfg.store === 'sqlite') {
    if (cfg.mode === 'raw') {
      const db = openSqlite(cfg.sqlitePath, cfg.driver);
      const claim = db.prepare(`INSERT INTO raw_ops (id, state, owner, lease_expires_at, created_at, updated_at) VALUES (?, 'claimed', ?, ?, ?, ?)`);
      const complete = db.prepare(`UPDATE raw_ops SET state = 'succeeded', result = ?, owner = NULL, lease_expires_at = NULL, updated_at = ? WHERE id = ?`);
      return {
        op(i) {
          const id = `${tag}-${i}`;
          const now = Date.now();
          claim.run(id, tag, now + LEASE_MS, now, now);
          complete.run(JSON.stringify({ id: `ord_${id}` }), Date.now(), id);
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
    const { createRunner, createSqliteLedger } = await import('@retrysafe/core');
    const ledger = createSqliteLedger({ path: cfg.sqlitePath, synchronous: SQLITE_SYNC, driver: cfg.driver ?? 'auto' });
    return runnerWorkload(createRunner, ledger, tag);
  }

  if (cfg.mode === 'raw') {
    const client = new pg.Client({ connectionString: cfg.databaseUrl });
    await client.connect();
    const t = `"${cfg.schema}".raw_ops`;
    return {
      async op(i) {
        const id = `${tag}-${i}`;
        const now = Date.now();
        await client.query({ name: 'claim', text: `INSERT INTO ${t} (id, state, owner, lease_expires_at, created_at, updated_at) VALUES ($1, 'claimed', $2, $3, $4, $4)`, values: [id, tag, now + LEASE_MS, now] });
        await client.query({ name: 'complete', text: `UPDATE ${t} SET state = 'succeeded', result = $1, owner = NULL, lease_expires_at = NULL, updated_at = $2 WHERE id = $3`, values: [JSON.stringify({ id: `ord_${id}` }), Date.now(), id] });
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
  const { createRunner } = await import('@retrysafe/core');
  const { createPostgresLedger } = await import('@retrysafe/ledger-postgres');
  // One runner.run at a time per worker: one connection does; a second covers the claim transaction.
  const ledger = createPostgresLedger({ connectionString: cfg.databaseUrl, schema: cfg.schema, poolSize: 2, migrate: false });
  return runnerWorkload(createRunner, ledger, tag);
}

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

/** Tables the raw and Powertools sides write to (the runner's ledger migrates its own). */
export function prepareSqlite(path, driver) {
  const db = openSqlite(path, driver);
  db.exec(`CREATE TABLE raw_ops (id TEXT PRIMARY KEY, state TEXT NOT NULL, owner TEXT, lease_expires_at INTEGER, result TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`);
  db.close();
}

export async function preparePostgres(databaseUrl, schema) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA "${schema}"`);
    await client.query(`CREATE TABLE "${schema}".raw_ops (id text PRIMARY KEY, state text NOT NULL, owner text, lease_expires_at bigint, result text, created_at bigint NOT NULL, updated_at bigint NOT NULL)`);
    await PostgresPersistenceLayer.createTable(client, `"${schema}".powertools_idempotency`);
    const { migrate } = await import('@retrysafe/ledger-postgres');
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
