import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { readDataFile } from '@retrysafe/config';
import {
  asBusinessOperationId,
  type ClaimInput,
  type ProviderKey,
  parseCard,
  type RetrySafetyCard,
} from '@retrysafe/contract';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { afterAll } from 'vitest';

/** The built `retrysafe` bin (tests run after the build, as in `pnpm test`). */
export const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
export const REPO = fileURLToPath(new URL('../../../', import.meta.url));

/** A card from a JSON or YAML file, read as `cards validate` reads it; CardValidationError lists every problem. */
export const readCardFile = (path: string): RetrySafetyCard => parseCard(readDataFile(path), path);

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  readonly env?: Record<string, string | undefined>;
  readonly cwd?: string;
  /** The bound after which the child is killed and the run fails: the CLI must never wait forever. */
  readonly timeoutMs?: number;
  /**
   * Run without the capabilities that let root ignore file permissions (root only: an operator without
   * write permission). Dropping them keeps root's own files readable wherever the checkout and Node live.
   */
  readonly withoutDacOverride?: boolean;
}

/** A running `retrysafe` child: its output so far, and its end. */
export interface CliChild {
  readonly child: ChildProcess;
  readonly stderr: () => string;
  readonly done: Promise<CliRun & { readonly signal: NodeJS.Signals | null }>;
}

/** Starts `node dist/bin.js …args`; `done` rejects when the child had to be killed after `timeoutMs`. */
export function startCli(args: readonly string[], opts: CliOptions = {}): CliChild {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build first (pnpm exec tsc -b packages/cli)`);
  const env: Record<string, string | undefined> = {
    ...process.env,
    NO_COLOR: undefined,
    FORCE_COLOR: undefined,
    ...opts.env,
  };
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
  const [command, argv] = opts.withoutDacOverride
    ? ['setpriv', ['--bounding-set', '-dac_override,-dac_read_search,-fowner', '--', process.execPath, BIN, ...args]]
    : [process.execPath, [BIN, ...args]];
  const child = spawn(command, argv, {
    cwd: opts.cwd ?? REPO,
    env: env as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const bound = opts.timeoutMs ?? 240_000;
  const done = new Promise<CliRun & { signal: NodeJS.Signals | null }>((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, bound);
    child.on('error', reject);
    // Settles once the child has exited, so a test's temp dir is never removed under a running child.
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut)
        reject(
          new Error(
            `retrysafe ${args.join(' ')} did not finish in ${bound} ms: killed\nstdout:\n${stdout}\nstderr:\n${stderr}`,
          ),
        );
      else resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, stderr: () => stderr, done };
}

/**
 * Runs `node dist/bin.js …args` as a child process: exit codes, stdout/stderr separation and
 * environment variables (NO_COLOR) are only real across the process boundary. NO_COLOR and
 * FORCE_COLOR are cleared unless the caller sets them.
 */
export async function cli(args: readonly string[], opts: CliOptions = {}): Promise<CliRun> {
  const { code, stdout, stderr } = await startCli(args, opts).done;
  return { code, stdout, stderr };
}

/** Runs the CLI with `--json` in `cwd`, and parses what it printed. */
export async function cliJson(args: readonly string[], cwd: string): Promise<CliRun & { readonly body: any }> {
  const r = await cli([...args, '--json'], { cwd });
  return { ...r, body: r.stdout ? JSON.parse(r.stdout) : null };
}

const tempDirs: string[] = [];

/** A new dir under os.tmpdir(), removed after the test file's last test and its own afterAll hooks. */
/** `retrysafe drill` over the adapter whose card lies (its lost-response scenario fails), writing into `out`. */
export const lyingDrill = (out: string, flags: readonly string[] = []) =>
  cli([
    'drill',
    '--module',
    'packages/cli/test/fixtures/lying-drill.mjs',
    '--scenario',
    'lost-response,permanent-error',
    '--out',
    out,
    ...flags,
  ]);

/** A SQLite ledger at `db` holding one claimed (in-flight) operation `id` (`more`: e.g. dispatched, a longer lease). */
export async function ledgerWithOneClaim(db: string, id: string, more: Partial<ClaimInput> = {}): Promise<void> {
  const ledger = createSqliteLedger({ path: db });
  await ledger.claim({
    businessOperationId: asBusinessOperationId(id),
    provider: 'sandbox',
    operation: 'sandbox.records.create',
    intentFingerprint: 'i',
    paramsFingerprint: 'p',
    params: { ref: 'x' },
    providerKey: 'k' as ProviderKey,
    owner: 'w',
    leaseMs: 1000,
    now: Date.now(),
    ...more,
  });
  await ledger.close();
}

/** Every record a SQLite ledger file holds, read with the ledger package (not the CLI under test). */
export async function records(db: string) {
  const ledger = createSqliteLedger({ path: db, migrate: false });
  try {
    return await ledger.list();
  } finally {
    await ledger.close();
  }
}

/** Ends the lease on `id` now, as its running out would (the row and the record it stores). */
export function expireLease(db: string, id: string): void {
  const sqlite = new DatabaseSync(db);
  const at = Date.now() - 1;
  sqlite
    .prepare(
      `UPDATE retrysafe_operations SET lease_expires_at = ?, record = json_set(record, '$.leaseExpiresAt', ?) WHERE id = ?`,
    )
    .run(at, at, id);
  sqlite.close();
}

/** Writes `value` as JSON to `dir/name`; returns the path. */
export function writeJson(dir: string, name: string, value: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(value));
  return file;
}

export function tempDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `retrysafe-cli-${label}-`));
  tempDirs.push(dir);
  return dir;
}

// Registered when a test file imports this module, so it is that file's first afterAll and runs last:
// after the file's own hooks have stopped what writes into the dirs.
afterAll(() => {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// eslint-disable-next-line no-control-regex
export const ANSI = /\u001b\[[0-9;]*m/;

/** A raw SQLite handle on a ledger file, to edit it as someone outside retrysafe would. */
export interface RawSqlite {
  exec(sql: string): void;
  prepare(sql: string): { get(...a: unknown[]): unknown; run(...a: unknown[]): unknown };
  close(): void;
}

/** Opens a ledger file with node:sqlite, as someone with sqlite3 would (outside retrysafe). */
export function openRawSqlite(path: string, opts: { readonly?: boolean } = {}): RawSqlite {
  return new DatabaseSync(path, { readOnly: opts.readonly === true }) as unknown as RawSqlite;
}

/** A partial card, as `cards init --from` takes it: the intent, the side effect, where the key travels, and that the
 * provider replays. */
export const PARTIAL_CARD = `provider: acme
operation: acme.orders.create
businessOperationId:
  intentFields: [customer, orderRef]
sideEffect:
  kind: { value: create, source: https://docs.acme.example/api/orders }
  idempotentByNature: { value: false, source: https://docs.acme.example/api/orders }
providerKey:
  travels: { value: header, source: https://docs.acme.example/api/idempotency }
  name: { value: Idempotency-Key, source: https://docs.acme.example/api/idempotency }
storedResult:
  semantics: { value: replays, source: https://docs.acme.example/api/idempotency }
`;
