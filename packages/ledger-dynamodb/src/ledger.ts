import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  type ClaimInput,
  type ClaimResult,
  ClockSkewError,
  type Fenced,
  type Ledger,
  LedgerError,
  type ListFilter,
  type OperationRecord,
  type PruneOptions,
  type PruneReport,
  type Receipt,
  type RetrySafetyCard,
} from '@retrysafe/contract';
import {
  byCreation,
  checkListFilter,
  checkPruneOptions,
  checkRecoverCandidates,
  checkRef,
  claimTransition,
  fencedMethods,
  fencedTransition,
  inListing,
  isTerminal,
  leaseLive,
  numberOption,
  type OnUnreadable,
  pruneTally,
  RECOVERABLE_STATES,
  readEach,
  resolveTransition,
  STATES,
} from '@retrysafe/contract/ledger';
import { marginProblem, retentionFloor } from '@retrysafe/contract/rules';
import {
  checkSize,
  createKnown,
  expired,
  fromItem,
  type Item,
  maxBytes,
  nextStored,
  type Stored,
  toItem,
  toReceipts,
  type Write,
  withinSize,
} from './rows.js';
import { createTable, optimistic, type Table } from './tx.js';

interface DynamoDbLedgerBase {
  /** The table (create it with `ensureTable`). */
  readonly table: string;
  /** A client of your own (credentials, retries, region). Without one, a client is made from `region` and `endpoint` with the SDK's default credential chain. */
  readonly client?: DynamoDBClient;
  readonly region?: string;
  /** E.g. a local DynamoDB implementation: `http://127.0.0.1:8000`. */
  readonly endpoint?: string;
  /** Without `client`: how long a request may go unanswered before it fails (the SDK retries it, then a
   * `LedgerError`), so a service that never answers holds no run for ever. Default 15 000. */
  readonly requestTimeoutMs?: number;
  /** A claim on a machine whose clock is surely further than this from DynamoDB's (its answers' Date header) is
   * refused with `ClockSkewError`: leases are judged on the workers' clocks. Default 1000. */
  readonly maxClockSkewMs?: number;
}

/** Without `retentionMs`, closed operations are kept until `prune`. */
export type DynamoDbLedgerOptions = DynamoDbLedgerBase &
  (
    | { readonly retentionMs?: undefined }
    | {
        /**
         * How long a closed operation (succeeded, rejected, abandoned) is kept after its last change: its
         * item gets the TTL attribute, DynamoDB deletes it later, and reads treat it as gone from then on.
         * A handed-off operation waits for a person and never expires. Refused below the floor `pruneLedger`
         * keeps (the cards' longest key retention plus the margin in force).
         */
        readonly retentionMs: number;
        /** The cards you run with; an operation whose card's key retention is unknown never expires by itself. */
        readonly cards: readonly RetrySafetyCard[];
        /** The runner's policy: its `clockSkewMarginMs`, when set, is the margin in force. */
        readonly policy?: { readonly clockSkewMarginMs?: number | undefined };
      }
  );

const PRUNE_BATCH = 500;

/** The table, its requests' timeout, and how long after its last change a closed operation expires (null: never). */
function checkOptions(options: DynamoDbLedgerOptions) {
  if (typeof options?.table !== 'string' || options.table.length < 3)
    throw new LedgerError('createDynamoDbLedger needs { table } (a DynamoDB table name, 3 characters or more)');
  const { table, retentionMs: retention } = options;
  // Ignored beside a client, a region meant for the one shared table would leave each function on its own region's.
  const ignored =
    options.client && (['region', 'endpoint', 'requestTimeoutMs'] as const).find((k) => options[k] !== undefined);
  if (ignored)
    throw new LedgerError(
      `createDynamoDbLedger: ${ignored} applies only to the client the ledger makes; with { client }, set it on your client`,
    );
  const requestTimeoutMs = numberOption(options.requestTimeoutMs, 15_000, 'requestTimeoutMs', 1, true);
  const maxClockSkewMs = numberOption(options.maxClockSkewMs, 1000, 'maxClockSkewMs', 0);
  const checked = { table, requestTimeoutMs, maxClockSkewMs };
  if (retention === undefined) return { ...checked, retainFor: () => null };
  if (!(Number.isFinite(retention) && retention > 0))
    throw new LedgerError(`retentionMs must be a number > 0, got ${String(retention)}`);
  return { ...checked, retainFor: ttlRule(retention, options.cards, options.policy) };
}

