// What the DynamoDB ledger adds to the shared suite: many processes' clients racing one item, the item
// size limit, leases and fences across ledger instances (each starts its writes from what it last
// wrote), a write whose answer is lost, TTL retention and the sparse index of open operations.
import { createServer } from 'node:net';
import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ListTablesCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { ClockSkewError, LeaseLostError, LedgerError } from '@retrysafe/contract';
import { claimOf, packetOf } from '@retrysafe/testkit/ledger';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createDynamoDbLedger, ensureTable, tableDefinition } from '../src/index.js';
import { newId, onTables, startDynalite, T0 } from './dynalite.js';

const db = await startDynalite();
afterAll(() => db.close());
const { ledgers, rawItem } = onTables(db);

/** An edit from outside the ledger: one attribute of the item set to `text`. */
async function editItem(table: string, id: string, attribute: 'record' | 'receipts', text: string) {
  const client = db.client();
  try {
    await client.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { id: { S: id } },
        UpdateExpression: 'SET #a = :t',
        ExpressionAttributeNames: { '#a': attribute },
        ExpressionAttributeValues: { ':t': { S: text } },
      }),
    );
  } finally {
    client.destroy();
  }
}

/** A ledger on a new table whose Query pages hold two items, each request noted in `log` by its command; five ids. */
async function pagedLedger(name: string) {
  const log: string[] = [];
  const client = db.client();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? '?';
      if (command === 'QueryCommand') (args.input as { Limit?: number }).Limit = 2;
      log.push(command);
      return next(args);
    },
    { step: 'initialize', name: 'smallPages' },
  );
  const table = await db.table(name);
  const ids = [1, 2, 3, 4, 5].map(() => newId(name));
  return { log, table, l: createDynamoDbLedger({ table, client }), ids };
}

/**
 * A ledger on a new table whose client meets `fault` on the first `times` tries of `command` (each try the SDK sends):
 * `answer lost`, after DynamoDB applied it (a timeout, so the SDK sends it again), or `throttled`, refused before it is
 * applied. `applied()`: how many tries of that command DynamoDB applied.
 */
async function faulty(command: string, fault: 'answer lost' | 'throttled', times = 1) {
  const table = await db.table('faulty');
  const client = db.client();
  let faults = 0;
  let applied = 0;
  const throttled = () => ({ name: 'ThrottlingException', $fault: 'client', $metadata: { httpStatusCode: 400 } });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const mine = context.commandName === command;
      if (mine && fault === 'throttled' && faults++ < times)
        throw Object.assign(new Error('Throughput exceeds the current capacity of your table'), throttled());
      const out = await next(args);
      if (mine && applied++ < times && fault === 'answer lost')
        throw Object.assign(new Error('answer lost'), { name: 'TimeoutError' });
      return out;
    },
    { step: 'finalizeRequest', name: 'faults' },
  );
  const ledger = createDynamoDbLedger({ table, client });
  return { ledger: { ...ledger, close: () => ledger.close().then(() => client.destroy()) }, applied: () => applied };
}

