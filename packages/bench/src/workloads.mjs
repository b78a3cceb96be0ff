// The workloads measured side by side on one store. One "op" is one business operation performed
// once, successfully, with a fresh id:
//   raw         the bare database pattern: INSERT the claim, then UPDATE it complete (two transactions)
//   hand        what the ledger stores per op (the operation record and its receipt as JSON, the same
//               fields and sizes) written by hand in the same two statements, primary key only
//   runner      retrysafe's runner.run against the in-process no-op adapter, on the retrysafe ledger
//   before      `runner` on the baseline build named by BENCH_BASELINE (its runner and its ledgers)
//   powertools  AWS Powertools' makeIdempotent around the same no-op function, persisted on the same store,
//               with payload validation on (the runner always fingerprints the params)
import { createHash, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { pathToFileURL } from 'node:url';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import pg from 'pg';
import { createNoopAdapter, noopCard } from './noop-adapter.mjs';
import { PostgresPersistenceLayer, SqlitePersistenceLayer } from './powertools-persistence.mjs';

const LEASE_MS = 30_000;

/**
 * SQLite durability for all three sides: the SQLite ledger's default is synchronous=FULL (a committed
 * `dispatched` survives power loss); BENCH_SQLITE_SYNC=NORMAL measures all three at NORMAL instead.
 */
export const SQLITE_SYNC = (process.env.BENCH_SQLITE_SYNC ?? 'FULL').toUpperCase();
if (SQLITE_SYNC !== 'FULL' && SQLITE_SYNC !== 'NORMAL')
  throw new Error(`BENCH_SQLITE_SYNC must be FULL or NORMAL, got ${SQLITE_SYNC}`);
export const SQLITE_PRAGMAS = ['journal_mode = WAL', `synchronous = ${SQLITE_SYNC}`, 'busy_timeout = 10000'];

/** A raw node:sqlite connection with the ledger's pragmas (what the raw, hand and Powertools sides use). */
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
 * `before`: the runner and ledgers of a baseline build, measured in the same run as this one.
 * BENCH_BASELINE=<dir> is a checkout of the baseline commit, installed and built: its own
 * node_modules resolve what its dist imports. Its core still holds the SQLite ledger.
 */
function baseline(path) {
  const dir = process.env.BENCH_BASELINE;
  if (!dir) throw new Error('mode `before` needs BENCH_BASELINE=<a built checkout of the baseline commit>');
  return import(pathToFileURL(join(dir, path)).href);
}
const baselineCore = () => baseline('packages/core/dist/index.bundle.js');
const baselinePostgres = () => baseline('packages/ledger-postgres/dist/index.js');

/** The no-op card as the baseline's own validator reads it: a field added to the card format since is left out. */
async function baselineCard() {
  const { validateCard } = await baseline('packages/contract/dist/index.js');
  const card = structuredClone(noopCard);
  for (const { path, message } of validateCard(card).problems) {
    if (message !== 'unexpected field') continue;
    const keys = path.split('.');
    delete keys.slice(0, -1).reduce((o, k) => o[k], card)[keys.at(-1)];
  }
  return card;
}

async function sqliteLedger(mode, path) {
  if (mode === 'before') {
    // A baseline from before the ledgers were packages has the SQLite ledger in its core.
    const {
      createRunner,
      createSqliteLedger = (await baseline('packages/ledger-sqlite/dist/index.js')).createSqliteLedger,
    } = await baselineCore();
    return { createRunner, ledger: createSqliteLedger({ path, synchronous: SQLITE_SYNC }) };
  }
  const { createRunner } = await import('@retrysafe/core');
  const { createSqliteLedger } = await import('@retrysafe/ledger-sqlite');
  return { createRunner, ledger: createSqliteLedger({ path, synchronous: SQLITE_SYNC }) };
}

async function postgresLedger(mode, connectionString, schema) {
  const { createRunner } = mode === 'before' ? await baselineCore() : await import('@retrysafe/core');
  const { createPostgresLedger } =
    mode === 'before' ? await baselinePostgres() : await import('@retrysafe/ledger-postgres');
  // One runner.run at a time per worker: one connection does; a second covers the claim transaction.
  return { createRunner, ledger: createPostgresLedger({ connectionString, schema, poolSize: 2, migrate: false }) };
}

/**
 * @param {{ store: 'sqlite' | 'postgres' | 'dynamodb', mode: 'raw' | 'hand' | 'runner' | 'before' | 'powertools', sqlitePath?: string, databaseUrl?: string, schema?: string, worker: number | string }} cfg
 * @returns {Promise<{ op(i: number): Promise<void> | void, close(): Promise<void> }>}
 */
export async function setupWorkload(cfg) {
  const tag = `w${cfg.worker}`;
  if (cfg.store === 'dynamodb') {
    // The runner only: raw, hand and Powertools sides are SQL (or Powertools' own DynamoDB layer, not measured here).
    if (cfg.mode !== 'runner') throw new Error(`mode ${cfg.mode} is not measured on DynamoDB`);
    const [{ createRunner }, { dynamoDbLedger }] = await Promise.all([
      import('@retrysafe/core'),
      import('./dynamodb.mjs'),
    ]);
    return runnerWorkload(createRunner, dynamoDbLedger(cfg), tag);
  }
  if (cfg.mode === 'runner' || cfg.mode === 'before') {
    const { createRunner, ledger } =
      cfg.store === 'sqlite'
        ? await sqliteLedger(cfg.mode, cfg.sqlitePath)
        : await postgresLedger(cfg.mode, cfg.databaseUrl, cfg.schema);
    return runnerWorkload(createRunner, ledger, tag, cfg.mode === 'before' ? await baselineCard() : noopCard);
  }
  const work = cfg.store === 'sqlite' ? SQLITE_WORKLOADS[cfg.mode] : POSTGRES_WORKLOADS[cfg.mode];
  if (!work) throw new Error(`unknown bench mode ${cfg.mode} (raw, hand, runner, before, powertools)`);
  return work(cfg, tag);
}

const SQLITE_WORKLOADS = {
  raw(cfg, tag) {
    const db = openSqlite(cfg.sqlitePath);
    const claim = db.prepare(
      `INSERT INTO raw_ops (id, state, owner, lease_expires_at, created_at, updated_at) VALUES (?, 'claimed', ?, ?, ?, ?)`,
    );
    const complete = db.prepare(
      `UPDATE raw_ops SET state = 'succeeded', result = ?, owner = NULL, lease_expires_at = NULL, updated_at = ? WHERE id = ?`,
    );
    return {
      op(i) {
        const id = `${tag}-${i}`;
        const now = Date.now();
        claim.run(id, tag, now + LEASE_MS, now, now);
        complete.run(JSON.stringify({ id: `ord_${tag}-${i}` }), Date.now(), id);
      },
      async close() {
        db.close();
      },
    };
  },
  hand(cfg, tag) {
    const db = openSqlite(cfg.sqlitePath);
    const claim = db.prepare(
      `INSERT INTO hand_ops (id, state, fence, lease_expires_at, created_at, updated_at, record) VALUES (?, 'dispatched', 1, ?, ?, ?, ?)`,
    );
    const complete = db.prepare(
      `UPDATE hand_ops SET state = 'succeeded', lease_expires_at = NULL, updated_at = ?, record = ?, receipt = ? WHERE id = ? AND fence = 1`,
    );
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
  },
  powertools(cfg, tag) {
    const db = openSqlite(cfg.sqlitePath);
    const fn = makeIdempotent(noop, { persistenceStore: new SqlitePersistenceLayer(db), config: powertoolsConfig() });
    return {
      op: (i) => fn({ orderRef: `${tag}-${i}`, amount: 1 }),
      async close() {
        db.close();
      },
    };
  },
};

async function pgClient(cfg) {
  const client = new pg.Client({ connectionString: cfg.databaseUrl });
  await client.connect();
  return client;
}

const POSTGRES_WORKLOADS = {
  async raw(cfg, tag) {
    const client = await pgClient(cfg);
    const t = `"${cfg.schema}".raw_ops`;
    return {
      async op(i) {
        const id = `${tag}-${i}`;
        const now = Date.now();
        await client.query({
          name: 'claim',
          text: `INSERT INTO ${t} (id, state, owner, lease_expires_at, created_at, updated_at) VALUES ($1, 'claimed', $2, $3, $4, $4)`,
          values: [id, tag, now + LEASE_MS, now],
        });
        await client.query({
          name: 'complete',
          text: `UPDATE ${t} SET state = 'succeeded', result = $1, owner = NULL, lease_expires_at = NULL, updated_at = $2 WHERE id = $3`,
          values: [JSON.stringify({ id: `ord_${tag}-${i}` }), Date.now(), id],
        });
      },
      async close() {
        await client.end();
      },
    };
  },
  async hand(cfg, tag) {
    const client = await pgClient(cfg);
    const t = `"${cfg.schema}".hand_ops`;
    return {
      async op(i) {
        const c = handContent(tag, i);
        const now = Date.now();
        await client.query({
          name: 'hand-claim',
          text: `INSERT INTO ${t} (id, state, fence, lease_expires_at, created_at, updated_at, record) VALUES ($1, 'dispatched', 1, $2, $3, $3, $4)`,
          values: [c.id, now + LEASE_MS, now, c.claimed(now)],
        });
        const done = Date.now();
        await client.query({
          name: 'hand-complete',
          text: `UPDATE ${t} SET state = 'succeeded', lease_expires_at = NULL, updated_at = $1, record = $2, receipt = $3 WHERE id = $4 AND fence = 1`,
          values: [done, c.succeeded(now, done), c.receipt(now, done), c.id],
        });
      },
      async close() {
        await client.end();
      },
    };
  },
  async powertools(cfg, tag) {
    const client = await pgClient(cfg);
    const fn = makeIdempotent(noop, {
      persistenceStore: new PostgresPersistenceLayer(client, `"${cfg.schema}".powertools_idempotency`),
      config: powertoolsConfig(),
    });
    return {
      op: (i) => fn({ orderRef: `${tag}-${i}`, amount: 1 }),
      async close() {
        await client.end();
      },
    };
  },
};

function runnerWorkload(createRunner, ledger, tag, card) {
  const adapter = createNoopAdapter({ remember: false, card });
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
    claimed: (now) =>
      `${base},"state":"dispatched","fence":1,"leaseOwner":"bench:${tag}","leaseExpiresAt":${now + LEASE_MS},"updatedAt":${now},"createdAt":${now},"firstDispatchedAt":${now},"attemptCount":1,"lastOutcome":null,"result":null,"providerRef":null,"statusRef":null,"handoff":null,"resolution":null,"receiptChain":{"head":null,"length":0}}`,
    succeeded: (now, done) =>
      `${base},"state":"succeeded","fence":1,"leaseOwner":null,"leaseExpiresAt":null,"updatedAt":${done},"createdAt":${now},"firstDispatchedAt":${now},"attemptCount":1,"lastOutcome":"succeeded","result":{"id":"${ref}"},"providerRef":"${ref}","statusRef":null,"handoff":null,"resolution":null,"receiptChain":{"head":"${hash}","length":1}}`,
    receipt: (now, done) =>
      `{"businessOperationId":"${id}","seq":1,"runId":"run_${randomUUID()}","attemptId":"att_${randomUUID()}","provider":"noop","operation":"noop.orders.create","kind":"dispatch","startedAt":"${new Date(now).toISOString()}","finishedAt":"${new Date(done).toISOString()}","outcome":"succeeded","decision":{"action":"complete","reason":"the provider performed it"},"providerKey":"${id}","providerRef":"${ref}","requestFingerprint":"${fp}","prevHash":null,"hash":"${hash}"}`,
  };
}

