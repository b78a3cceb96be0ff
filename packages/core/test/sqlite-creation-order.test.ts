// SQLite layout 5: the rowid is the creation order (docs/decisions/2026-12-01-sqlite-rowid-creation-order.md).
// Listings and retention walk the table by rowid instead of a created_at index: they must answer exactly
// what the memory ledger answers (by created_at, then id), for any clocks — many operations in one
// millisecond, fractional, negative and far-future times, claims whose clocks go back.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { LedgerError, asBusinessOperationId, type ClaimInput, type Ledger, type ListFilter, type OperationState, type ProviderKey } from '@retrysafe/contract';
import { createMemoryLedger, createSqliteLedger } from '../src/index.js';
import { resolveDriver } from '../src/ledger/sqlite-driver.js';

const T = Date.UTC(2026, 11, 1);
const dir = mkdtempSync(join(tmpdir(), 'retrysafe-order-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

const claimInput = (id: string, now: number, operation: string): ClaimInput => ({
  businessOperationId: asBusinessOperationId(id),
  provider: 'sandbox',
  operation,
  intentFingerprint: `sha256:intent-${id}`,
  paramsFingerprint: `sha256:params-${id}`,
  params: { ref: id },
  providerKey: `key-${id}` as ProviderKey,
  owner: 'worker-1',
  leaseMs: 1000,
  now,
  dispatch: true,
});

interface Op {
  readonly label: string;
  readonly at: number;
  readonly operation: string;
  /** Closed this long after its claim (its updatedAt), in this state; or left open. */
  readonly close: { readonly after: number; readonly state: 'succeeded' | 'rejected' } | null;
}

// Creation times: mostly a handful of milliseconds (so many operations share one), also fractional,
// negative, beyond the last bucket (2^43 ms) and beyond 2^53.
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
    close: fc.option(fc.record({ after: fc.integer({ min: 0, max: 3 }), state: fc.constantFrom('succeeded' as const, 'rejected' as const) }), { nil: null }),
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
    const c = await ledger.claim(claimInput(`op-${op.label}`, op.at, op.operation));
    if (c.kind !== 'claimed') throw new Error(`expected claimed, got ${c.kind}`);
    if (op.close) await ledger.setState({ businessOperationId: c.record.businessOperationId, fence: c.record.fence }, { state: op.close.state, now: op.at + op.close.after });
  }
}
const ids = (records: ReadonlyArray<{ businessOperationId: string }>) => records.map((r) => r.businessOperationId);

describe('SQLite ledger: rowids in creation order', () => {
  it('list answers what the memory ledger answers, for any clocks and any filter (created_at, then id)', async () => {
    await fc.assert(
      fc.asyncProperty(opsArb, fc.array(filterArb, { minLength: 1, maxLength: 6 }), async (ops, filters) => {
        const memory = createMemoryLedger();
        const sqlite = createSqliteLedger({ path: ':memory:' });
        try {
          await fill(memory, ops);
          await fill(sqlite, ops);
          for (const filter of [{}, { newestFirst: true }, ...filters]) expect(ids(await sqlite.list(filter)), JSON.stringify(filter)).toEqual(ids(await memory.list(filter)));
        } finally {
          await sqlite.close();
        }
      }),
      { numRuns: 150 },
    );
  });

  it('prune removes what the memory ledger removes, for any cutoff, in pages of any size', async () => {
    await fc.assert(
      fc.asyncProperty(opsArb, atArb, fc.integer({ min: 1, max: 5 }), fc.boolean(), async (ops, before, batchSize, dryRun) => {
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
      }),
      { numRuns: 150 },
    );
  });

  // A claim tries the rowid its connection guesses is free (the next of its own in that millisecond),
  // then, if another connection's row holds it, the INSERT that takes the next after the bucket's highest.
  const copyRow = (db: { exec(sql: string): void }, rowid: string, id: string) =>
    db.exec(`INSERT INTO retrysafe_operations (rowid, id, provider, operation, state, fence, lease_expires_at, created_at, updated_at, body)
      SELECT ${rowid}, '${id}', provider, operation, state, fence, lease_expires_at, created_at, updated_at, body FROM retrysafe_operations WHERE id = 'first'`);
  const openRaw = (path: string) => {
    const found = resolveDriver('auto');
    if ('reasons' in found) throw new Error(found.reasons.join('; '));
    return found.open(path);
  };
  const rowidOf = (db: ReturnType<typeof openRaw>, id: string) => (db.prepare(`SELECT CAST(rowid AS TEXT) AS n FROM retrysafe_operations WHERE id = ?`).get(id) as { n: string } | undefined)?.n;

  /** A ledger with 'first' claimed at T, and the slot its connection guesses next taken by hand (its count goes one up per claim in a millisecond). */
  const guessTaken = async () => {
    const path = join(dir, `taken-${n++}.db`);
    const ledger = createSqliteLedger({ path });
    await ledger.claim(claimInput('first', T, 'sandbox.a'));
    const db = openRaw(path);
    const first = BigInt(rowidOf(db, 'first')!);
    expect(first >> 20n).toBe(BigInt(T));
    copyRow(db, String(first + 1n), 'taken-guess');
    return { ledger, db, first };
  };

  it('a claim whose guessed rowid another connection took goes to the next free one after the bucket\'s highest', async () => {
    const { ledger, db, first } = await guessTaken();
    const c = await ledger.claim(claimInput('second', T, 'sandbox.a'));
    expect(c.kind).toBe('claimed');
    expect(rowidOf(db, 'second')).toBe(String(first + 2n));
    expect(await ledger.get(asBusinessOperationId('second'))).toMatchObject({ state: 'dispatched', createdAt: T });
    db.close();
    await ledger.close();
  });

  it('a millisecond with no room left refuses the claim whole (typed, nothing written); the next millisecond is unaffected', async () => {
    const { ledger, db } = await guessTaken();
    // And the bucket's last rowid taken (as 2^19 or more claims in that millisecond would): by hand.
    copyRow(db, String((BigInt(T) + 1n) * 1048576n - 1n), 'last-of-bucket');
    const count = () => (db.prepare('SELECT count(*) AS n FROM retrysafe_operations').get() as { n: number }).n;
    expect(count()).toBe(3);
    await expect(ledger.claim(claimInput('one-too-many', T, 'sandbox.a'))).rejects.toSatisfy(LedgerError.isInstance);
    expect(count()).toBe(3);
    expect(await ledger.get(asBusinessOperationId('one-too-many'))).toBeNull();
    const next = await ledger.claim(claimInput('next-ms', T + 1, 'sandbox.a'));
    expect(next.kind).toBe('claimed');
    expect(db.prepare(`SELECT rowid >> 20 AS b FROM retrysafe_operations WHERE id = 'next-ms'`).get()).toEqual({ b: T + 1 });
    db.close();
    await ledger.close();
  });
});
