// Each command's options as data (no heavy imports here): node:util's parseArgs reads them, the help is written from them.
import { parseArgs } from 'node:util';
import { suggest } from '@retrysafe/core/suggest';
import type { UpstreamTarget } from './fence/upstream.js';

/** Thrown for bad command-line use: printed as one line, exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

type ValueTypes = { text: string; number: number; json: Record<string, unknown>; list: string[] };
export type Values<O extends Options> = {
  readonly [K in keyof O]?: O[K] extends { value: infer V extends keyof ValueTypes } ? ValueTypes[V] : boolean;
};

/** Options keyed in camel case (`countTool` is `--count-tool`). What follows the flag: `text`, a whole `number` (from 0
 * to `max`), a `json` object, a comma-separated `list` (repeatable); none for a switch. `httpOnly`: read with --http. */
type Options = Readonly<
  Record<
    string,
    { readonly value?: keyof ValueTypes; readonly help: string; readonly max?: number; readonly httpOnly?: true }
  >
>;
export type CliCommand = { readonly usage: string; readonly summary: string; readonly options: Options };

/** What a config or fence file, or the runner over it, refuses: bad config (exit 2), named by its file; and wrap's
 * upstream server that cannot be started, a bad setup too. */
export const CONFIG_CODES = [
  'RETRYSAFE_CONFIG',
  'RETRYSAFE_FENCE_CONFIG',
  'RETRYSAFE_FILE_LIMIT',
  'RETRYSAFE_RUNNER_CONFIG',
  'RETRYSAFE_UNKNOWN_OPERATION',
  'RETRYSAFE_UPSTREAM_START',
];

/** How both fence commands name the server they talk to. */
const SERVER = {
  url: {
    value: 'text',
    help: "the server's URL (https, or http on loopback) instead of -- <command…> (stdio): streamable HTTP, else HTTP+SSE",
  },
  startTimeoutMs: {
    value: 'number',
    help: 'how long the server may take to answer its initialize (default 60000; an npx -y first download may need more)',
  },
} as const;

/** The config file, then what every command that serves takes for HTTP. */
const served = (configHelp: string) =>
  ({
    config: { value: 'text', help: configHelp },
    http: {
      help: 'serve streamable HTTP on 127.0.0.1 instead of stdio (bearer token from RETRYSAFE_MCP_TOKEN, else printed)',
    },
    port: { value: 'number', max: 65535, httpOnly: true, help: 'HTTP port (default: any free one)' },
    allowHost: { value: 'list', httpOnly: true, help: 'also accept this Host name[:port] (repeatable)' },
    allowOrigin: { value: 'list', httpOnly: true, help: 'also accept this Origin (repeatable)' },
  }) as const;

export const SERVE_COMMAND = {
  usage: 'retrysafe-mcp --config retrysafe.yaml [--http …]',
  summary: 'Serve the configured retrysafe operations as MCP tools (stdio, or streamable HTTP on loopback).',
  options: served('the retrysafe config (YAML, JSON or JavaScript; default: the file RETRYSAFE_CONFIG names)'),
} as const satisfies CliCommand;

export const WRAP_COMMAND = {
  usage: 'retrysafe-mcp wrap --config fence.yaml [--http …] (-- <server command…> | --url URL)',
  summary: 'Fence another MCP server: the tools the fence file names run through retrysafe; the rest pass through.',
  options: { ...served('the fence file (YAML or JSON)'), ...SERVER },
} as const satisfies CliCommand;

export const PROBE_COMMAND = {
  usage:
    'retrysafe-mcp probe --tool T --args JSON --count-tool T --count-path P [options] (-- <server command…> | --url URL)',
  summary:
    'Fire identical calls at a writing tool and count its effects through a read tool (exit 0 at most once, 1 duplicates, 3 no effect seen, 2 could not run or was stopped).',
  options: {
    tool: { value: 'text', help: 'the writing tool to probe' },
    args: { value: 'json', help: 'its sample arguments (in a sandbox you own)' },
    countTool: { value: 'text', help: 'a read tool that lists the effects' },
    countArgs: { value: 'json', help: 'its arguments' },
    countPath: { value: 'text', help: "path to the list in the read tool's answer" },
    match: { value: 'json', help: 'count only items with these values (item path → value)' },
    concurrent: { value: 'number', help: 'identical calls fired at once (default 3)' },
    timeoutMs: { value: 'number', help: 'client timeout of the call that is abandoned and re-issued (default 200)' },
    settleMs: { value: 'number', help: 'wait for late effects before counting (default 1500)' },
    receipt: { value: 'text', help: 'write the probe receipt (JSON) here' },
    ...SERVER,
  },
} as const satisfies CliCommand;