const HAND_TABLE = (t, int) =>
  `CREATE TABLE ${t} (id TEXT PRIMARY KEY, state TEXT NOT NULL, fence ${int} NOT NULL, lease_expires_at ${int}, created_at ${int} NOT NULL, updated_at ${int} NOT NULL, record TEXT NOT NULL, receipt TEXT)`;

/** Tables the raw, hand-written and Powertools sides write to (the runner's ledger migrates its own). */
export function prepareSqlite(path) {
  const db = openSqlite(path);
  db.exec(
    `CREATE TABLE raw_ops (id TEXT PRIMARY KEY, state TEXT NOT NULL, owner TEXT, lease_expires_at INTEGER, result TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`,
  );
  db.exec(HAND_TABLE('hand_ops', 'INTEGER'));
  db.close();
}

/** `mode` 'before': the ledger's tables are made by the baseline build's own migrations (its schema, not this one's). */
export async function preparePostgres(databaseUrl, schema, mode) {
  await withClient(databaseUrl, async (client) => {
    await client.query(`CREATE SCHEMA "${schema}"`);
    await client.query(
      `CREATE TABLE "${schema}".raw_ops (id text PRIMARY KEY, state text NOT NULL, owner text, lease_expires_at bigint, result text, created_at bigint NOT NULL, updated_at bigint NOT NULL)`,
    );
    await client.query(HAND_TABLE(`"${schema}".hand_ops`, 'bigint'));
    await PostgresPersistenceLayer.createTable(client, `"${schema}".powertools_idempotency`);
    const { migrate } = mode === 'before' ? await baselinePostgres() : await import('@retrysafe/ledger-postgres');
    await migrate(client, schema);
  });
}

/** Runs `fn` on one connection to `databaseUrl`, closed afterwards. */
export async function withClient(databaseUrl, fn) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function dropPostgres(databaseUrl, ...schemas) {
  await withClient(databaseUrl, async (client) => {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  });
}

/** CHECKPOINT (needs a superuser, as the bench's bytes-per-op figure does): dirty buffers written out before a measurement. */
export async function postgresCheckpoint(databaseUrl) {
  await withClient(databaseUrl, (client) => client.query('CHECKPOINT'));
}

/** The server settings that decide what a commit costs, printed next to the numbers. */
export async function postgresSettings(databaseUrl) {
  return withClient(databaseUrl, async (client) => {
    const q = async (sql) => (await client.query(sql)).rows[0];
    const v = await q('SHOW server_version');
    const f = await q('SHOW fsync');
    const sc = await q('SHOW synchronous_commit');
    return `${v.server_version}, fsync=${f.fsync}, synchronous_commit=${sc.synchronous_commit}`;
  });
}
