import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  CONFIG_ENV,
  ConfigError,
  createAdapters,
  loadConfigFile,
  openLedger,
  type RetrysafeConfig,
} from '@retrysafe/config';
import {
  type AdapterV1,
  type Ledger,
  LedgerError,
  type OperationRecord,
  type OperationState,
} from '@retrysafe/contract';
import { RECOVERABLE_STATES, TERMINAL_STATES } from '@retrysafe/contract/ledger';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { type Context, EXIT, type OptionConfig, type Options, type Parsed } from '../../command.js';
import { scrubbed, UsageError } from '../../errors.js';
import { pick } from '../../output.js';

const STATES: readonly OperationState[] = [...RECOVERABLE_STATES, ...TERMINAL_STATES];

/** The `--state` option of a listing, and its value as a list filter (undefined: every state). */
export const STATE_OPTION = {
  argument: '<state>',
  parse: 'list',
  description: `only these states (${STATES.join(', ')})`,
} as const satisfies OptionConfig;
export function stateFilter(states: readonly string[] | undefined): OperationState[] | undefined {
  for (const s of states ?? [])
    if (!STATES.includes(s as OperationState))
      throw new UsageError(`--state '${s}' is not a state (${STATES.join(', ')})`);
  return states?.length ? (states as OperationState[]) : undefined;
}

// The CLI reads and resolves ledgers, never creates one (`migrate: false`): a mistyped path or schema, or another
// application's database, would show "No operations" and be left holding an empty ledger. Where SQLite cannot make
// its -shm file, the file is opened read-only (immutable when no -wal shows a writer).
function openSqlite(path: string, readOnly: boolean, busyTimeoutMs: number | undefined): Ledger {
  try {
    return createSqliteLedger({ path, migrate: false, busyTimeoutMs });
  } catch (e) {
    if (!readOnly || !/read-?only/i.test((e as Error).message)) throw e;
    const uri = pathToFileURL(path).href;
    const at = existsSync(`${path}-wal`) ? `${uri}?mode=ro` : `${uri}?immutable=1`;
    return createSqliteLedger({ path: at, migrate: false, busyTimeoutMs });
  }
}

/** `config`: the config already read, or null for none (default: read target.config); unless the command `writes`,
 * a SQLite file in a folder the operator may not write is opened read-only. */
async function openTarget(
  target: LedgerTarget,
  options: { readonly config?: RetrysafeConfig | null; readonly writes?: boolean },
): Promise<Ledger> {
  const config =
    options.config !== undefined ? options.config : target.config ? await loadConfigFile(target.config) : null;
  const location = target.db ?? config?.ledger ?? './retrysafe.db';
  const postgres = typeof location === 'string' && /^postgres(ql)?:\/\//.test(location);
  // PostgreSQL and DynamoDB have no file lock to wait for: an option that would be ignored is refused.
  if (target.busyTimeout !== undefined && (postgres || typeof location !== 'string'))
    throw new UsageError('--busy-timeout applies to a SQLite ledger only');
  if (postgres) {
    const { createPostgresLedger } = await import('@retrysafe/ledger-postgres');
    const ledger = createPostgresLedger({
      connectionString: location,
      schema: target.schema || undefined,
      migrate: false,
    });
    try {
      await ledger.ready();
      return ledger;
    } catch (e) {
      await ledger.close();
      throw e;
    }
  }
  if (target.schema) throw new UsageError('--schema applies to a postgres:// ledger only');
  // Any other URL as --db (a mistyped postgres:// one) would be read as a file path, and the message naming that path
  // would repeat its password: refused by its scheme alone (a config's ledger was checked when the config was read).
  const scheme = target.db && /^([a-z][a-z0-9+.-]*):\/\//i.exec(target.db)?.[1];
  if (scheme) throw new UsageError(`--db: a ${scheme}:// URL is not a SQLite file or a postgres:// URL`);
  // A DynamoDB table is named in a config file only: the config opens it.
  if (typeof location !== 'string') return openLedger(location);
  const base = target.db ? process.cwd() : (config?.baseDir ?? process.cwd());
  const path = resolve(base, location);
  if (!existsSync(path))
    throw new UsageError(
      `no SQLite ledger at ${path} (pass --db <file> or a postgres:// URL, or --config naming the ledger)`,
    );
  try {
    return openSqlite(path, options.writes !== true, target.busyTimeout);
  } catch (e) {
    // Held locked by another process: the path is right and the ledger busy (exit 1).
    if (LedgerError.isInstance(e) && e.reason === 'busy') throw e;
    // A folder, a file that is not SQLite, a file that cannot be opened: the path given is wrong (exit 2).
    throw new UsageError(
      `${path}: cannot open it as a SQLite ledger (${(e as Error).message.replace(/^cannot open SQLite ledger at [^:]*: /, '')})`,
    );
  }
}

