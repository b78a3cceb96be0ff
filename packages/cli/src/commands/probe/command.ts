import { defineCommand } from '../../command.js';
import { PROBE_OPTIONS, probeCommand, probeJson } from './index.js';

export const probe = defineCommand({
  name: 'probe',
  description:
    'count duplicate effects of an MCP tool: identical calls at once and after a timeout, counted through a read tool (in a sandbox you provide)',
  arguments: [['[server...]', 'after --: the MCP server command to spawn (stdio)']],
  options: PROBE_OPTIONS,
  helpAfter:
    '\nExit codes: 0 at most once · 1 duplicates · 3 no effect seen (does the read tool list what the tool creates?) · 2 bad usage.',
  run: ({ io, json }, o, [server]: [string[]]) =>
    o.json ? probeJson(o, server, json) : probeCommand(o, server, (l) => io.out(l)),
});
