import { RetrysafeError } from '@retrysafe/contract';
import { createRedactor } from '@retrysafe/core/internal';
import { CommanderError } from 'commander';
import { EXIT, type Io } from './command.js';

export class UsageError extends Error {
  override name = 'UsageError';
}

/** Exit 2 as usage, but what is wrong is not the command line: what it reads (a file's content, a variable) or talks
 * to (a probe's server or read tool). The message says what; --help would not, so no hint is printed. */
export class InputError extends UsageError {
  override name = 'InputError';
}

/** What `run` returns; what it throws (a file's or variable's content refused) becomes an InputError. */
export function orInputError<T>(prefix: string, run: () => T): T {
  try {
    return run();
  } catch (e) {
    // The system's `ENOENT: no such file or directory, open 'x'` as the reason alone: the prefix names the file.
    throw new InputError(prefix + (e as Error).message.replace(/^(E[A-Z]+): ([^,]+),.*$/s, '$2 ($1)'));
  }
}

/** A usage error with `message` unless exactly one of the choices is made (neither undefined nor false). */
export function exactlyOne(choices: readonly unknown[], message: string): void {
  if (choices.filter((c) => c !== undefined && c !== false).length !== 1) throw new UsageError(message);
}

export function pickKnown<T extends string>(kind: string, known: readonly T[], wanted: readonly string[]): T[] {
  const unknown = wanted.filter((w) => !(known as readonly string[]).includes(w));
  if (unknown.length)
    throw new UsageError(`unknown ${kind} ${unknown.map((n) => `'${n}'`).join(', ')} (known: ${known.join(', ')})`);
  return known.filter((k) => wanted.includes(k));
}

/** Whether a filter given on the command line keeps `value` (no filter keeps everything). */
export const wanted = (filter: readonly string[] | undefined, value: string) =>
  !filter?.length || filter.includes(value);

/** A person asked for something the handoff packet marks as not safe, without --force. Exit 1, nothing sent. */
export class RefusedError extends Error {
  override name = 'RefusedError';
}

/** Ctrl-C (SIGINT) stopped the command; what it created for itself is removed (exit 130). */
export class InterruptedError extends Error {
  override name = 'InterruptedError';
}

/** Contract errors that mean the command line is wrong or its file cannot be read (exit 2); only an invalid id is the
 * command line's (a config or a file over the limits is fixed in the file: no --help hint). */
const USAGE_CODES = ['RETRYSAFE_INVALID_ID', 'RETRYSAFE_CONFIG', 'RETRYSAFE_FILE_LIMIT'];

const FS_WORDS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EISDIR: 'is a directory',
  EEXIST: 'already exists',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EFBIG: 'the file is too large',
  EROFS: 'read-only file system',
};
/** Codes only storage gives: a write that fails once its file is open (a full disk) carries no path, but is one. */
const STORAGE_ONLY = ['ENOSPC', 'EDQUOT', 'EFBIG'];

/** A file-system error (ENOENT, EACCES, ENOTDIR…) as one line naming the path, or null for anything else. */
function fileSystemError(e: unknown): string | null {
  const x = e as Partial<NodeJS.ErrnoException> | null | undefined;
  const code = String(x?.code);
  if (!/^E[A-Z]+$/.test(code) || typeof x?.syscall !== 'string') return null;
  // a path, or a storage-only code, is what makes it a file-system error (a refused connection has neither)
  if (typeof x.path !== 'string')
    return STORAGE_ONLY.includes(code) ? `cannot ${x.syscall}: ${FS_WORDS[code]} (${code})` : null;
  // A spawn's syscall already names its command ("spawn x"), its path too.
  const what = x.syscall.endsWith(` ${x.path}`) ? x.syscall : `${x.syscall} ${x.path}`;
  return `cannot ${what}: ${FS_WORDS[code] ?? code} (${code})`;
}

export const scrubbed = createRedactor().text;

export function reportError(e: unknown, io: Io, json: ((value: unknown) => void) | null): number {
  // Commander printed its own message or help; help asked for exits 0, a bare `retrysafe ledger` is usage.
  if (e instanceof CommanderError) {
    if (e.exitCode === 0) return EXIT.ok;
    json?.({ ok: false, error: { code: 'USAGE', message: scrubbed(e.message.replace(/^error: /, '')) } });
    return EXIT.usage;
  }
  if (e instanceof InterruptedError) {
    json?.({ ok: false, error: { code: 'INTERRUPTED', message: e.message } });
    io.err(`retrysafe: ${e.message}`);
    return EXIT.interrupted;
  }
  const fsError = fileSystemError(e);
  const usage =
    fsError !== null || e instanceof UsageError || (RetrysafeError.isInstance(e) && USAGE_CODES.includes(e.code));
  // A driver's or the system's message may quote a credential or an address: scrubbed like receipts. Not config's own:
  // it names places, never values (it scrubs what it quotes), and scrubbing its advice garbles it ("password: drop it").
  const own = RetrysafeError.isInstance(e) && e.code === 'RETRYSAFE_CONFIG';
  const message = own ? e.message : scrubbed(fsError ?? (e instanceof Error ? e.message : String(e)));
  if (usage) {
    json?.({ ok: false, error: { code: fsError ? 'FILE_SYSTEM' : 'USAGE', message } });
    const hint =
      e instanceof UsageError
        ? !(e instanceof InputError)
        : RetrysafeError.isInstance(e) && e.code === 'RETRYSAFE_INVALID_ID';
    io.err(`retrysafe: ${message}${hint ? '\n(run with --help for usage)' : ''}`);
    return EXIT.usage;
  }
  const code = RetrysafeError.isInstance(e) ? e.code : e instanceof RefusedError ? 'REFUSED' : undefined;
  json?.({ ok: false, error: { code: code ?? 'ERROR', message } });
  // Typed errors carry a message written for the reader; anything else is a bug: show the stack.
  io.err(`retrysafe: ${code || !(e instanceof Error) ? message : scrubbed(e.stack ?? message)}`);
  return EXIT.failed;
}
