// Listings and retention must answer exactly what the memory ledger answers (by created_at, then id),
// for any clocks: many operations in one millisecond, fractional, negative and far-future times,
// claims whose clocks go back.

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

// Creation times: mostly a handful of milliseconds (so many operations share one), also fractional,
// negative, far in the future and beyond 2^53.
const atArb = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: T, max: T + 4 }) },
  { weight: 2, arbitrary: fc.double({ min: T, max: T + 4, noNaN: true }) },
  { weight: 1, arbitrary: fc.constantFrom(-5, -0.5, 0, 0.25, 2 ** 43 - 1, 2 ** 43, 2 ** 43 + 7.5, 2 ** 60) },
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
        fc.oneof(atArb, fc.constant(2 ** 61)),
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
});
