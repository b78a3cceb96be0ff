/** The command line of `retrysafe-mcp`: each command declares its options as data; one parser and one help text read them. */

/** Thrown for bad command-line use: printed as one line, exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface CliOption {
  readonly flag: `--${string}`;
  /** What follows the flag: `text`, a `number` (≥ 0), a `json` object, a comma-separated `list` (repeatable); none for a switch. */
  readonly value?: 'text' | 'number' | 'json' | 'list';
  readonly help: string;
}

export interface CliCommand {
  readonly name: string;
  readonly usage: string;
  readonly summary: string;
  readonly options: readonly CliOption[];
}

export interface ParsedOptions {
  readonly values: ReadonlyMap<string, unknown>;
  /** What follows `--` (an upstream server's command line). */
  readonly rest: readonly string[];
}

function parseValue(o: CliOption, raw: string, previous: unknown): unknown {
  switch (o.value) {
    case 'number': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n) || n < 0)
        throw new UsageError(`${o.flag} must be a non-negative number`);
      return n;
    }
    case 'json': {
      let v: unknown;
      try {
        v = JSON.parse(raw);
      } catch {
        throw new UsageError(`${o.flag} must be a JSON object`);
      }
      if (typeof v !== 'object' || v === null || Array.isArray(v))
        throw new UsageError(`${o.flag} must be a JSON object`);
      return v;
    }
    case 'list':
      return [
        ...((previous as string[] | undefined) ?? []),
        ...raw
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean),
      ];
    default:
      return raw;
  }
}

/** Parses `argv` against the command's options: unknown flags and missing values are usage errors. */
export function parseOptions(argv: readonly string[], command: CliCommand): ParsedOptions {
  const values = new Map<string, unknown>();
  const dashdash = argv.indexOf('--');
  const head = dashdash >= 0 ? argv.slice(0, dashdash) : argv;
  for (let i = 0; i < head.length; i++) {
    const arg = head[i]!;
    const o = command.options.find((x) => x.flag === arg);
    if (!o)
      throw new UsageError(
        arg.startsWith('--')
          ? `unknown option ${arg} (see retrysafe-mcp --help)`
          : `unexpected argument ${JSON.stringify(arg)}`,
      );
    if (!o.value) {
      values.set(o.flag, true);
      continue;
    }
    const raw = head[++i];
    if (raw === undefined) throw new UsageError(`${o.flag} needs a value`);
    values.set(o.flag, parseValue(o, raw, values.get(o.flag)));
  }
  return { values, rest: dashdash >= 0 ? argv.slice(dashdash + 1) : [] };
}

/** Where the commands print by default: a line to stderr (logs) or stdout (results). */
export const toStderr = (line: string): void => void process.stderr.write(`${line}\n`);
export const toStdout = (line: string): void => void process.stdout.write(`${line}\n`);

export const text = (p: ParsedOptions, flag: string) => p.values.get(flag) as string | undefined;
export const num = (p: ParsedOptions, flag: string) => p.values.get(flag) as number | undefined;
export const json = (p: ParsedOptions, flag: string) => p.values.get(flag) as Record<string, unknown> | undefined;
export const list = (p: ParsedOptions, flag: string) => (p.values.get(flag) as string[] | undefined) ?? [];

/** The help of every command, from their option tables. */
export function helpText(commands: readonly CliCommand[]): string {
  const lines = ['retrysafe-mcp: retrysafe operations as MCP tools, and a fence in front of other MCP servers.', ''];
  for (const c of commands) {
    lines.push(`  ${c.usage}`, `      ${c.summary}`);
    for (const o of c.options) lines.push(`      ${`${o.flag}${o.value ? ` <${o.value}>` : ''}`.padEnd(26)} ${o.help}`);
    lines.push('');
  }
  lines.push(
    '  retrysafe-mcp --help',
    '      This text.',
    '',
    'Exit codes: 0 ok, 1 failure (probe: duplicates), 2 bad usage or config, 3 probe saw no effect.',
  );
  return lines.join('\n');
}
