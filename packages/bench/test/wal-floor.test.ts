// The WAL floor (src/wal-floor.mjs): the bench part that shows how few WAL bytes the ledger's content can
// cost on PostgreSQL in the smallest layouts. Its rows must be a real clean operation's, and its layouts
// must differ only in what they index and keep, or the figures it prints prove nothing.
import { describe, expect, it } from 'vitest';
import { completionPart, LAYOUTS, sampleCleanOperation, walFloor } from '../src/wal-floor.mjs';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL is not set: these tests need a PostgreSQL (`source .ci/start-postgres.sh`)');

describe('wal floor', () => {
  it('samples a clean operation as the SQLite ledger stores it: born dispatched, then succeeded with its receipt in a larger body', async () => {
    const { claimed, done } = await sampleCleanOperation();
    expect(claimed.id).toBe(done.id);
    expect(claimed).toMatchObject({ state: 'dispatched', fence: 1, provider: 'noop' });
    expect(done).toMatchObject({ state: 'succeeded', fence: 1, lease_expires_at: null });
    expect(claimed.lease_expires_at).toBeGreaterThan(claimed.created_at);
    expect(done.body.length).toBeGreaterThan(claimed.body.length); // the receipt came in with the completion
    expect(String.fromCharCode(done.body[0]!)).toBe('{'); // the record's JSON text first
  });

  it('measures every layout on the same rows; dropping indexes and columns only ever lowers the WAL', async () => {
    const sample = await sampleCleanOperation();
    const rows = [];
    for (const name of Object.keys(LAYOUTS)) rows.push(await walFloor(url, name, sample, 200));
    const by = Object.fromEntries(rows.map((r) => [r.layout, r.walPerOp]));
    // At least the two heap tuples' bodies go through the WAL once each; a split row's completion, its own part.
    const part = completionPart(sample.claimed, sample.done).length;
    expect(part).toBe(sample.done.body.length - sample.claimed.body.length);
    for (const r of rows) {
      const floor = sample.claimed.body.length + (LAYOUTS[r.layout].split ? part : sample.done.body.length);
      expect(r.walPerOp).toBeGreaterThan(floor);
    }
    expect(by['pk-only']).toBeLessThan(by.compact);
    expect(by['body-only']).toBeLessThan(by['pk-only']);
    // Writing only the completion's part logs less than writing the whole finished body (the update's
    // common prefix is not logged); the open-operations index costs WAL even so.
    expect(by['split-body-only']).toBeLessThan(by['body-only']);
    expect(by['split-body-only']).toBeLessThan(by['split-brin']);
    expect(by['split-brin']).toBeLessThan(by['split-brin-open']);
  });
});
