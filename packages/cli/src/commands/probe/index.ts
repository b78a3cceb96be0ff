import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Options } from '../../command.js';
import { defineCommand, kebab } from '../../command.js';
import { UsageError } from '../../errors.js';

const PROBE_OPTIONS = {
  url: {
    argument: '<url>',
    description: 'a streamable HTTP MCP server instead of a command (https, or http on loopback)',
  },
  tool: { argument: '<name>', required: true, description: 'the writing tool to probe' },
  args: { argument: '<json>', default: '{}', description: 'its sample arguments (a JSON object)' },
  countTool: { argument: '<name>', required: true, description: 'a read tool that lists the effects' },
  countArgs: { argument: '<json>', description: 'its arguments (a JSON object)' },
  countPath: { argument: '<path>', required: true, description: "path to the list in the read tool's answer" },
  match: { argument: '<json>', description: 'count only items with these values (a JSON object of item path → value)' },
  concurrent: { argument: '<n>', parse: 'integer', default: 3, description: 'identical calls fired at once' },
  timeoutMs: {
    argument: '<n>',
    parse: 'integer',
    default: 200,
    description: 'client timeout of the call that is abandoned and re-issued',
  },
  settleMs: { argument: '<n>', parse: 'integer', default: 1500, description: 'wait for late effects before counting' },
  receipt: { argument: '<file>', description: 'write the probe receipt (JSON) here' },
  json: { description: 'print the probe receipt as JSON' },
} as const satisfies Options;

export const probe = defineCommand({
  name: 'probe',
  description:
    'count duplicate effects of an MCP tool: identical calls at once and after a timeout, counted through a read tool (in a sandbox you provide)',
  arguments: [['[server...]', 'after --: the MCP server command to spawn (stdio)']],
  options: PROBE_OPTIONS,
  helpAfter:
    '\nExit codes: 0 at most once · 1 duplicates · 3 no effect seen (does the read tool list what the tool creates?) · 2 bad usage.',
  // The MCP probe by its own flags and exit codes; with --json its receipt (--receipt, or a temp file) is the answer.
  async run({ io, json }, o, [server]: [string[]]) {
    const dir = o.json && !o.receipt ? mkdtempSync(join(tmpdir(), 'retrysafe-probe-')) : null;
    const receipt = dir ? join(dir, 'probe.json') : o.receipt;
    const flags = Object.entries({ ...o, receipt })
      .filter(([key, v]) => key !== 'json' && v !== undefined)
      .flatMap(([key, v]) => [`--${kebab(key)}`, String(v)]);
    const { runProbe } = await import('@retrysafe/mcp');
    try {
      const exit = await runProbe([...flags, ...(server.length ? ['--', ...server] : [])], o.json ? () => {} : io.out);
      if (o.json) json(JSON.parse(readFileSync(receipt!, 'utf8')));
      return exit;
    } catch (e) {
      throw (e as Error)?.name === 'UsageError' ? new UsageError((e as Error).message) : e;
    } finally {
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  },
});
