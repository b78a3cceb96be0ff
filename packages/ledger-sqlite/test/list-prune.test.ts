// Listings and retention must answer exactly what the memory ledger answers (by created_at, then id),
// for any clocks: many operations in one millisecond, fractional, negative and far-future times,
// claims whose clocks go back.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Ledger, ListFilter, OperationState } from '@retrysafe/contract';
import { createMemoryLedger } from '@retrysafe/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSqliteLedger } from '../src/index.js';
import { claimInput } from './helpers.js';

const T = Date.UTC(2026, 11, 1);

interface Op {
  readonly label: string;
  readonly at: number;
  readonly operation: string;
  /** Closed this long after its claim (its updatedAt), in this state; or left open. */
  readonly close: { readonly after: number; readonly state: 'succeeded' | 'rejected' } | null;
}

// Creation times: mostly a handful of milliseconds (so many operations share one), also negative and far in the
// future; whole ms within the safe integers, the only times a ledger takes (contract checkNow).
const atArb = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: T, max: T + 4 }) },
  { weight: 1, arbitrary: fc.constantFrom(-5, -1, 0, 1, 2 ** 43 - 1, 2 ** 43, 2 ** 43 + 7, 2 ** 52) },
);
const opsArb = fc.uniqueArray(
  fc.record({
    label: fc.stringMatching(/^[a-z0-9]{1,6}$/),
    at: atArb,
    operation: fc.constantFrom('sandbox.a', 'sandbox.b'),
    close: fc.option(
      fc.record({
        after: fc.integer({ min: 0, max: 3 }),
        state: fc.constantFrom('succeeded' as const, 'rejected' as const),
      }),
      { nil: null },
    ),
  }),
  { selector: (o) => o.label, minLength: 1, maxLength: 40 },
);
const filterArb: fc.Arbitrary<ListFilter> = fc.record(
  {
    limit: fc.integer({ min: 0, max: 12 }),
    newestFirst: fc.boolean(),
    states: fc.subarray<OperationState>(['dispatched', 'succeeded', 'rejected'], { minLength: 1 }),
    operation: fc.constantFrom('sandbox.a', 'sandbox.b'),
  },
  { requiredKeys: [] },
);

async function fill(ledger: Ledger, ops: readonly Op[]): Promise<void> {
  for (const op of ops) {
    const c = await ledger.claim(claimInput(`op-${op.label}`, { now: op.at, operation: op.operation, leaseMs: 1000 }));
    if (c.kind !== 'claimed') throw new Error(`expected claimed, got ${c.kind}`);
    if (op.close)
      await ledger.setState(
        { businessOperationId: c.record.businessOperationId, fence: c.record.fence },
        { state: op.close.state, now: op.at + op.close.after },
      );
  }
}
const ids = (records: ReadonlyArray<{ businessOperationId: string }>) => records.map((r) => r.businessOperationId);

