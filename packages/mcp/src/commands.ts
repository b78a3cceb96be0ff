/** The commands of `retrysafe-mcp` and their options, as data: the parser and the help read these (no heavy imports here). */
import type { CliCommand, CliOption } from './cli-options.js';

/** How both commands name the server they talk to. */
const SERVER_OPTIONS: readonly CliOption[] = [
  {
    flag: '--url',
    value: 'text',
    help: "the server's streamable HTTP URL (https, or http on loopback), instead of -- <command…> (stdio)",
  },
];
/** The config file, then what every command that serves takes for HTTP. */
const SERVED = (configHelp: string): readonly CliOption[] => [
  { flag: '--config', value: 'text', help: configHelp },
  {
    flag: '--http',
    help: 'serve streamable HTTP on 127.0.0.1 instead of stdio (bearer token from RETRYSAFE_MCP_TOKEN, else printed)',
  },
  { flag: '--port', value: 'number', help: 'HTTP port (default: any free one)' },
  { flag: '--allow-host', value: 'list', help: 'also accept this Host name[:port] (repeatable)' },
  { flag: '--allow-origin', value: 'list', help: 'also accept this Origin (repeatable)' },
];

export const WRAP_COMMAND: CliCommand = {
  name: 'wrap',
  usage: 'retrysafe-mcp wrap --config fence.yaml [--http …] (-- <server command…> | --url URL)',
  summary: 'Fence another MCP server: the tools the fence file names run through retrysafe; the rest pass through.',
  options: [...SERVED('the fence file (YAML or JSON)'), ...SERVER_OPTIONS],
};

export const PROBE_COMMAND: CliCommand = {
  name: 'probe',
  usage:
    'retrysafe-mcp probe --tool T --args JSON --count-tool T --count-path P [options] (-- <server command…> | --url URL)',
  summary:
    'Fire identical calls at a writing tool and count its effects through a read tool (exit 0 at most once, 1 duplicates, 3 no effect seen).',
  options: [
    { flag: '--tool', value: 'text', help: 'the writing tool to probe' },
    { flag: '--args', value: 'json', help: 'its sample arguments (in a sandbox you own)' },
    { flag: '--count-tool', value: 'text', help: 'a read tool that lists the effects' },
    { flag: '--count-args', value: 'json', help: 'its arguments' },
    { flag: '--count-path', value: 'text', help: "path to the list in the read tool's answer" },
    { flag: '--match', value: 'json', help: 'count only items with these values (item path → value)' },
    { flag: '--concurrent', value: 'number', help: 'identical calls fired at once (default 3)' },
    {
      flag: '--timeout-ms',
      value: 'number',
      help: 'client timeout of the call that is abandoned and re-issued (default 200)',
    },
    { flag: '--settle-ms', value: 'number', help: 'wait for late effects before counting (default 1500)' },
    { flag: '--receipt', value: 'text', help: 'write the probe receipt (JSON) here' },
    ...SERVER_OPTIONS,
  ],
};

export const SERVE_COMMAND: CliCommand = {
  name: 'serve',
  usage: 'retrysafe-mcp --config retrysafe.yaml [--http …]',
  summary: 'Serve the configured retrysafe operations as MCP tools (stdio, or streamable HTTP on loopback).',
  options: SERVED('the retrysafe config (YAML or JSON; default: RETRYSAFE_CONFIG)'),
};
