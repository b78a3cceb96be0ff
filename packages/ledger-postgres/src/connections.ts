import pg from 'pg';

/** The ledger's own connections: at most `max` pg.Clients and one watchdog timer instead of pg.Pool's timers around
 * every statement. A timed-out or failed query's connection is closed, never reused mid-protocol; deadlines are in
 * ticks of the watchdog, so they fire up to one `period` late. */
export class Connections {
  private readonly idle: Conn[] = [];
  private readonly open = new Set<Conn>();
  private readonly waiters: Waiter[] = [];
  /** Open or opening. */
  private count = 0;
  private tick = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly timeoutTicks: number;
  private readonly idleTicks: number;
  private readonly period: number;
  private closed = false;
  private onEmpty: (() => void) | null = null;

  constructor(private readonly options: ConnectionOptions) {
    const shortest = Math.min(options.timeoutMs || Infinity, options.idleMs || Infinity);
    this.period = Math.max(5, Math.min(1000, Math.floor(shortest / 8)));
    // Ticks to wait, +1: a deadline set just before a tick must not fire early. 0: no limit.
    this.timeoutTicks = options.timeoutMs > 0 ? Math.ceil(options.timeoutMs / this.period) + 1 : Infinity;
    this.idleTicks = options.idleMs > 0 ? Math.ceil(options.idleMs / this.period) + 1 : Infinity;
  }

  async query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    return this.send<R>(await this.acquire(), config, true);
  }

  /** A connection held by the caller until `release`, as pg.Pool's `connect`. */
  async connect() {
    const conn = await this.acquire();
    return {
      query: <R extends pg.QueryResultRow>(config: pg.QueryConfig) => this.send<R>(conn, config, false),
      release: (err?: Error) => this.release(conn, err),
    };
  }

  private acquire(): Promise<Conn> {
    if (this.closed) return Promise.reject(new Error('the ledger closed its connections'));
    const conn = this.idle.pop();
    if (conn !== undefined) return Promise.resolve(conn);
    if (this.count < this.options.max) return this.openNew();
    return new Promise<Conn>((resolve, reject) => {
      this.waiters.push({ resolve, reject, until: this.tick + this.timeoutTicks });
    });
  }

  private send<R extends pg.QueryResultRow>(conn: Conn, config: pg.QueryConfig, release: boolean) {
    return new Promise<pg.QueryResult<R>>((resolve, reject) => {
      // Closed (a statement of its transaction timed out): the watchdog no longer watches it, so the ROLLBACK that
      // follows would wait for ever.
      if (conn.gone) return reject(new Error('the connection was closed (a statement on it timed out)'));
      conn.until = this.tick + this.timeoutTicks;
      conn.fail = reject;
      // A Query is sent as it is; a config object pg would copy on every query.
      const query = new pg.Query<R>(config.text, config.values, (err: Error | undefined, res: unknown) => {
        if (conn.gone) return; // timed out: already rejected, and the connection closed
        conn.fail = null;
        if (release) this.release(conn, err);
        if (err) reject(err);
        else resolve(res as pg.QueryResult<R>);
      });
      if (config.name !== undefined) (query as unknown as { name: string }).name = config.name;
      conn.client.query(query);
    });
  }

  private release(conn: Conn, err?: unknown): void {
    if (conn.gone) return;
    if (err || this.closed) {
      this.drop(conn);
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter !== undefined) {
      waiter.resolve(conn);
      return;
    }
    conn.since = this.tick;
    this.idle.push(conn);
  }

  /** Closes every connection: idle ones now, busy ones when they are given back (or time out). */
  end(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    for (const w of this.waiters.splice(0)) w.reject(new Error('the ledger closed its connections'));
    return new Promise<void>((resolve) => {
      this.onEmpty = resolve;
      for (const conn of this.idle.splice(0)) this.drop(conn);
      this.next();
    });
  }

  private async openNew(): Promise<Conn> {
    this.count++;
    this.timer ??= setInterval(() => this.watch(), this.period).unref();
    const { connectionString, timeoutMs } = this.options;
    let client: pg.Client;
    try {
      client = new pg.Client({ connectionString, connectionTimeoutMillis: timeoutMs });
    } catch (err) {
      // A connection string pg cannot parse throws here: not counted, or `end` would wait for it for ever.
      this.count--;
      this.next();
      throw err;
    }
    const conn: Conn = { client, until: 0, since: 0, fail: null, gone: false };
    // An idle connection that breaks emits 'error', which unhandled would end the process; a busy one's query fails.
    client.on('error', () => {
      const i = this.idle.indexOf(conn);
      if (i !== -1) {
        this.idle.splice(i, 1);
        this.drop(conn);
      }
    });
    try {
      await client.connect();
    } catch (err) {
      this.drop(conn);
      throw err;
    }
    this.open.add(conn);
    return conn;
  }

  private drop(conn: Conn): void {
    if (conn.gone) return;
    conn.gone = true;
    this.count--;
    this.open.delete(conn);
    void conn.client.end().catch(() => undefined);
    this.next();
  }

  /** After a connection closed: a waiter gets a new one; once closing and none is left, `end` resolves. */
  private next(): void {
    const waiter = !this.closed && this.count < this.options.max ? this.waiters.shift() : undefined;
    if (waiter !== undefined) this.openNew().then(waiter.resolve, waiter.reject);
    if (this.count > 0) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.onEmpty?.();
    this.onEmpty = null;
  }

  private watch(): void {
    const now = ++this.tick;
    for (const conn of [...this.open]) {
      if (conn.fail === null || conn.until > now) continue;
      const fail = conn.fail;
      this.drop(conn); // the statement's answer, if it comes, is ignored
      fail(new QueryTimeoutError(this.options.timeoutMs));
    }
    // Waiters queue in the order of their deadlines; the idle list has the oldest first.
    const { timeoutMs, max } = this.options;
    const busy = `no free connection within ${timeoutMs} ms (all ${max} busy); the statement was not sent`;
    while (this.waiters[0] !== undefined && this.waiters[0].until <= now) this.waiters.shift()!.reject(new Error(busy));
    while (this.idle.length > 0 && now - this.idle[0]!.since >= this.idleTicks) this.drop(this.idle.shift()!);
  }
}

