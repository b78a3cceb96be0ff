import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { asBusinessOperationId, type ClaimInput, type ProviderKey } from '@retrysafe/contract';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { createPostgresLedger, type PostgresLedger, type PostgresLedgerOptions } from '../src/index.js';

/**
 * The tests need a real PostgreSQL: `.ci/run` starts one and exports DATABASE_URL
 * (`source .ci/start-postgres.sh` does the same on a workstation). Without it the tests fail here,
 * loudly; they never skip.
 */
export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) {
    throw new Error(
      'DATABASE_URL is not set: the @retrysafe/ledger-postgres tests need a real PostgreSQL. ' +
        'Run `source .ci/start-postgres.sh` (it starts one on 127.0.0.1 and exports DATABASE_URL), then rerun.',
    );
  }
  const host = new URL(url).hostname;
  if (!['127.0.0.1', 'localhost', '::1', '[::1]', ''].includes(host))
    throw new Error(`DATABASE_URL must point at loopback in tests, got host ${host}`);
  return url;
}

/** A fresh schema name per test file (and per call), so test files never see each other's rows. */
export function freshSchema(label: string): string {
  return `rs_t_${label.replace(/[^a-z0-9_]/g, '_').slice(0, 30)}_${randomBytes(4).toString('hex')}`;
}

const testSchemas: string[] = [];

/** A fresh schema, dropped after the test file's last test. */
export function testSchema(label: string): string {
  const schema = freshSchema(label);
  testSchemas.push(schema);
  return schema;
}

// Registered when a test file imports this module, so it runs after that file's own afterAll hooks
// have closed the ledgers that use the schemas.
afterAll(async () => {
  for (const s of testSchemas.splice(0)) await dropSchema(s);
});

/** A claim of `id` by `owner` at `now`, its fingerprints and key derived from `id`. */
export const claimOf = (id: string, owner: string, now: number, leaseMs = 30_000): ClaimInput => ({
  businessOperationId: asBusinessOperationId(id),
  provider: 'sandbox',
  operation: 'sandbox.records.create',
  intentFingerprint: `i-${id}`,
  paramsFingerprint: `p-${id}`,
  params: { ref: id },
  providerKey: `k-${id}` as ProviderKey,
  owner,
  leaseMs,
  now,
});

/** A ledger on `schema` with a pool of two, its schema migrated. */
export async function readyLedger(
  schema: string,
  options: Partial<PostgresLedgerOptions> = {},
): Promise<PostgresLedger> {
  const ledger = createPostgresLedger({ connectionString: databaseUrl(), schema, poolSize: 2, ...options });
  await ledger.ready();
  return ledger;
}

/** A ledger on a fresh schema for the test file: ready before its first test, closed after its last. */
export function fileLedger(label: string): () => PostgresLedger {
  const schema = testSchema(label);
  let ledger: PostgresLedger | undefined;
  beforeAll(async () => {
    ledger = await readyLedger(schema);
  });
  afterAll(async () => {
    await ledger?.close();
  });
  return () => ledger!;
}

/** A pool of `max` connections and a fresh schema for one test; the pool ended and the schema dropped after. */
export async function withSchemaPool(
  label: string,
  max: number,
  test: (pool: pg.Pool, schema: string) => Promise<void>,
): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl(), max });
  const schema = freshSchema(label);
  try {
    await test(pool, schema);
  } finally {
    await pool.end();
    await dropSchema(schema);
  }
}

export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl() });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/**
 * A loopback TCP relay in front of PostgreSQL that a test can cut: `cut()` destroys every open
 * connection and refuses new ones; `dropResponses()` keeps forwarding client bytes to the server
 * but never passes the server's answers back (the write commits, the client never hears).
 */
export async function startPgRelay(
  target: string,
): Promise<{ url: string; cut(): void; dropResponses(): void; close(): Promise<void> }> {
  const t = new URL(target);
  const sockets = new Set<net.Socket>();
  let mode: 'pass' | 'cut' | 'drop' = 'pass';
  const server = net.createServer((client) => {
    if (mode === 'cut') return client.destroy();
    const upstream = net.connect(Number(t.port || 5432), t.hostname);
    sockets.add(client);
    sockets.add(upstream);
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => {
      if (mode === 'pass') client.write(d);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    cut() {
      mode = 'cut';
      for (const s of sockets) s.destroy();
    },
    dropResponses() {
      mode = 'drop';
    },
    async close() {
      mode = 'cut';
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