/** DynamoDB's TTL deletes by itself: never below the retention floor (contract/rules), as a prune. */
function ttlRule(
  retentionMs: number,
  cards: readonly RetrySafetyCard[],
  policy: { readonly clockSkewMarginMs?: number | undefined } = {},
) {
  if (!Array.isArray(cards))
    throw new LedgerError(
      'retentionMs needs the cards you run with ({ cards }): the TTL must not delete a record while the provider may still hold its key ([] if no key outlives a record)',
    );
  const marginRefused = marginProblem(policy.clockSkewMarginMs);
  if (marginRefused !== null) throw new LedgerError(`policy.clockSkewMarginMs: ${marginRefused}`);
  const floor = retentionFloor(cards, policy);
  if (retentionMs < floor.ms)
    throw new LedgerError(
      `retentionMs ${retentionMs} is below the key retention of ${floor.card} plus its clock-skew margin in force and late-apply allowance (${floor.ms} ms): DynamoDB would delete a record while the provider may still hold its key. Use at least ${floor.ms}`,
    );
  const never = new Set(floor.unknown.map((c) => c.operation));
  return (r: OperationRecord) => (never.has(r.operation) ? null : retentionMs);
}

/**
 * The first `limit` (all when undefined) by `order` of the stored records in `sources`' pages that `keep` takes, those
 * past their TTL left out; an item that cannot be read goes to `onUnreadable` (readEach). Read a page at a time, so a
 * limited listing holds `limit` records and a page, never the table. With `past` (sources in creation order), a source
 * stops once its last item read, and so every later one, sorts after the limit's last record.
 */
async function firstOf(
  sources: AsyncIterable<Item[]>[],
  past: ((item: Item, last: OperationRecord) => boolean) | undefined,
  table: string,
  keep: (r: OperationRecord) => boolean,
  order: (a: OperationRecord, b: OperationRecord) => number,
  limit: number | undefined,
  onUnreadable: OnUnreadable | undefined,
): Promise<OperationRecord[]> {
  const now = Date.now();
  let found: OperationRecord[] = [];
  // An index lags its item: an operation that moved from one state to another may be read in both; the newer counts.
  const versions = new Map<string, number>();
  const add = (items: Item[]) => {
    const live = items.filter((item) => !expired(item, now));
    for (const st of readEach(
      live,
      (item) => item.id?.S ?? '',
      (item) => fromItem(item, table),
      onUnreadable,
    )) {
      const id = st.record.businessOperationId;
      const seen = versions.get(id);
      if (seen !== undefined && seen >= st.version) continue;
      if (seen !== undefined) found = found.filter((r) => r.businessOperationId !== id);
      versions.set(id, st.version);
      if (keep(st.record)) found.push(st.record);
    }
    if (limit !== undefined && found.length >= limit) found = found.sort(order).slice(0, limit);
  };
  await Promise.all(
    sources.map(async (pages) => {
      for await (const items of pages) {
        add(items);
        const last = limit === undefined ? undefined : found[limit - 1];
        if (past && last && items.length > 0 && past(items.at(-1)!, last)) break;
      }
    }),
  );
  return found.sort(order).slice(0, limit);
}

/**
 * Retention without TTL: closed items older than `before`, from the closed index (only those created before it), a page
 * at a time (a table larger than the process's memory is pruned all the same), in batches handed to onPrune and then
 * deleted one by one, each only while it is the version that was read (the index may lag the item).
 */