export interface ConnectionOptions {
  readonly connectionString?: string | undefined;
  readonly max: number;
  readonly timeoutMs: number;
  readonly idleMs: number;
}

export class QueryTimeoutError extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms: the connection is closed (the statement may still have committed)`);
    this.name = 'QueryTimeoutError';
  }
}

interface Conn {
  readonly client: pg.Client;
  /** The tick by which the running statement must answer, and the tick it went idle. */
  until: number;
  since: number;
  /** Rejects the running statement (null: none running). */
  fail: ((err: Error) => void) | null;
  gone: boolean;
}

type Waiter = { readonly resolve: (conn: Conn) => void; readonly reject: (err: Error) => void; readonly until: number };

/** A connection held for a transaction (a pg.PoolClient, one of the ledger's own, or a bare pg.Client). */
type Session = {
  query(config: pg.QueryConfig): Promise<unknown>;
  release?(err?: Error): void;
  on?(event: 'error', listener: () => void): unknown;
  off?(event: 'error', listener: () => void): unknown;
};

const ignore = () => undefined;

/**
 * `fn` inside BEGIN … COMMIT on `client`; any failure rolls back, and a connection whose rollback failed is closed.
 * `holdMs` (> 0): the server ends the session once it has waited that long for the next statement of the transaction (a
 * paused worker, a network gone quiet), so the row lock it took does not keep every other worker from the row.
 */
export async function transaction<T>(client: Session, fn: () => Promise<T>, holdMs = 0): Promise<T> {
  let broken: Error | undefined;
  // pg.Pool listens for a client breaking only while it is idle: unheard, the 'error' would end the process. Held
  // here, the statement under way fails instead.
  client.on?.('error', ignore);
  try {
    const hold = Math.min(Math.ceil(holdMs), 2 ** 31 - 1); // the setting's range, in ms
    await client.query({ text: hold > 0 ? `BEGIN; SET LOCAL idle_in_transaction_session_timeout = ${hold}` : 'BEGIN' });
    const out = await fn();
    await client.query({ text: 'COMMIT' });
    return out;
  } catch (err) {
    await client.query({ text: 'ROLLBACK' }).catch((e: Error) => {
      broken = e;
    });
    throw err;
  } finally {
    client.off?.('error', ignore);
    client.release?.(broken);
  }
}