/** Builds the adapters `--config <file>` names (one that cannot be built names the file, as what its reading finds
 * does), runs `fn` with them and closes every one: a close that fails neither keeps the others open nor replaces the
 * command's answer. */
export async function withAdapters<T>(
  config: RetrysafeConfig,
  file: string,
  fn: (adapters: AdapterV1[]) => Promise<T>,
  environment?: NodeJS.ProcessEnv,
): Promise<T> {
  const adapters = Object.values(
    await createAdapters(config, environment).catch((e: unknown) => {
      throw ConfigError.isInstance(e) ? new ConfigError(file, e.message) : e;
    }),
  );
  try {
    return await fn(adapters);
  } finally {
    await Promise.allSettled(adapters.map(async (a) => a.close?.()));
  }
}

export async function withLedger<T>(
  target: LedgerTarget,
  fn: (ledger: Ledger) => Promise<T>,
  options: Parameters<typeof openTarget>[1] & { readonly ledger?: Ledger } = {},
): Promise<T> {
  // `ledger`: one the caller opened for many calls (and closes): used as it is, not opened again nor closed here.
  let ledger = options.ledger;
  try {
    ledger ??= await openTarget(target, options);
    return await fn(ledger);
  } catch (err) {
    throw unreadable(err);
  } finally {
    if (!options.ledger) await ledger?.close().catch(() => undefined);
  }
}

/** A listing's rows it could not read (cut or edited from outside): their ids, collected by `onUnreadable`. */
export function unreadableRows(): { readonly ids: string[]; readonly onUnreadable: (id: string) => void } {
  const ids: string[] = [];
  return { ids, onUnreadable: (id) => void ids.push(id) };
}

/** One line per row a listing could not read, on stderr: the id only (the row may hold personal data). */
export function warnUnreadable(io: Context['io'], unreadable: readonly string[]): void {
  for (const id of unreadable)
    io.err(`retrysafe: warning: operation ${id} cannot be read (its stored row is cut or corrupt): left out`);
}

/** Prints a listing as `print` does, warning of each row it could not read: any such row is exit 1, and with --json
 * `{ ok: false, error, operations, unreadable }`. */
export function printListing<T>(
  { print, io }: Context,
  o: { readonly json?: boolean },
  rows: readonly T[],
  unreadable: readonly string[],
  text: () => string,
  ok = true,
): number {
  warnUnreadable(io, unreadable);
  if (unreadable.length === 0) return print(o, rows, text, ok);
  const message = `${unreadable.length} stored row(s) could not be read and were left out: ${unreadable.join(', ')}`;
  print(o, { ok: false, error: { code: 'RETRYSAFE_LEDGER', message }, operations: rows, unreadable }, text);
  return EXIT.failed;
}

/** A ledger file or record the driver cannot read (cut JSON, a corrupt SQLite file) is a typed LedgerError, not a raw stack;
 * a place that holds no ledger (a schema, a table missing or keyed otherwise) is the place given that is wrong (exit 2). */
