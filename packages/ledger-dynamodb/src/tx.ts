import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { businessOperationIdProblem, LedgerError, type OperationState, RetrysafeError } from '@retrysafe/contract';
import { expired, fromItem, type Item, isSame, type Stored, type Write } from './rows.js';
import { notKeyed } from './schema.js';
import { deleteAt, getItem, putNew, queryState, type StateQuery, updateAt } from './statements.js';

/** How often a write is tried again when the item changed between its read and its write. */
const MAX_TRIES = 8;

/** How long a write refused for throughput is sent again (DynamoDB's guidance: retry for about a minute). */
const THROTTLED_MS = 60_000;
const THROTTLING = ['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded'];

/** A conditional write's answer: `retried` is a refusal of a request the SDK sent more than once (see conditional). */
type WriteAnswer = 'written' | 'refused' | 'retried';

const conditionFailed = (err: unknown) => (err as { name?: string } | null)?.name === 'ConditionalCheckFailedException';

/**
 * The ledger's requests to one table. A refused condition is an answer (WriteAnswer), every other failure a
 * LedgerError naming the request; retrysafe's own errors pass through.
 */
export function createTable(client: DynamoDBClient, table: string) {
  let closed = false;
  /** This machine's clock minus DynamoDB's, bracketed from the last answer's Date header (null: none yet). */
  let skew: { readonly lo: number; readonly hi: number } | null = null;
  const clockNote = `retrysafeClock-${randomUUID()}`;
  // A stand-in client without a middleware stack gives no reading: its claims are not checked.
  client.middlewareStack?.add(
    (next) => async (args) => {
      const sentAt = Date.now();
      const out = await next(args);
      const date = Date.parse((out.response as { headers?: Record<string, string> }).headers?.date ?? '');
      // The service read its clock between sentAt and now; the header keeps whole seconds of it.
      if (Number.isFinite(date)) skew = { lo: sentAt - date - 1000, hi: Date.now() - date };
      return out;
    },
    { step: 'deserialize', name: clockNote },
  );
  const refuseClosed = (what: string) => {
    if (closed) throw new LedgerError(`DynamoDB ledger ${what} on table ${table}: the ledger is closed`);
  };
  /** retrysafe's own errors pass through; any other failure becomes a LedgerError naming the request. */
  const failed = (what: string, err: unknown) => {
    if (RetrysafeError.isInstance(err)) return err;
    // DynamoDB says only "Requested resource not found", or names a key, index or projection it lacks; the ledger never makes it.
    const { name, message } = (err ?? {}) as Error;
    const missing = name === 'ResourceNotFoundException';
    const unkeyed =
      name === 'ValidationException' &&
      /does not match the schema|Missing the key|specified index|projection type is not ALL/.test(message);
    const why = missing
      ? `table ${table} does not exist where the client points (its region, account or endpoint): create it with ensureTable(client, '${table}')`
      : unkeyed
        ? `${notKeyed(table)} (${message})`
        : `${name}: ${message}`;
    return new LedgerError(`DynamoDB ledger ${what} on table ${table} failed: ${why}`, {
      cause: err,
      ...(missing || unkeyed ? { reason: 'not-a-ledger' } : {}),
    });
  };
  async function send<T>(what: string, run: () => Promise<T>): Promise<T> {
    refuseClosed(what);
    try {
      return await run();
    } catch (err) {
      throw failed(what, err);
    }
  }
  /**
   * A refused condition is an answer: `refused`, or `retried` when the request was sent more than once (or the SDK
   * cannot say), so an earlier try may have been applied and its answer lost. A write the SDK gave up on for
   * throughput is sent again for THROTTLED_MS: a closing write that lands late still closes the operation.
   */
  async function conditional(what: string, run: () => Promise<unknown>): Promise<WriteAnswer> {
    const until = Date.now() + THROTTLED_MS;
    for (let again = 0; ; again++) {
      refuseClosed(what);
      try {
        await run();
        return 'written';
      } catch (err) {
        const attempts = (err as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 2;
        if (conditionFailed(err)) return again > 0 || attempts > 1 ? 'retried' : 'refused';
        if (!THROTTLING.includes((err as Error)?.name) || Date.now() >= until) throw failed(what, err);
        await sleep(Math.random() * Math.min(5000, 100 * 2 ** again));
      }
    }
  }
  /** The pages of a query, one at a time to the end: a caller holds one page, never the whole table. */
  async function* pages(
    what: string,
    page: (start?: Item) => Promise<{ Items?: Item[]; LastEvaluatedKey?: Item }>,
  ): AsyncGenerator<Item[]> {
    const seen = new Set<string>();
    let start: Item | undefined;
    do {
      const out = await send(what, () => page(start));
      start = out.LastEvaluatedKey;
      // A service that gives a key it gave before would be followed for ever.
      const key = JSON.stringify(start);
      if (seen.has(key))
        throw new LedgerError(
          `DynamoDB ledger ${what} on table ${table}: the service gave the same LastEvaluatedKey twice`,
        );
      seen.add(key);
      yield out.Items ?? [];
    } while (start !== undefined);
  }

  /** The operation as stored, or null (absent, or past its TTL). */
  async function load(id: string, what: string): Promise<Stored | null> {
    // No claim stores an id the contract refuses; DynamoDB would refuse some as keys (too long, empty) where SQL finds none.
    if (businessOperationIdProblem(id) !== null) return null;
    const out = await send(what, () => client.send(new GetItemCommand(getItem(table, id))));
    return out.Item && !expired(out.Item, Date.now()) ? fromItem(out.Item, table) : null;
  }

  return {
    load,
    putNew: (what: string, item: Item, nowMs: number) =>
      conditional(what, () => client.send(new PutItemCommand(putNew(table, item, nowMs)))),
    update: (what: string, item: Item, fence: number, version: number) =>
      conditional(what, () => client.send(new UpdateItemCommand(updateAt(table, item, fence, version)))),
    /** Deletes the item while it is still `st`; whether it is gone (by an earlier try whose answer was lost too). */
    async remove(what: string, { record, version }: Stored): Promise<boolean> {
      const id = record.businessOperationId;
      const done = await conditional(what, () =>
        client.send(new DeleteItemCommand(deleteAt(table, id, version, record.createdAt))),
      );
      if (done !== 'retried') return done === 'written';
      // Refused on a retry and gone: a try before it deleted it.
      return (await load(id, what)) === null;
    },
    query: (state: OperationState, what: string, q: StateQuery = {}) =>
      pages(what, (start) => client.send(new QueryCommand(queryState(table, state, q, start)))),
    skew: () => skew,
    /** Every request from now on is refused; those already sent finish. */
    close() {
      closed = true;
      client.middlewareStack?.remove(clockNote);
    },
  };
}
export type Table = ReturnType<typeof createTable>;

/** One step of an optimistic write: what to store over `current`, or a final answer with nothing to write. */
export type Plan<T> =
  | { readonly write: Write; readonly answer: T }
  | { readonly answer: T; readonly write?: undefined };

/**
 * An optimistic transaction on one item: plan the write from `current`, write it conditioned on the
 * version it started from; when another write got there first, read the item and plan again. A write
 * whose answer was lost but which was applied (the SDK sent it again) is recognised on that read (the item is exactly it).
 * `current` may come from what this process last wrote: a plan that fails on it is planned again on
 * the item as read, so a stale start never decides anything.
 */
export async function optimistic<T>(
  table: Table,
  id: string,
  what: string,
  start: { readonly current: Stored | null; readonly known: boolean },
  plan: (current: Stored | null) => Plan<T>,
  write: (next: Write, current: Stored | null) => Promise<WriteAnswer>,
): Promise<{ answer: T; written: Write | null }> {
  let current = start.current;
  let known = start.known;
  for (let tries = 0; tries < MAX_TRIES; tries++) {
    let p: Plan<T>;
    try {
      p = plan(current);
    } catch (err) {
      if (!known) throw err;
      current = await table.load(id, what);
      known = false;
      continue;
    }
    if (p.write === undefined) {
      if (!known) return { answer: p.answer, written: null };
      // Nothing to write, judged on what this process wrote: judge it on the item as stored.
      current = await table.load(id, what);
      known = false;
      continue;
    }
    const done = await write(p.write, current);
    if (done === 'written') return { answer: p.answer, written: p.write };
    const seen = await table.load(id, what);
    // Only a request sent again can have been applied unanswered: an equal write of another worker never counts.
    if (done === 'retried' && isSame(seen, p.write)) return { answer: p.answer, written: p.write };
    current = seen;
    known = false;
  }
  throw new LedgerError(
    `DynamoDB ledger ${what} of ${id}: the item changed under each of ${MAX_TRIES} tries; nothing written`,
  );
}
