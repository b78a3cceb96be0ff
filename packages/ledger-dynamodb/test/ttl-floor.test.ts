// DynamoDB's TTL deletes a closed operation by itself: the same retention floor as `pruneLedger` applies to it
// (the cards' key retention plus the margin in force and the late-apply allowance), and an operation whose card does not know its key's
// retention never expires by itself.
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { type BusinessOperationId, type Duration, fact, LedgerError, type RetrySafetyCard } from '@retrysafe/contract';
import { REPLAYING_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import { claimOf } from '@retrysafe/testkit/ledger';
import { afterAll, describe, expect, it } from 'vitest';
import { createDynamoDbLedger } from '../src/index.js';
import { startDynalite } from './dynalite.js';

const db = await startDynalite();
afterAll(() => db.close());

const H = 3_600_000;
const card = (retention: Duration | 'unknown', operation: string): RetrySafetyCard => {
  const base = sandboxCreateCard(REPLAYING_BEHAVIOUR);
  return { ...base, operation, retention: { minimum: fact(retention as Duration, 'test') } };
};

const refused = (f: () => unknown, pattern: RegExp) => {
  let err: unknown;
  try {
    f();
  } catch (e) {
    err = e;
  }
  expect(LedgerError.isInstance(err), String(err)).toBe(true);
  expect((err as Error).message).toMatch(pattern);
};

describe('the DynamoDB ledger TTL and the retention floor', () => {
  it('refuses a retention below the cards’ key retention plus the margin in force, naming the card', async () => {
    const table = await db.table('ttl-floor');
    const cards = [card('24h', 'a.day')];
    refused(() => createDynamoDbLedger({ table, retentionMs: 60_000, cards }), /a\.day/);
    // The runner policy's margin is the one in force: 24 h + 2 m passes the card's margin (and late-apply
    // allowance: unknown here, one more margin), not a 1 h one.
    const policy = { clockSkewMarginMs: H };
    refused(() => createDynamoDbLedger({ table, retentionMs: 24 * H + 2 * 60_000, cards, policy }), /a\.day/);
    refused(() => createDynamoDbLedger({ table, retentionMs: 25 * H, cards, policy }), /a\.day/);
    const ok = createDynamoDbLedger({ table, retentionMs: 26 * H, cards, policy, client: db.client() });
    await ok.close();
  });

  it("counts the card's late-apply bound: a send may be applied, and its key stored, that much after the record closed", async () => {
    const table = await db.table('ttl-floor');
    const base = card('24h', 'a.late');
    const cards = [{ ...base, lookup: { ...base.lookup, lateApplyBound: fact('6h' as Duration, 'test') } }];
    refused(() => createDynamoDbLedger({ table, retentionMs: 24 * H + 60_000, cards }), /a\.late/);
    const ok = createDynamoDbLedger({ table, retentionMs: 30 * H + 60_000, cards, client: db.client() });
    await ok.close();
  });

  it('refuses a policy margin that is not a finite number ≥ 0 in the runner’s words (null, a string, NaN, ∞, < 0)', async () => {
    const table = await db.table('ttl-floor');
    const cards = [card('24h', 'a.day')];
    for (const m of [Number.NaN, Number.POSITIVE_INFINITY, -1, '60000', null]) {
      const policy = { clockSkewMarginMs: m as number };
      refused(
        () => createDynamoDbLedger({ table, retentionMs: 30 * 24 * H, cards, policy }),
        new RegExp(`^policy\\.clockSkewMarginMs: expected a finite number ≥ 0, got ${String(m)}$`),
      );
    }
  });

  it('refuses a retention without the cards it must respect (none given is a floor of nothing, said so with [])', async () => {
    const table = await db.table('ttl-floor');
    refused(() => createDynamoDbLedger({ table, retentionMs: 30 * 24 * H } as never), /cards/);
    const none = createDynamoDbLedger({ table, retentionMs: 60_000, cards: [], client: db.client() });
    await none.close();
  });

  it('an operation whose card does not know its key retention gets no TTL; the others do', async () => {
    const table = await db.table('ttl-floor');
    const cards = [card('24h', 'a.day'), card('unknown', 'd.unknown')];
    const ledger = createDynamoDbLedger({ table, retentionMs: 30 * 24 * H, cards, client: db.client() });
    const now = Date.now();
    for (const [id, operation] of [
      ['ttl-known', 'a.day'],
      ['ttl-unknown', 'd.unknown'],
    ] as const) {
      const ref = { businessOperationId: id as BusinessOperationId, fence: 1 };
      await ledger.claim(claimOf(id, { dispatch: true, now, operation }));
      await ledger.setState(ref, { state: 'succeeded', now: now + 1 });
    }
    const client = db.client();
    const expiresAt = async (id: string) =>
      (await client.send(new GetItemCommand({ TableName: table, Key: { id: { S: id } }, ConsistentRead: true }))).Item
        ?.expiresAt;
    expect(await expiresAt('ttl-known')).toEqual({ N: String(Math.ceil((now + 1 + 30 * 24 * H) / 1000)) });
    expect(await expiresAt('ttl-unknown')).toBeUndefined();
    client.destroy();
    await ledger.close();
  });
});