async function prune(t: Table, table: string, options: PruneOptions): Promise<PruneReport> {
  const states = checkPruneOptions(options);
  // An item that cannot be read (or, to export, its receipts) is kept and told; the others are pruned.
  const exporting = options.onPrune !== undefined && !options.dryRun;
  const tally = pruneTally(options.dryRun);
  const size = options.batchSize ?? PRUNE_BATCH;
  for (const state of new Set(states))
    for await (const items of t.query(state, 'prune', { before: options.before })) {
      const found = readEach(
        items,
        (item) => item.id?.S ?? '',
        (item) => {
          const st = fromItem(item, table);
          const old = states.includes(st.record.state) && st.record.updatedAt < options.before;
          return old ? { ...st, exported: exporting ? toReceipts(st, table) : [] } : null;
        },
        options.onUnreadable,
      ).filter((st) => st !== null);
      for (let i = 0; i < found.length; i += size) {
        const batch = found.slice(i, i + size);
        if (options.onPrune && !options.dryRun) for (const st of batch) await options.onPrune(st.record, st.exported);
        for (const st of batch) {
          if (options.dryRun || (await t.remove('prune', st))) tally.count(st.record.state);
        }
      }
    }
  return tally.report();
}

/** A listing: each state asked for (all when none) from the sparse index that holds it, in creation order. */
async function list(t: Table, table: string, filter: ListFilter = {}): Promise<OperationRecord[]> {
  checkListFilter(filter);
  if (filter.states?.length === 0 || filter.limit === 0) return [];
  const back = filter.newestFirst === true;
  const q = { back, provider: filter.provider, operation: filter.operation };
  const sources = [...new Set(filter.states ?? STATES)].map((s) => t.query(s, 'list', q));
  const createdAt = (item: Item) => Number(item.createdAt?.N);
  const past = (item: Item, last: OperationRecord) =>
    back ? createdAt(item) < last.createdAt : createdAt(item) > last.createdAt;
  const keep = (r: OperationRecord) => inListing(r, filter);
  const order = back ? (a: OperationRecord, b: OperationRecord) => byCreation(b, a) : byCreation;
  return firstOf(sources, past, table, keep, order, filter.limit, filter.onUnreadable);
}

/** Open operations with no live lease at `now`, from the sparse index, oldest change first. */
async function recoverCandidates(
  t: Table,
  table: string,
  now: number,
  limit?: number,
  onUnreadable?: OnUnreadable,
): Promise<OperationRecord[]> {
  checkRecoverCandidates(now, limit, onUnreadable);
  const sources = RECOVERABLE_STATES.map((s) => t.query(s, 'recoverCandidates'));
  const keep = (r: OperationRecord) => RECOVERABLE_STATES.includes(r.state) && !leaseLive(r, now);
  const order = (a: OperationRecord, b: OperationRecord) => a.updatedAt - b.updatedAt || byCreation(a, b);
  return firstOf(sources, undefined, table, keep, order, limit, onUnreadable);
}

/**
 * The ledger on DynamoDB, with single-item conditional writes only: a new operation is a PutItem where
 * no item is; every later write is an UpdateItem conditioned on the fence and on the item's version
 * (which every write moves), so a worker that lost its lease, or any write computed on an outdated
 * item, changes nothing. Leases are judged on the callers' clocks (the `now` each write carries). A
 * clean operation is two writes and no read: this process starts each write from what it last wrote.
 */
