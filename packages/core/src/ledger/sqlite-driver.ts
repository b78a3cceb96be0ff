import { createRequire } from 'node:module';
import { dirname } from 'node:path';

/**
 * The two SQLite bindings the ledger runs on. `node:sqlite` is built into Node ≥ 22.13 (no native
 * build, nothing to install); `better-sqlite3` is an optional peer for runtimes without it (Node 20)
 * or for users who already have it. Both are synchronous; the ledger only needs the few calls below.
 */
export type SqliteDriverName = 'node:sqlite' | 'better-sqlite3';
export const SQLITE_DRIVERS: readonly SqliteDriverName[] = ['node:sqlite', 'better-sqlite3'];

export interface SqliteStatement {
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): unknown;
}

export interface SqliteConnection {
  readonly driver: SqliteDriverName;
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  close(): void;
  readonly open: boolean;
}

export interface SqliteDriverAvailability {
  readonly driver: SqliteDriverName;
  readonly available: boolean;
  /** Why it cannot be used here (absent from this Node, not installed, built for another Node), when it cannot. */
  readonly reason?: string;
}

type Opener = (path: string) => SqliteConnection;
const cache = new Map<SqliteDriverName, { open: Opener } | { reason: string }>();

/** Named parameters the SQL uses (`@name`): node:sqlite refuses an object key the statement does not have. */
function namedParams(sql: string): ReadonlySet<string> {
  return new Set([...sql.matchAll(/@([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!));
}

/** Keeps only the keys of a named-parameter object that the statement declares. */
function bindable(names: ReadonlySet<string>, params: unknown[]): unknown[] {
  const first = params[0];
  if (params.length !== 1 || first === null || typeof first !== 'object' || Array.isArray(first)) return params;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(first as Record<string, unknown>)) if (names.has(k)) out[k] = v;
  return [out];
}

interface RawStatement {
  get(...p: unknown[]): unknown;
  all(...p: unknown[]): unknown[];
  run(...p: unknown[]): unknown;
}
interface RawDb {
  exec(sql: string): unknown;
  prepare(sql: string): RawStatement;
  close(): unknown;
}

function wrap(driver: SqliteDriverName, db: RawDb): SqliteConnection {
  let open = true;
  return {
    driver,
    exec: (sql) => void db.exec(sql),
    prepare(sql) {
      const st = db.prepare(sql);
      const names = namedParams(sql);
      // Positional parameters only: the driver's own statement (no rest array and spread per call).
      if (names.size === 0) return st;
      return {
        get: (...p) => st.get(...bindable(names, p)),
        all: (...p) => st.all(...bindable(names, p)),
        run: (...p) => st.run(...bindable(names, p)),
      };
    },
    close() {
      if (!open) return;
      open = false;
      db.close();
    },
    get open() {
      return open;
    },
  };
}

function load(driver: SqliteDriverName): { open: Opener } | { reason: string } {
  const hit = cache.get(driver);
  if (hit) return hit;
  let out: { open: Opener } | { reason: string };
  try {
    if (driver === 'node:sqlite') {
      const getBuiltin = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
      const mod = getBuiltin?.call(process, 'node:sqlite') as { DatabaseSync?: new (path: string) => RawDb } | undefined;
      out = mod?.DatabaseSync
        ? { open: (path) => wrap(driver, new mod.DatabaseSync!(path)) }
        : { reason: `node:sqlite is not built into Node ${process.versions.node} (it is from 22.13)` };
    } else {
      const req = createRequire(import.meta.url);
      const pj = req.resolve('better-sqlite3/package.json');
      const Database = req('better-sqlite3') as new (path: string) => RawDb;
      // The addon loads lazily, at the first database: load it now (through better-sqlite3's own
      // `bindings`, the way it does), so a binary built for another Node version shows up here, not at
      // the first write — without creating a Database just to find out.
      (createRequire(pj)('bindings') as (o: { bindings: string; module_root: string }) => unknown)({ bindings: 'better_sqlite3.node', module_root: dirname(pj) });
      out = { open: (path) => wrap(driver, new Database(path)) };
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    out = {
      reason:
        e?.code === 'MODULE_NOT_FOUND' || e?.code === 'ERR_MODULE_NOT_FOUND'
          ? `${driver} is not installed (it is an optional peer of @retrysafe/core: npm i better-sqlite3)`
          : `${driver} cannot load in Node ${process.versions.node}: ${e?.message ?? String(err)}`,
    };
  }
  cache.set(driver, out);
  return out;
}

/** Which SQLite drivers this process can use, in the order `driver: 'auto'` tries them. */
export function sqliteDrivers(): SqliteDriverAvailability[] {
  return SQLITE_DRIVERS.map((driver) => {
    const l = load(driver);
    return 'reason' in l ? { driver, available: false, reason: l.reason } : { driver, available: true };
  });
}

/**
 * Resolves a driver choice: `auto` takes node:sqlite when the runtime has it, else better-sqlite3.
 * Returns the opener, or the reasons why none can be used.
 */
export function resolveDriver(choice: SqliteDriverName | 'auto'): { driver: SqliteDriverName; open: Opener } | { reasons: string[] } {
  const candidates = choice === 'auto' ? SQLITE_DRIVERS : [choice];
  const reasons: string[] = [];
  for (const d of candidates) {
    const l = load(d);
    if ('open' in l) return { driver: d, open: l.open };
    reasons.push(l.reason);
  }
  return { reasons };
}

/** SQLITE_BUSY (another connection holds the lock) in either driver's error shape. */
export function isBusy(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown } | null;
  if (typeof e?.code === 'string' && e.code.startsWith('SQLITE_BUSY')) return true;
  return typeof e?.errcode === 'number' && (e.errcode & 0xff) === 5;
}