/** DescribeTable's answer for an active table made as the ledger makes it. */
const activeTable = () => ({
  Table: {
    TableStatus: 'ACTIVE',
    KeySchema: tableDefinition('t').KeySchema,
    GlobalSecondaryIndexes: tableDefinition('t').GlobalSecondaryIndexes!.map((i) => ({ ...i, IndexStatus: 'ACTIVE' })),
  },
});
describe('the DynamoDB ledger', () => {
  it('a stored record that is JSON null is a LedgerError, never an absent operation a new claim writes over', async () => {
    const l = await ledgers(2);
    const [a, b] = l.all as [typeof l.first, typeof l.first];
    const id = newId('null-record');
    expect((await a.claim(claimOf(id, { dispatch: true }))).kind).toBe('claimed');
    await editItem(l.table, id, 'record', 'null');
    const errors = await Promise.all([
      b.get(id).catch((e: unknown) => e),
      b.claim(claimOf(id, { owner: 'w2', now: T0 + 60_000 })).catch((e: unknown) => e),
      b.list().catch((e: unknown) => e),
    ]);
    for (const e of errors) expect(LedgerError.isInstance(e), String(e)).toBe(true);
    expect((await rawItem(l.table, id))?.record?.S).toBe('null');
    await l.close();
  });

  it('an item whose record JSON is cut: list and recoverCandidates return the others and tell its id; without a callback they reject', async () => {
    const l = await ledgers(1);
    const ids = [newId('readable'), newId('cut'), newId('readable')];
    for (const id of ids) await l.first.claim(claimOf(id, { now: T0, leaseMs: 1000 }));
    await editItem(l.table, ids[1]!, 'record', '{"businessOperationId":');
    const told: Array<[string, LedgerError]> = [];
    const onUnreadable = (id: string, e: LedgerError) => told.push([id, e]);
    const got = (rs: { businessOperationId: string }[]) => rs.map((r) => r.businessOperationId).sort();
    const readable = [ids[0], ids[2]].sort();
    expect(got(await l.first.list({ onUnreadable }))).toEqual(readable);
    expect(got(await l.first.list({ states: ['claimed'], onUnreadable }))).toEqual(readable);
    expect(got(await l.first.recoverCandidates(T0 + 5000, undefined, onUnreadable))).toEqual(readable);
    expect(told.map(([id]) => id)).toEqual([ids[1], ids[1], ids[1]]);
    for (const [, e] of told) expect(LedgerError.isInstance(e) && e.message).toMatch(/cut or corrupt/);
    // First in the order (its id sorts first), it takes no place of a limit.
    expect(got(await l.first.list({ limit: 2, onUnreadable }))).toEqual(readable);
    expect(got(await l.first.recoverCandidates(T0 + 5000, 2, onUnreadable))).toEqual(readable);
    await expect(l.first.list()).rejects.toThrow(/cut or corrupt/);
    await expect(l.first.recoverCandidates(T0 + 5000)).rejects.toThrow(/cut or corrupt/);
    await l.close();
  });

  it('an item whose record parses but lacks a field or names a state this version does not know: the others served, it told by id, never rewritten', async () => {
    const l = await ledgers(2);
    const other = l.all[1]!; // another process: the first remembers what it wrote
    const ids = [newId('readable'), newId('bare'), newId('newer')];
    for (const id of ids) await l.first.claim(claimOf(id, { now: T0, leaseMs: 1000 }));
    await editItem(l.table, ids[1]!, 'record', JSON.stringify({ businessOperationId: ids[1], state: 'claimed' }));
    const newer = JSON.parse((await rawItem(l.table, ids[2]!))!.record!.S!) as object;
    await editItem(l.table, ids[2]!, 'record', JSON.stringify({ ...newer, state: 'paused' }));
    const told: string[] = [];
    const onUnreadable = (id: string) => told.push(id);
    const got = (rs: { businessOperationId: string }[]) => rs.map((r) => r.businessOperationId);
    expect(got(await l.first.list({ onUnreadable }))).toEqual([ids[0]]);
    expect(got(await l.first.recoverCandidates(T0 + 5000, undefined, onUnreadable))).toEqual([ids[0]]);
    expect(told.sort()).toEqual([ids[1], ids[1], ids[2], ids[2]].sort());
    for (const id of [ids[1]!, ids[2]!]) {
      const before = await rawItem(l.table, id);
      await expect(other.get(id)).rejects.toThrow(/a stored record has no valid (provider|state)/);
      await expect(other.claim(claimOf(id, { now: T0 + 5000 }))).rejects.toMatchObject({ code: 'RETRYSAFE_LEDGER' });
      expect(await rawItem(l.table, id)).toEqual(before);
    }
    await l.close();
  });

  it('prune keeps and tells an item whose record (or, exporting, receipts) cannot be read; the others are pruned', async () => {
    const l = await ledgers(1);
    const ids = [newId('old'), newId('cut-record'), newId('cut-receipts'), newId('open-cut')];
    for (const id of ids) {
      const c = await l.first.claim(claimOf(id, { now: T0, dispatch: true }));
      if (c.kind === 'claimed' && id !== ids[3]) await l.first.setState(c.record, { state: 'succeeded', now: T0 + 1 });
    }
    await editItem(l.table, ids[1]!, 'record', '{"businessOperationId":');
    await editItem(l.table, ids[2]!, 'receipts', '[{"seq":');
    await editItem(l.table, ids[3]!, 'record', '{"businessOperationId":');
    await expect(l.first.prune!({ before: T0 + 100 })).rejects.toThrow(LedgerError);
    const told: string[] = [];
    const exported: string[] = [];
    const report = await l.first.prune!({
      before: T0 + 100,
      onPrune: (r) => void exported.push(r.businessOperationId),
      onUnreadable: (id) => told.push(id),
    });
    expect(report).toMatchObject({ pruned: 1 });
    expect(exported).toEqual([ids[0]]);
    // The open one is never read: prune reads only the closed index.
    expect(told.sort()).toEqual([ids[1], ids[2]].sort());
    for (const id of ids.slice(1)) expect(await rawItem(l.table, id!)).toBeDefined();
    await l.close();
  });

  it('prune deletes each page of the closed index before it reads the next: a table larger than the memory of a Lambda is pruned all the same', async () => {
    const { log, l, ids } = await pagedLedger('paged-prune');
    for (const id of ids) {
      const c = await l.claim(claimOf(id, { now: T0, dispatch: true }));
      if (c.kind === 'claimed') await l.setState(c.record, { state: 'succeeded', now: T0 + 1 });
    }
    log.length = 0;
    const report = await l.prune!({
      before: T0 + 100,
      onPrune: (r) => void log.push(`export ${r.businessOperationId}`),
    });
    expect(report).toMatchObject({ pruned: 5 });
    // Never more than one page of items waits: each Query after the first follows the deletes of the page before it.
    let waiting = 0;
    let held = 0;
    for (const entry of log) {
      waiting += entry.startsWith('export') ? 1 : entry === 'DeleteItemCommand' ? -1 : 0;
      held = Math.max(held, waiting);
    }
    expect(held).toBeLessThanOrEqual(2);
    expect(log.indexOf('DeleteItemCommand')).toBeLessThan(log.lastIndexOf('QueryCommand'));
    expect(await l.list()).toEqual([]);
    await l.close();
  });

  it('a limited list or recoverCandidates reads page by page (an item of an early page is told before the last is read), the limit kept across pages', async () => {
    const { log, table, l, ids } = await pagedLedger('paged-list');
    for (const [i, id] of ids.entries()) await l.claim(claimOf(id, { now: T0 + i, leaseMs: 1000 }));
    // Three of five cut: at least one of them is on one of the first two pages of two.
    for (const id of ids.slice(0, 3)) await editItem(table, id, 'record', '{"businessOperationId":');
    const onUnreadable = () => void log.push('told');
    const listings = [
      () => l.list({ limit: 1, onUnreadable }),
      () => l.list({ limit: 1, states: ['claimed'], onUnreadable }),
      () => l.recoverCandidates(T0 + 5000, 1, onUnreadable),
    ];
    for (const listing of listings) {
      log.length = 0;
      expect((await listing()).map((r) => r.businessOperationId)).toEqual([ids[3]]);
      expect(log.filter((e) => e === 'told')).toHaveLength(3);
      expect(log.indexOf('told')).toBeLessThan(log.findLastIndex((e) => e.endsWith('Command')));
    }
    await l.close();
  });

  it('a limited listing of open states stops reading the index once no later page can enter it, oldest or newest first', async () => {
    const { log, l, ids } = await pagedLedger('paged-open');
    const created = [0, 1, 1, 2, 3];
    for (const [i, id] of ids.entries()) await l.claim(claimOf(id, { now: T0 + created[i]! }));
    const listed = async (filter: Parameters<typeof l.list>[0]) => {
      log.length = 0;
      const found = (await l.list(filter)).map((r) => r.businessOperationId);
      return { found, queries: log.filter((e) => e === 'QueryCommand').length };
    };
    const all = await listed({ states: ['claimed'] });
    expect(all).toEqual({ found: expect.arrayContaining(ids), queries: 3 });
    // Pages of two: the next page is read only while the last item read ties with the limit's last (T0+1 here).
    expect(await listed({ states: ['claimed'], limit: 1 })).toEqual({ found: all.found.slice(0, 1), queries: 1 });
    expect(await listed({ states: ['claimed'], limit: 2 })).toEqual({ found: all.found.slice(0, 2), queries: 2 });
    const newest = await listed({ states: ['claimed'], limit: 1, newestFirst: true });
    expect(newest).toEqual({ found: [ids[4]], queries: 1 });
    // Each state's query stops by itself: 'claimed' after two pages, 'dispatched' (none) after one.
    const two = await listed({ states: ['claimed', 'dispatched'], limit: 3 });
    expect(two).toEqual({ found: all.found.slice(0, 3), queries: 3 });
    await l.close();
  });

  it('a listing of closed states or by provider reads the indexes of its states, but gets back only the items it lists (no other record crosses the wire)', async () => {
    const table = await db.table('scan-filter');
    const client = db.client();
    const sent: number[] = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (context.commandName === 'QueryCommand') sent.push((out.output as { Items?: unknown[] }).Items?.length ?? 0);
        return out;
      },
      { step: 'initialize', name: 'countScanned' },
    );
    const l = createDynamoDbLedger({ table, client });
    const ids = [1, 2, 3, 4].map(() => newId('scan-filter'));
    for (const [i, id] of ids.entries()) {
      await l.claim(claimOf(id, { now: T0, dispatch: true, ...(i === 3 && { provider: 'other' }) }));
      if (i < 2) await l.setState({ businessOperationId: id, fence: 1 }, { state: 'succeeded', now: T0 + 1 });
    }
    const listed = async (filter: Parameters<typeof l.list>[0]) => {
      sent.length = 0;
      const found = (await l.list(filter)).map((r) => r.businessOperationId).sort();
      return { found, sent: sent.reduce((a, b) => a + b, 0) };
    };
    expect(await listed({ states: ['succeeded'] })).toEqual({ found: ids.slice(0, 2), sent: 2 });
    expect(await listed({ states: ['succeeded', 'dispatched'], provider: 'other' })).toEqual({
      found: [ids[3]],
      sent: 1,
    });
    expect(await listed({ operation: 'no-such-operation' })).toEqual({ found: [], sent: 0 });
    expect((await listed({})).sent).toBe(4);
    await l.close();
  });

  it('listings and prune of closed operations read only the items of the states they ask for, never the table (no Scan)', async () => {
    const table = await db.table('closed-reads');
    const client = db.client();
    const reads: Array<[string, number]> = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        const { ScannedCount } = out.output as { ScannedCount?: number };
        if (ScannedCount !== undefined) reads.push([context.commandName ?? '?', ScannedCount]);
        return out;
      },
      { step: 'initialize', name: 'countRead' },
    );
    const l = createDynamoDbLedger({ table, client });
    const close = async (state: 'succeeded' | 'rejected', at: number) => {
      const c = await l.claim(claimOf(newId('closed-reads'), { now: T0, dispatch: true }));
      if (c.kind === 'claimed') await l.setState(c.record, { state, now: at });
    };
    for (let i = 0; i < 8; i++) await l.claim(claimOf(newId('closed-reads'), { now: T0 }));
    for (const at of [T0 + 1, T0 + 2, T0 + 3, T0 + 500]) await close('succeeded', at);
    await close('rejected', T0 + 4);
    const read = async <T>(run: () => Promise<T>) => {
      reads.length = 0;
      const answer = await run();
      return { answer, commands: [...new Set(reads.map(([c]) => c))], items: reads.reduce((a, [, n]) => a + n, 0) };
    };
    const listed = await read(() => l.list({ states: ['succeeded'] }));
    expect([listed.answer.length, listed.commands, listed.items]).toEqual([4, ['QueryCommand'], 4]);
    const dry = await read(() => l.prune!({ before: T0 + 100, states: ['succeeded'], dryRun: true }));
    expect([dry.answer.pruned, dry.commands, dry.items]).toEqual([3, ['QueryCommand'], 4]);
    const pruned = await read(() => l.prune!({ before: T0 + 100 }));
    expect([pruned.answer.pruned, pruned.commands, pruned.items]).toEqual([4, ['QueryCommand'], 5]);
    await l.close();
    client.destroy();
  });

  it('an operation read in two states’ indexes (an index lagging its item) is listed once, as its newer version', async () => {
    const table = await db.table('lagging-index');
    const client = db.client();
    let stale: Record<string, unknown> | undefined;
    client.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        const input = args.input as { IndexName?: string; ExpressionAttributeValues?: Record<string, { S?: string }> };
        const items = (out.output as { Items?: unknown[] }).Items;
        const claimedQuery = input.IndexName === 'open' && input.ExpressionAttributeValues?.[':state']?.S === 'claimed';
        if (stale && items && claimedQuery) items.push(stale);
        return out;
      },
      { step: 'initialize', name: 'laggingIndex' },
    );
    const l = createDynamoDbLedger({ table, client });
    const id = newId('lagging-index');
    const c = await l.claim(claimOf(id, { now: T0 }));
    if (c.kind !== 'claimed') throw new Error(c.kind);
    stale = await rawItem(table, id);
    await l.setState(c.record, { state: 'succeeded', now: T0 + 1 });
    for (const newestFirst of [false, true])
      expect((await l.list({ newestFirst })).map((r) => [r.businessOperationId, r.state])).toEqual([[id, 'succeeded']]);
    await l.close();
    client.destroy();
  });

  it('receipts stored as JSON that is not an array are a LedgerError for reads and appends, and no append is written onto them', async () => {
    const l = await ledgers(2);
    const [a, b] = l.all as [typeof l.first, typeof l.first];
    for (const text of ['null', '{}']) {
      const id = newId('receipts-not-array');
      const c = await a.claim(claimOf(id, { dispatch: true }));
      if (c.kind !== 'claimed') throw new Error(c.kind);
      // The ledger stores the chain it is given; it does not check the hashes.
      const receipt = (seq: number) =>
        ({ businessOperationId: id, seq, kind: 'dispatch', prevHash: null, hash: `${seq}`.repeat(64) }) as never;
      const first = receipt(1);
      await a.appendReceipt(c.record, first);
      await editItem(l.table, id, 'receipts', text);
      const second = receipt(2);
      const errors = await Promise.all([
        b.receipts(id).catch((e: unknown) => e),
        b.appendReceipt(c.record, second).catch((e: unknown) => e),
      ]);
      for (const e of errors) expect(LedgerError.isInstance(e), `${text}: ${String(e)}`).toBe(true);
      expect((await rawItem(l.table, id))?.receipts?.S).toBe(text);
    }
    await l.close();
  });

  it('ensureTable creates the table and its index once, and says when the service has no TTL API (dynalite)', async () => {
    const client = db.client();
    const table = newId('ensure');
    expect(await ensureTable(client, table)).toEqual({ created: true, ttl: 'unsupported' });
    expect(await ensureTable(client, table)).toEqual({ created: false, ttl: 'unsupported' });
    const ledger = createDynamoDbLedger({ table, client });
    expect((await ledger.claim(claimOf(newId('ensure')))).kind).toBe('claimed');
    await ledger.close();
    client.destroy();
  });

  it('ensureTable waits only timeoutMs for a table that stays CREATING, and refuses a timeout that would never end', async () => {
    const slow = await startDynalite(60_000);
    const client = slow.client();
    try {
      for (const timeoutMs of [Number.NaN, Number.POSITIVE_INFINITY, -1, '300' as never])
        await expect(ensureTable(client, 'never-active', { timeoutMs })).rejects.toThrow(/timeoutMs must be/);
      const started = Date.now();
      await expect(ensureTable(client, 'never-active', { timeoutMs: 300 })).rejects.toThrow(/not ACTIVE after 300 ms/);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      client.destroy();
      await slow.close();
    }
  });

  it('ensureTable refuses a table that exists without the index of open operations (recovery could never read it)', async () => {
    const client = db.client();
    const table = newId('no-index');
    const { GlobalSecondaryIndexes: _index, ...bare } = tableDefinition(table);
    await client.send(
      new CreateTableCommand({ ...bare, AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }] }),
    );
    const err = await ensureTable(client, table).catch((e: unknown) => e);
    expect(LedgerError.isInstance(err), String(err)).toBe(true);
    expect((err as Error).message).toMatch(/index open/);
    client.destroy();
  });

  it('ensureTable refuses a table made elsewhere with other keys or an index that does not hold the records', async () => {
    const client = db.client();
    const def = tableDefinition('x');
    const index = def.GlobalSecondaryIndexes![0]!;
    const variants = {
      'index keys only': {
        GlobalSecondaryIndexes: [{ ...index, Projection: { ProjectionType: 'KEYS_ONLY' as const } }],
      },
      'index by state': {
        AttributeDefinitions: [...def.AttributeDefinitions!, { AttributeName: 'state', AttributeType: 'S' as const }],
        GlobalSecondaryIndexes: [{ ...index, KeySchema: [{ AttributeName: 'state', KeyType: 'HASH' as const }] }],
      },
      'key pk': {
        AttributeDefinitions: [
          ...def.AttributeDefinitions!.slice(1),
          { AttributeName: 'pk', AttributeType: 'S' as const },
        ],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' as const }],
      },
    };
    for (const [what, over] of Object.entries(variants)) {
      const table = newId('other');
      await client.send(new CreateTableCommand({ ...tableDefinition(table), ...over }));
      const err = await ensureTable(client, table).catch((e: unknown) => e);
      expect(LedgerError.isInstance(err), `${what}: ${String(err)}`).toBe(true);
      expect((err as Error).message).toMatch(/tableDefinition\(table\)/);
    }
    client.destroy();
  });

  it('ensureTable run by two processes at once on a service with the TTL API: both succeed (TTL is turned on once)', async () => {
    // DynamoDB answers an UpdateTimeToLive on a table whose TTL is already on with a ValidationException.
    let ttl = 'DISABLED';
    let updates = 0;
    const service = {
      async send(command: object) {
        await new Promise((resolve) => setImmediate(resolve));
        switch (command.constructor.name) {
          case 'DescribeTableCommand':
            return activeTable();
          case 'DescribeTimeToLiveCommand':
            return { TimeToLiveDescription: { TimeToLiveStatus: ttl } };
          case 'UpdateTimeToLiveCommand':
            updates++;
            if (ttl !== 'DISABLED')
              throw Object.assign(new Error('TimeToLive is already enabled'), { name: 'ValidationException' });
            ttl = 'ENABLED';
            return {};
          default:
            throw new Error(`unexpected ${command.constructor.name}`);
        }
      },
    } as unknown as Parameters<typeof ensureTable>[0];
    const both = await Promise.all([ensureTable(service, 'raced'), ensureTable(service, 'raced')]);
    expect(both).toEqual([
      { created: false, ttl: 'enabled' },
      { created: false, ttl: 'enabled' },
    ]);
    expect(updates).toBeGreaterThanOrEqual(1);
  });

  it('ensureTable refuses a table whose TTL is on for another attribute (closed operations would never expire), turning nothing on', async () => {
    const sent: string[] = [];
    const service = {
      async send(command: object) {
        sent.push(command.constructor.name);
        switch (command.constructor.name) {
          case 'DescribeTableCommand':
            return activeTable();
          case 'DescribeTimeToLiveCommand':
            return { TimeToLiveDescription: { TimeToLiveStatus: 'ENABLED', AttributeName: 'ttl' } };
          default:
            throw new Error(`unexpected ${command.constructor.name}`);
        }
      },
    } as unknown as Parameters<typeof ensureTable>[0];
    const err = await ensureTable(service, 'other-ttl').catch((e: unknown) => e);
    expect(LedgerError.isInstance(err), String(err)).toBe(true);
    expect((err as Error).message).toMatch(/ttl.*expiresAt/);
    expect(sent).not.toContain('UpdateTimeToLiveCommand');
  });

  it('16 racing claims of a new operation from 16 clients: one wins; 16 racing takeovers after expiry: one wins, fence 2', async () => {
    const l = await ledgers(16);
    const id = newId('race');
    const first = await Promise.all(l.all.map((ledger, w) => ledger.claim(claimOf(id, { owner: `w${w}` }))));
    expect(first.filter((r) => r.kind === 'claimed')).toHaveLength(1);
    expect(first.filter((r) => r.kind === 'busy')).toHaveLength(15);
    const second = await Promise.all(
      l.all.map((ledger, w) => ledger.claim(claimOf(id, { owner: `x${w}`, now: T0 + 5_000 }))),
    );
    const winners = second.filter((r) => r.kind === 'claimed');
    expect(winners).toHaveLength(1);
    expect(winners[0]!.record.fence).toBe(2);
    expect(await l.first.get(id)).toEqual(winners[0]!.record);
    await l.close();
  });

  it('two workers sending the very same claim (same owner and time) from two processes: one claims, the other is busy', async () => {
    const l = await ledgers(2);
    const [a, b] = l.all as [typeof l.first, typeof l.first];
    const id = newId('same-claim');
    const kinds = async (now: number) =>
      (await Promise.all([a, b].map((w) => w.claim(claimOf(id, { now, dispatch: true }))))).map((r) => r.kind).sort();
    expect(await kinds(T0)).toEqual(['busy', 'claimed']);
    // A takeover of the expired lease, the same from both.
    expect(await kinds(T0 + 5_000)).toEqual(['busy', 'claimed']);
    expect(await a.get(id)).toMatchObject({ fence: 2 });
    await l.close();
  });

  it('a worker that lost its lease cannot write, though it starts from what it wrote itself', async () => {
    const l = await ledgers(2);
    const [a, b] = l.all as [typeof l.first, typeof l.first];
    const id = newId('fence');
    const mine = await a.claim(claimOf(id, { dispatch: true }));
    if (mine.kind !== 'claimed') throw new Error(mine.kind);
    const taken = await b.claim(claimOf(id, { owner: 'w2', now: T0 + 1_000 }));
    expect(taken).toMatchObject({ kind: 'claimed', takenOver: true, record: { fence: 2, state: 'dispatched' } });
    const stale = { businessOperationId: id, fence: 1 };
    await expect(a.setState(stale, { state: 'succeeded', now: T0 + 1_001 })).rejects.toSatisfy(
      LeaseLostError.isInstance,
    );
    await expect(a.renewLease(stale, 1_000, T0 + 1_001)).rejects.toSatisfy(LeaseLostError.isInstance);
    expect(await a.get(id)).toEqual((taken as { record: unknown }).record);
    // The new holder writes from the item as stored; the old one's cache never misleads it.
    expect(
      await b.setState({ businessOperationId: id, fence: 2 }, { state: 'succeeded', now: T0 + 1_002 }),
    ).toMatchObject({ state: 'succeeded', fence: 2 });
    await l.close();
  });

  it('two writes of the same holder racing (a lease renewal and the final state) never lose the final state', async () => {
    const l = await ledgers(2);
    const id = newId('same-holder');
    const c = await l.first.claim(claimOf(id, { dispatch: true }));
    if (c.kind !== 'claimed') throw new Error(c.kind);
    const ref = { businessOperationId: id, fence: 1 };
    // The second instance stands for a stale view of the same holder: it read the item before the final state.
    expect(await l.all[1]!.get(id)).toMatchObject({ state: 'dispatched' });
    await Promise.all([
      l.first.setState(ref, { state: 'succeeded', now: T0 + 10 }),
      l.all[1]!.renewLease(ref, 1_000, T0 + 10),
    ]);
    expect(await l.first.get(id)).toMatchObject({ state: 'succeeded', leaseOwner: null });
    await l.close();
  });

  it("a worker whose clock is off DynamoDB's by an hour is refused its claims, from its first request on: nothing written", async () => {
    const l = await ledgers(1);
    const realNow = Date.now;
    for (const offMs of [3_600_000, -3_600_000]) {
      const skewed = createDynamoDbLedger({ table: l.table, client: db.client() });
      const spy = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + offMs);
      try {
        const now = Date.now();
        for (const id of [newId('skewed-first'), newId('skewed-next')]) {
          const err = await skewed.claim(claimOf(id, { now, dispatch: true })).catch((e: unknown) => e);
          expect(ClockSkewError.isInstance(err), String(err)).toBe(true);
          expect(await rawItem(l.table, id)).toBeUndefined();
        }
        if (offMs > 0) {
          // Nor can it take over a live lease of a worker whose clock is right.
          const live = newId('live');
          spy.mockRestore();
          await l.first.claim(claimOf(live, { now: realNow(), leaseMs: 60_000, dispatch: true }));
          vi.spyOn(Date, 'now').mockImplementation(() => realNow() + offMs);
          const takeover = skewed.claim(claimOf(live, { owner: 'w2', now: Date.now(), dispatch: true }));
          await expect(takeover).rejects.toSatisfy(ClockSkewError.isInstance);
          expect(await l.first.get(live)).toMatchObject({ fence: 1, leaseOwner: 'worker-1' });
        }
        // Its clock set right, it claims again (the reading from before is not held against it).
        vi.restoreAllMocks();
        expect(await skewed.claim(claimOf(newId('fixed'), { now: Date.now() }))).toMatchObject({ kind: 'claimed' });
      } finally {
        vi.restoreAllMocks();
        await skewed.close();
      }
    }
    await l.close();
  });

  it('a value that is not JSON (a BigInt in the params or the packet) is a LedgerError, and nothing is written (a result: the suite)', async () => {
    const l = await ledgers(1);
    const fresh = newId('not-json');
    await expect(l.first.claim(claimOf(fresh, { params: { amount: 10n } }))).rejects.toSatisfy(LedgerError.isInstance);
    expect(await rawItem(l.table, fresh)).toBeUndefined();
    const id = newId('not-json');
    const c = await l.first.claim(claimOf(id));
    if (c.kind !== 'claimed') throw new Error(c.kind);
    const ref = { businessOperationId: id, fence: 1 };
    const before = await rawItem(l.table, id);
    const bad = packetOf(id, { lastKnown: { outcome: 'unknown', extra: 1n } as never });
    await expect(l.first.handOff(ref, bad, T0 + 1)).rejects.toSatisfy(LedgerError.isInstance);
    expect(await rawItem(l.table, id)).toEqual(before);
    await l.close();
  });

  it('a caller changing the params it claimed with, or a record it was handed, changes nothing the next write stores', async () => {
    const l = await ledgers(1);
    const id = newId('shared');
    const params = { ref: id, lines: [{ sku: 'A', qty: 1 }] };
    const c = await l.first.claim(claimOf(id, { params, dispatch: true }));
    if (c.kind !== 'claimed') throw new Error(c.kind);
    // The caller's own object (an SDK may add to it), then the record the claim handed back.
    params.lines.push({ sku: 'B', qty: 9 });
    (c.record as { operation: string }).operation = 'changed.by.caller';
    const ref = { businessOperationId: id, fence: 1 };
    const unknown = await l.first.setState(ref, { state: 'unknown', result: { list: [1] }, now: T0 + 1 });
    (unknown.result as { list: number[] }).list.push(2);
    (unknown as { attemptCount: number }).attemptCount = 99;
    await l.first.setState(ref, { state: 'succeeded', providerRef: 'rec_1', now: T0 + 2 });
    expect(await l.first.get(id)).toMatchObject({
      operation: 'sandbox.records.create',
      params: { ref: id, lines: [{ sku: 'A', qty: 1 }] },
      result: { list: [1] },
      attemptCount: 1,
      state: 'succeeded',
    });
    await l.close();
  });

  it('a write applied whose answer was lost is recognised on the read that follows, not claimed twice', async () => {
    const { ledger, applied } = await faulty('PutItemCommand', 'answer lost');
    const id = newId('lost');
    const r = await ledger.claim(claimOf(id, { dispatch: true }));
    expect(r).toMatchObject({ kind: 'claimed', takenOver: false, record: { fence: 1, state: 'dispatched' } });
    expect(applied()).toBe(1);
    await ledger.close();
  });

  it('a prune delete applied whose answer was lost is counted pruned, as it is gone', async () => {
    const { ledger, applied } = await faulty('DeleteItemCommand', 'answer lost');
    const id = newId('lost-delete');
    await ledger.claim(claimOf(id, { dispatch: true, now: T0 }));
    await ledger.setState({ businessOperationId: id, fence: 1 }, { state: 'succeeded', now: T0 + 1 });
    expect(await ledger.prune!({ before: T0 + 100 })).toMatchObject({ pruned: 1, byState: { succeeded: 1 } });
    expect(applied()).toBe(1);
    expect(await ledger.get(id)).toBeNull();
    await ledger.close();
  });

  it("a closing write throttled past the SDK's retries is tried again until it lands: never a row left open after the provider call", async () => {
    const { ledger, applied } = await faulty('UpdateItemCommand', 'throttled', 4);
    const id = newId('throttled');
    await ledger.claim(claimOf(id, { dispatch: true, now: T0 }));
    const ref = { businessOperationId: id, fence: 1 };
    expect(await ledger.setState(ref, { state: 'succeeded', now: T0 + 1 })).toMatchObject({ state: 'succeeded' });
    expect(await ledger.get(id)).toMatchObject({ state: 'succeeded' });
    expect(applied()).toBe(1);
    await ledger.close();
  }, 20_000);

  it('keeps open and handed-off operations in the sparse index only while they are open', async () => {
    const l = await ledgers(1);
    const open = newId('open');
    const done = newId('done');
    const handed = newId('handed');
    await l.first.claim(claimOf(open, { dispatch: true }));
    await l.first.claim(claimOf(done, { dispatch: true }));
    await l.first.setState({ businessOperationId: done, fence: 1 }, { state: 'succeeded', now: T0 + 1 });
    await l.first.claim(claimOf(handed, { dispatch: true }));
    await l.first.handOff({ businessOperationId: handed, fence: 1 }, packetOf(handed), T0 + 2);
    expect((await rawItem(l.table, open))?.openState).toEqual({ S: 'dispatched' });
    expect((await rawItem(l.table, handed))?.openState).toEqual({ S: 'handed-off' });
    expect((await rawItem(l.table, done))?.openState).toBeUndefined();
    expect((await l.first.list({ states: ['handed-off'] })).map((r) => r.businessOperationId)).toEqual([handed]);
    expect((await l.first.recoverCandidates(T0 + 5_000)).map((r) => r.businessOperationId)).toEqual([open]);
    await l.close();
  });

  it('with a retention, a closed operation gets the TTL attribute and reads treat it as gone once it passes; a handed-off one never expires', async () => {
    const l = await ledgers(1, { retentionMs: 60_000, cards: [] });
    const now = Date.now();
    const old = newId('ttl-old');
    const fresh = newId('ttl-fresh');
    const handed = newId('ttl-handed');
    for (const [id, at] of [
      [old, now - 120_000],
      [fresh, now],
    ] as const) {
      await l.first.claim(claimOf(id, { dispatch: true, now: at }));
      await l.first.setState({ businessOperationId: id, fence: 1 }, { state: 'succeeded', now: at + 1 });
    }
    await l.first.claim(claimOf(handed, { dispatch: true, now: now - 120_000 }));
    await l.first.handOff({ businessOperationId: handed, fence: 1 }, packetOf(handed), now - 119_000);
    expect((await rawItem(l.table, fresh))?.expiresAt).toEqual({ N: String(Math.ceil((now + 1 + 60_000) / 1000)) });
    expect((await rawItem(l.table, handed))?.expiresAt).toBeUndefined();
    expect(await l.first.get(old)).toBeNull();
    expect(await l.first.receipts(old)).toEqual([]);
    expect(await l.first.get(fresh)).toMatchObject({ state: 'succeeded' });
    expect((await l.first.list()).map((r) => r.businessOperationId).sort()).toEqual([fresh, handed].sort());
    // An expired id is forgotten: a claim starts it afresh, over the item DynamoDB has not deleted yet.
    expect(await l.first.claim(claimOf(old, { now }))).toMatchObject({
      kind: 'claimed',
      takenOver: false,
      record: { fence: 1 },
    });
    await l.close();
  });

  it('prune never deletes a new operation started over an item past its TTL while the prune ran', async () => {
    const l = await ledgers(2, { retentionMs: 60_000, cards: [] });
    const [a, b] = l.all as [typeof l.first, typeof l.first];
    const now = Date.now();
    const id = newId('ttl-reused');
    const finish = async (at: number) => {
      await a.claim(claimOf(id, { dispatch: true, now: at }));
      return a.setState({ businessOperationId: id, fence: 1 }, { state: 'succeeded', now: at + 1 });
    };
    await finish(now - 120_000);
    // While the prune exports, the id (forgotten once its TTL passed) runs again as a new operation.
    const report = await b.prune!({ before: now, onPrune: async () => void (await finish(now)) });
    expect(await a.get(id)).toMatchObject({ state: 'succeeded', createdAt: now });
    expect(report.pruned).toBe(0);
    await l.close();
  });

  it('a table that does not exist: every call is a LedgerError naming it and how to create it; none is created', async () => {
    const client = db.client();
    const l = createDynamoDbLedger({ table: 'no-such-table', client });
    for (const call of [() => l.claim(claimOf(newId('none'))), () => l.list(), () => l.get(newId('none'))])
      await expect(call()).rejects.toThrow(/table no-such-table does not exist.*ensureTable/);
    await expect(l.list()).rejects.toMatchObject({ reason: 'not-a-ledger' });
    expect((await client.send(new ListTablesCommand({}))).TableNames).not.toContain('no-such-table');
    await l.close();
    client.destroy();
  });

  it('a table made elsewhere with other keys, without the index of open operations or with one holding only keys: a LedgerError saying how to make it', async () => {
    const client = db.client();
    const make = (TableName: string, key: string) =>
      client.send(
        new CreateTableCommand({
          TableName,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }],
          KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
        }),
      );
    await make('other-keys', 'pk');
    await make('no-index', 'id');
    // The index keyed as declared, but holding only the keys: the listings would read no record from it.
    const declared = tableDefinition('keys-only');
    const index = { ...declared.GlobalSecondaryIndexes![0]!, Projection: { ProjectionType: 'KEYS_ONLY' as const } };
    await client.send(new CreateTableCommand({ ...declared, GlobalSecondaryIndexes: [index] }));
    // A table made here is CREATING until dynalite's timer marks it ACTIVE; a claim before that finds no table.
    const active = async () =>
      (await client.send(new DescribeTableCommand({ TableName: 'keys-only' }))).Table?.TableStatus === 'ACTIVE';
    while (!(await active()));
    const keyed = createDynamoDbLedger({ table: 'other-keys', client });
    const unindexed = createDynamoDbLedger({ table: 'no-index', client });
    const keysOnly = createDynamoDbLedger({ table: 'keys-only', client });
    await keysOnly.claim(claimOf(newId('keys-only'), { now: T0 }));
    const onUnreadable = () => undefined;
    const calls = [
      () => keyed.claim(claimOf(newId('keys'))),
      () => keyed.get(newId('keys')),
      () => unindexed.recoverCandidates(T0),
      () => unindexed.list({ states: ['handed-off'] }),
      () => keysOnly.recoverCandidates(T0 + 60_000, undefined, onUnreadable),
      () => keysOnly.list({ states: ['claimed'], onUnreadable }),
    ];
    for (const call of calls) await expect(call()).rejects.toThrow(/is not keyed as the ledger needs.*tableDefinition/);
    for (const call of calls) await expect(call()).rejects.toMatchObject({ reason: 'not-a-ledger' });
    await Promise.all([keyed.close(), unindexed.close(), keysOnly.close()]);
    client.destroy();
  });

  it('a closed ledger refuses work with a LedgerError and writes nothing; your client stays open for others', async () => {
    const table = await db.table('closed');
    const client = db.client();
    const mine = createDynamoDbLedger({ table, client });
    const id = newId('closed');
    const c = await mine.claim(claimOf(id));
    if (c.kind !== 'claimed') throw new Error(c.kind);
    await mine.close();
    const ref = { businessOperationId: id, fence: 1 };
    await expect(mine.claim(claimOf(newId('closed')))).rejects.toSatisfy(LedgerError.isInstance);
    await expect(mine.markDispatched(ref, T0 + 1)).rejects.toSatisfy(LedgerError.isInstance);
    await expect(mine.get(id)).rejects.toThrow(/closed/);
    const other = createDynamoDbLedger({ table, client });
    expect(await other.get(id)).toEqual(c.record);
    expect((await other.list()).length).toBe(1);
    await other.close();
    client.destroy();
  });

  it('refuses region, endpoint or requestTimeoutMs beside a client of your own: ignored, the ledger would use the table where the client points', () => {
    const client = db.client();
    const asked = [
      { region: 'eu-west-1' },
      { endpoint: 'https://dynamodb.eu-west-1.amazonaws.com' },
      { requestTimeoutMs: 500 },
    ];
    for (const one of asked) {
      const made = () => createDynamoDbLedger({ table: 'elsewhere', client, ...one });
      expect(made).toThrow(new RegExp(`${Object.keys(one)[0]} .*set it on your client`));
      expect(made).toThrow(expect.toSatisfy(LedgerError.isInstance));
    }
    client.destroy();
  });

  it('a listing whose service gives the same page key again is a LedgerError, never followed for ever', async () => {
    const again = { LastEvaluatedKey: { id: { S: 'same' } }, Items: [] };
    const send = () => new Promise((resolve) => setImmediate(() => resolve(again)));
    const ledger = createDynamoDbLedger({ table: 'endless', client: { send } as unknown as DynamoDBClient });
    await expect(ledger.list()).rejects.toThrow(/same LastEvaluatedKey twice/);
  }, 3000);

  it('a service that takes the request and never answers: a LedgerError after requestTimeoutMs, never a hang', async () => {
    const silent = createServer(() => {}).listen(0, '127.0.0.1');
    await new Promise((resolve) => silent.once('listening', resolve));
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
    const { port } = silent.address() as { port: number };
    const endpoint = `http://127.0.0.1:${port}`;
    const ledger = createDynamoDbLedger({ table: 'silent', region: 'local', endpoint, requestTimeoutMs: 100 });
    try {
      await expect(ledger.get(newId('silent'))).rejects.toSatisfy(LedgerError.isInstance);
    } finally {
      vi.unstubAllEnvs();
      await ledger.close();
      silent.close();
    }
  }, 5000);
});
