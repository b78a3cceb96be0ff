import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import pg from 'pg';
import type { OperationRecord, Receipt } from '@retrysafe/contract';
import { migrate, MIGRATIONS } from '../src/index.js';

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
  if (!['127.0.0.1', 'localhost', '::1', '[::1]', ''].includes(host)) throw new Error(`DATABASE_URL must point at loopback in tests, got host ${host}`);
  return url;
}

/** A fresh schema name per test file (and per call), so test files never see each other's rows. */
export function freshSchema(label: string): string {
  return `rs_t_${label.replace(/[^a-z0-9_]/g, '_').slice(0, 30)}_${randomBytes(4).toString('hex')}`;
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
export async function startPgRelay(target: string): Promise<{ url: string; cut(): void; dropResponses(): void; close(): Promise<void> }> {
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

/** What a migration-4 build wrote (fixtures/legacy/make-legacy-pg.mjs): its rows as text, and what it read back. */
export interface LegacyFixture {
  tables: Record<'retrysafe_operations' | 'retrysafe_receipts', Array<Record<string, string | null>>>;
  expected: Record<string, { record: OperationRecord; receipts: Receipt[] }>;
}
export const LEGACY_V4 = JSON.parse(readFileSync(new URL('./fixtures/legacy/ledger-v4.json', import.meta.url), 'utf8')) as LegacyFixture;

/** Inserts the fixture's rows into a schema migrated to 3 or 4 (the tables are the same), byte for byte: PostgreSQL casts each text to its column's type. */
export async function loadLegacyRows(pool: pg.Pool | pg.Client, schema: string): Promise<void> {
  for (const table of ['retrysafe_operations', 'retrysafe_receipts'] as const) {
    for (const row of LEGACY_V4.tables[table]) {
      const cols = Object.keys(row);
      await pool.query(`INSERT INTO "${schema}".${table} (${cols.join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})`, Object.values(row));
    }
  }
}

/**
 * Runs `fn` on a fresh schema holding the fixture's rows (loaded at migration 4, as that build wrote them),
 * then migrated up to `version`, with a pool of its own; the schema is dropped afterwards.
 */
export async function withLegacySchema(label: string, version: number, fn: (pool: pg.Pool, schema: string) => Promise<void>): Promise<void> {
  const schema = freshSchema(label);
  const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
  try {
    await migrate(pool, schema, MIGRATIONS.filter((m) => m.version <= 4));
    await loadLegacyRows(pool, schema);
    await migrate(pool, schema, MIGRATIONS.filter((m) => m.version <= version));
    await fn(pool, schema);
  } finally {
    await pool.end();
    await dropSchema(schema);
  }
}