const flag = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** parseArgs' refusal in this command line's words. */
function usageError(e: Error & { code?: string }, options: Options): UsageError {
  const arg = /'(\S+?)[' ]/.exec(e.message)?.[1] ?? '';
  if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const close = suggest(
      arg,
      Object.keys(options).map((k) => `--${flag(k)}`),
    );
    return new UsageError(`unknown option ${arg}${close} (see retrysafe-mcp --help)`);
  }
  if (e.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
    return new UsageError(`unexpected argument ${JSON.stringify(arg)}`);
  return new UsageError(/does not take/.test(e.message) ? `${arg} takes no value` : `${arg} needs a value`);
}

function convert(name: string, o: Options[string], raw: string | boolean | (string | boolean)[]): unknown {
  if (o.value === 'list') return (raw as string[]).flatMap((x) => x.split(',').map((s) => s.trim())).filter(Boolean);
  if (o.value === 'number') {
    const n = Number(raw);
    if (String(raw).trim() === '' || !Number.isSafeInteger(n) || n < 0 || n > (o.max ?? n))
      throw new UsageError(`${name} must be a whole number from 0${o.max ? ` to ${o.max}` : ''}`);
    return n;
  }
  if (o.value !== 'json') return raw;
  let v: unknown = null;
  try {
    v = JSON.parse(raw as string);
  } catch {
    // refused below, as any other value that is not an object
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new UsageError(`${name} must be a JSON object`);
  return v;
}

/** Parses `argv` against the command's options; what follows `--` (an upstream server's command line) is `rest`. */
export function parseOptions<O extends Options>(argv: readonly string[], command: { readonly options: O }) {
  const end = argv.indexOf('--');
  // Only a command that names a server (--url, or its command after --) reads what follows --.
  if (end >= 0 && !('url' in command.options))
    throw new UsageError('serving starts no server: a server command after -- is for retrysafe-mcp wrap (or probe)');
  const table = Object.entries(command.options);
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    ({ values } = parseArgs({
      args: end >= 0 ? argv.slice(0, end) : [...argv],
      strict: true,
      options: Object.fromEntries(
        table.map(([k, o]) => [
          flag(k),
          { type: o.value ? ('string' as const) : ('boolean' as const), multiple: o.value === 'list' },
        ]),
      ),
    }));
  } catch (e) {
    throw usageError(e as Error, command.options);
  }
  const parsed: Record<string, unknown> = {};
  for (const [k, o] of table) {
    const raw = values[flag(k)];
    if (raw !== undefined) parsed[k] = convert(`--${flag(k)}`, o, raw);
  }
  // Given without --http, they would be left unread.
  const unread = parsed.http ? undefined : table.find(([k, o]) => o.httpOnly && parsed[k] !== undefined)?.[0];
  if (unread)
    throw new UsageError(
      `--${flag(unread)} is for --http: add --http to serve HTTP, or leave it out to serve on stdio`,
    );
  return { values: parsed as Values<O>, rest: end >= 0 ? argv.slice(end + 1) : [] };
}

/** The help of every command, from their option tables. */
export function helpText(commands: readonly CliCommand[]): string {
  const lines = ['retrysafe-mcp: retrysafe operations as MCP tools, and a fence in front of other MCP servers.', ''];
  for (const c of commands) {
    lines.push(`  ${c.usage}`, `      ${c.summary}`);
    for (const [k, o] of Object.entries(c.options))
      lines.push(`      ${`--${flag(k)}${o.value ? ` <${o.value}>` : ''}`.padEnd(26)} ${o.help}`);
    lines.push('');
  }
  lines.push(
    '  retrysafe-mcp --help',
    '      This text.',
    '  retrysafe-mcp --version',
    '      The version of retrysafe-mcp (-V too).',
    '',
    'Exit codes: 0 ok, or stopped by a signal (SIGTERM, SIGINT, SIGHUP, SIGQUIT; a second one ends it by that signal); 1 any other failure (probe: duplicates); 2 bad usage or config, an upstream server that cannot be started, or a probe that could not run or was stopped; 3 probe saw no effect.',
  );
  return lines.join('\n');
}

/** Names of the loopback host: an upstream's http URL must use one; `--http` listens on it and accepts them. */
export const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

/** The upstream server: `--url`, else the command after `--`. */
export function target(
  url: string | undefined,
  rest: readonly string[],
  env?: Readonly<Record<string, string | null>>,
): UpstreamTarget {
  if (url !== undefined) {
    if (rest.length) throw new UsageError('name the server once: -- <command …> or --url URL, not both');
    const u = URL.parse(url);
    if (!u) throw new UsageError(`--url ${url} is not a URL`);
    if (!LOOPBACK_NAMES.includes(u.hostname) && u.protocol !== 'https:')
      throw new UsageError('a server URL must be https, or http on loopback');
    return { url };
  }
  if (rest.length === 0) throw new UsageError('name the server: -- <command …> (stdio) or --url URL (HTTP)');
  return { command: rest[0]!, args: rest.slice(1), ...(env ? { env } : {}) };
}
