// The bench's PostgreSQL server CPU reader (postgresServerCpu): the server's own work per op, beside the
// workers', is what shows which side a CPU-bound run (8 workers on 2 cores) spends its time on.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { postgresServerCpu } from '../src/workloads.mjs';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL is not set: these tests need a PostgreSQL (`source .ci/start-postgres.sh`)');

describe('postgresServerCpu', () => {
  it('counts the server work of a connection, also after that connection (its backend) has gone', async () => {
    const read = (await postgresServerCpu(url)) as (() => number | null) | null;
    // The test PostgreSQL runs on this machine (.ci/start-postgres.sh): its processes are readable.
    expect(read).toBeTypeOf('function');
    const before = read!();
    expect(before).toBeGreaterThan(0);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    // Server-side work only: a query the server spends a good share of a second of CPU on.
    await client.query(`SELECT count(*) FROM generate_series(1, 3000000) g WHERE md5(g::text) < '8'`);
    const during = read!();
    await client.end();
    // The backend exits; its time moves to the postmaster's reaped-children counters, not lost.
    let after = read!();
    for (let i = 0; i < 50 && after! < during!; i++) {
      await new Promise((r) => setTimeout(r, 20));
      after = read!();
    }
    expect(during!).toBeGreaterThan(before!);
    expect(after!).toBeGreaterThanOrEqual(during! - 20_000); // one clock tick of rounding at most per process
  });
});