function unreadable(err: unknown): unknown {
  const e = err as { name?: unknown; code?: unknown; message?: unknown } | null;
  if (LedgerError.isInstance(err) && err.reason === 'not-a-ledger') return new UsageError(err.message);
  const raw =
    err instanceof SyntaxError ||
    e?.name === 'SqliteError' ||
    (typeof e?.code === 'string' && e.code.startsWith('SQLITE_'));
  return raw ? new LedgerError(`the ledger cannot be read: ${String(e?.message ?? err)}`, { cause: err }) : err;
}

/** A record as shown to an operator: no params (they may hold PII), no stored result body. */
export function summarize(r: OperationRecord) {
  return {
    ...pick(r, 'businessOperationId', 'provider', 'operation'),
    // Only when claimed for an adapter's account: with several accounts on one ledger, whose operation it is.
    ...(r.account === undefined ? {} : { account: r.account }),
    state: r.state,
    attempts: r.attemptCount,
    ...pick(r, 'lastOutcome', 'providerRef', 'providerKey'),
    createdAt: new Date(r.createdAt).toISOString(),
    updatedAt: new Date(r.updatedAt).toISOString(),
    handoffReason: r.handoff?.reason ?? null,
  };
}
export type OperationSummary = ReturnType<typeof summarize>;

export const TARGET_OPTIONS = {
  db: {
    argument: '<path|url>',
    description: "SQLite file or postgres:// URL (default: the config's ledger, else ./retrysafe.db)",
  },
  schema: { argument: '<name>', description: 'PostgreSQL schema (default public)' },
  busyTimeout: {
    argument: '<ms>',
    parse: 'integer',
    description: 'how long to wait for a SQLite ledger file another process holds locked (default 10000)',
  },
  // An explicit --db names the ledger: a config the environment holds (another ledger's) is not read behind it.
  config: {
    argument: '<file>',
    env: CONFIG_ENV,
    envUnless: ['db'],
    description: 'retrysafe config (JSON, YAML or JavaScript); not taken from the variable when --db names the ledger',
  },
  json: { description: 'JSON output' },
} as const satisfies Options;

export type LedgerTarget = Parsed<typeof TARGET_OPTIONS>;

/** For a command that reads only the ledger from a config: with --db naming it, --config would be read for nothing. */
export function refuseIdleConfig(t: Pick<LedgerTarget, 'db' | 'config'>): void {
  if (t.db !== undefined && t.config !== undefined)
    throw new UsageError(
      '--config: this command reads only the ledger from it, and --db names the ledger: leave one out',
    );
}

/** For a refusal that asks for --config: why the variable set did not give it. */
export const configEnvHint = () =>
  process.env[CONFIG_ENV] ? `; ${CONFIG_ENV} is not read when --db names the ledger` : '';

/** targetFlags for a suggested ls, export or verify: --db alone when given (they read nothing else from a config). */
export const ledgerFlags = (t: Pick<LedgerTarget, 'db' | 'schema' | 'config'>) =>
  targetFlags(t.db ? { ...t, config: undefined } : t);

/** An id the ledger does not hold, and how to see what it does hold (a mistyped id, or another ledger). */
export const notInLedger = (id: string, t: Pick<LedgerTarget, 'db' | 'schema' | 'config'>) =>
  `no operation ${id} in the ledger: retrysafe ledger ls${ledgerFlags(t)} lists the operations it holds`;

/** `v` as one word of a shell command the output suggests (quoted unless it needs none). */
export const shellWord = (v: string) => (/^[\w@%+=:,./-]+$/.test(v) ? v : `'${v.replaceAll("'", "'\\''")}'`);

/** The flags that named this ledger, for a command the output suggests (pasted elsewhere, it must reach the same
 * ledger); quoted for a shell, a URL's password scrubbed as in all output. */
export function targetFlags(t: Pick<LedgerTarget, 'db' | 'schema' | 'config'>): string {
  const given = [
    ['--db', t.db],
    ['--schema', t.schema],
    ['--config', t.config],
  ] as const;
  return given.flatMap(([flag, v]) => (v ? [` ${flag} ${shellWord(scrubbed(v))}`] : [])).join('');
}