describe('SQLite ledger: listings and retention in creation order', () => {
  it('keeps no index for listings: a clean operation writes the table, its id index and the open rows index only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-indexes-'));
    const path = join(dir, 'ledger.db');
    const ledger = createSqliteLedger({ path });
    const raw = new DatabaseSync(path);
    try {
      const indexes = raw.prepare('PRAGMA index_list(retrysafe_operations)').all() as Array<{
        name: string;
        partial: number;
      }>;
      expect(indexes.map((i) => [i.name, i.partial]).sort()).toEqual([
        ['retrysafe_operations_open', 1],
        ['sqlite_autoindex_retrysafe_operations_1', 0],
      ]);
    } finally {
      raw.close();
      await ledger.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('prunes rows whatever their rowid (negative, or past 2^53, given from outside)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-prune-rowid-'));
    const path = join(dir, 'ledger.db');
    const ledger = createSqliteLedger({ path });
    try {
      await fill(ledger, [
        { label: 'a', at: T, operation: 'sandbox.a', close: { after: 1, state: 'succeeded' } },
        { label: 'b', at: T + 1, operation: 'sandbox.a', close: { after: 1, state: 'rejected' } },
        { label: 'c', at: T + 2, operation: 'sandbox.a', close: null },
      ]);
      const raw = new DatabaseSync(path);
      raw.prepare('UPDATE retrysafe_operations SET rowid = ? WHERE id = ?').run(2n ** 62n, 'op-a');
      raw.prepare('UPDATE retrysafe_operations SET rowid = ? WHERE id = ?').run(-5, 'op-b');
      raw.close();
      expect(await ledger.prune!({ before: T + 100, batchSize: 1 })).toEqual({
        pruned: 2,
        byState: { succeeded: 1, rejected: 1 },
        dryRun: false,
      });
      expect(ids(await ledger.list())).toEqual(['op-c']);
    } finally {
      await ledger.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('list answers what the memory ledger answers, for any clocks and any filter (created_at, then id)', async () => {
    await fc.assert(
      fc.asyncProperty(opsArb, fc.array(filterArb, { minLength: 1, maxLength: 6 }), async (ops, filters) => {
        const memory = createMemoryLedger();
        const sqlite = createSqliteLedger({ path: ':memory:' });
        try {
          await fill(memory, ops);
          await fill(sqlite, ops);
          for (const filter of [{}, { newestFirst: true }, ...filters])
            expect(ids(await sqlite.list(filter)), JSON.stringify(filter)).toEqual(ids(await memory.list(filter)));
        } finally {
          await sqlite.close();
        }
      }),
      { numRuns: 150 },
    );
  });

  it('prune removes what the memory ledger removes, for any cutoff, in pages of any size', async () => {
    await fc.assert(
      fc.asyncProperty(
        opsArb,
        fc.oneof(atArb, fc.constant(Number.MAX_SAFE_INTEGER)),
        fc.integer({ min: 1, max: 5 }),
        fc.boolean(),
        async (ops, before, batchSize, dryRun) => {
          const memory = createMemoryLedger();
          const sqlite = createSqliteLedger({ path: ':memory:' });
          try {
            // Retention's rule: a closed operation's updatedAt is not before its createdAt (clocks per operation move forward).
            await fill(memory, ops);
            await fill(sqlite, ops);
            const want = await memory.prune!({ before, dryRun });
            expect(await sqlite.prune!({ before, dryRun, batchSize })).toEqual(want);
            expect(ids(await sqlite.list())).toEqual(ids(await memory.list()));
          } finally {
            await sqlite.close();
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a row whose created_at column and record disagree (written from outside) is paged once: a dry run ends and counts it once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-prune-keyset-'));
    const path = join(dir, 'ledger.db');
    // Each page read counted; past 20 pages it fails instead of spinning (its loop yields no macrotask).
    type Proto = { prepare(this: unknown, sql: string): Record<string, (...a: unknown[]) => unknown> };
    const proto = DatabaseSync.prototype as unknown as Proto;
    const { prepare } = proto;
    let pages = 0;
    proto.prepare = function (sql) {
      const st = prepare.call(this, sql);
      if (!sql.includes('rowid > ?')) return st;
      const all = st.all!.bind(st);
      st.all = (...a: unknown[]) => {
        if (++pages > 20) throw new Error('still paging after 20 pages');
        return all(...a);
      };
      return st;
    };
    const ledger = createSqliteLedger({ path });
    try {
      await fill(ledger, [
        { label: 'a', at: T, operation: 'sandbox.a', close: { after: 1, state: 'succeeded' } },
        { label: 'b', at: T + 1, operation: 'sandbox.a', close: { after: 1, state: 'succeeded' } },
      ]);
      const raw = new DatabaseSync(path);
      raw.prepare('UPDATE retrysafe_operations SET created_at = ? WHERE id = ?').run(T + 2, 'op-a');
      raw.close();
      expect(await ledger.prune!({ before: T + 100, dryRun: true, batchSize: 1 })).toEqual({
        pruned: 2,
        byState: { succeeded: 2 },
        dryRun: true,
      });
      expect(await ledger.prune!({ before: T + 100, batchSize: 1 })).toEqual({
        pruned: 2,
        byState: { succeeded: 2 },
        dryRun: false,
      });
    } finally {
      proto.prepare = prepare;
      await ledger.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