export function createDynamoDbLedger(options: DynamoDbLedgerOptions): Ledger {
  const o = checkOptions(options);
  const own = options.client === undefined;
  const client =
    options.client ??
    new DynamoDBClient({
      ...(options.region ? { region: options.region } : {}),
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      requestHandler: { requestTimeout: o.requestTimeoutMs, throwOnRequestTimeout: true },
    });
  const t = createTable(client, o.table);
  const known = createKnown();
  const item = (st: Stored) => toItem(st, o.retainFor);

  /**
   * `next` as written over `current` (null: a new item), its item built once; refused before sending when too large.
   * `fit`: a result or a packet's attempts too large give way to a note first (a fenced write, after the provider call).
   */
  function planned(what: string, next: Stored, current: Stored | null, fit = false): Write {
    const max = maxBytes(next, current, what);
    const write = fit ? withinSize(next, item, max) : { ...next, item: item(next) };
    const restarted = what === 'claim' && current !== null && isTerminal(current.record);
    checkSize(write.item, max, what, restarted ? current.record.state : undefined);
    return write;
  }

  /** Writes over `current` (null: a new item, also over one past its TTL as this process's clock reads it, like every read). */
  const store = (what: string, write: Write, current: Stored | null) =>
    current === null
      ? t.putNew(what, write.item, Date.now())
      : t.update(what, write.item, current.record.fence, current.version);

  /** A fenced write: `next` applied to the operation at the caller's fence, with `receipt` appended. */
  async function fenced(
    ref: Fenced,
    what: string,
    next: (r: OperationRecord) => OperationRecord,
    receipt?: Receipt,
  ): Promise<OperationRecord> {
    checkRef(ref);
    const id = ref.businessOperationId;
    const cached = known.get(id);
    const start = cached ? { current: cached, known: true } : { current: await t.load(id, what), known: false };
    const { answer, written } = await optimistic(
      t,
      id,
      what,
      start,
      (current) => {
        const updated = fencedTransition(current?.record ?? null, ref, next, receipt, current?.lastSeq ?? 0);
        if (updated === current!.record) return { answer: updated };
        const write = planned(what, nextStored(updated, current, receipt), current, true);
        return { write, answer: write.record };
      },
      (write, current) => store(what, write, current),
    );
    if (written) known.remember(written);
    return answer;
  }

  /** Refuses a claim while this machine's clock is surely more than maxClockSkewMs off DynamoDB's (as last read). */
  function refuseSkewed(id: string): void {
    const skew = t.skew();
    // What the clock is surely off by: ahead when even the bracket's low end is, behind when its high end is.
    const off = skew === null ? 0 : Math.max(skew.lo, 0) + Math.min(skew.hi, 0);
    if (Math.abs(off) > o.maxClockSkewMs) throw new ClockSkewError(Math.round(off), o.maxClockSkewMs, `claim of ${id}`);
  }

  async function claim(input: ClaimInput): Promise<ClaimResult> {
    const id = input.businessOperationId;
    const cached = known.get(id);
    // A new id is the common case: try the new item first, read only when one is there.
    const start = { current: cached ?? null, known: true };
    let unchecked = false;
    const { answer, written } = await optimistic(
      t,
      id,
      'claim',
      start,
      (current) => {
        const { result, write } = claimTransition(current?.record ?? null, input);
        if (write === null) return { answer: result };
        unchecked = t.skew() === null;
        // A refusal on an earlier reading is judged again on a fresh one: optimistic re-reads the item and plans again.
        refuseSkewed(id);
        return { write: planned('claim', nextStored(write, current, input.receipt), current), answer: result };
      },
      (write, current) => store('claim', write, current),
    );
    known.forget(id);
    // Written before any answer told DynamoDB's clock (only a new item can be): judged on the write's own answer, taken back if refused.
    if (written && unchecked)
      try {
        refuseSkewed(id);
      } catch (err) {
        await t.remove('claim', written);
        throw err;
      }
    if (written) known.remember(written);
    return answer;
  }

  async function resolve(
    id: OperationRecord['businessOperationId'],
    resolution: Parameters<Ledger['resolve']>[1],
    now: number,
    receipt?: Receipt,
  ): Promise<OperationRecord> {
    const start = { current: await t.load(id, 'resolve'), known: false };
    const { answer } = await optimistic(
      t,
      id,
      'resolve',
      start,
      (current) => {
        const next = resolveTransition(current?.record ?? null, id, resolution, now, receipt, current?.lastSeq);
        const write = planned('resolve', nextStored(next, current, receipt), current);
        return { write, answer: write.record };
      },
      (write, current) => store('resolve', write, current),
    );
    known.forget(id);
    return answer;
  }

  return {
    claim,
    ...fencedMethods(fenced),
    resolve,
    get: async (id) => (await t.load(id, 'get'))?.record ?? null,
    list: (filter) => list(t, o.table, filter),
    async receipts(id) {
      const st = await t.load(id, 'receipts');
      return st ? toReceipts(st, o.table) : [];
    },
    recoverCandidates: (now, limit, onUnreadable) => recoverCandidates(t, o.table, now, limit, onUnreadable),
    prune: (options) => prune(t, o.table, options),
    async close() {
      t.close();
      known.clear();
      if (own) client.destroy();
    },
  };
}
