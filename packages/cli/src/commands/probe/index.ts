import { PROBE_COMMAND, UsageError as ProbeUsageError } from '@retrysafe/mcp/cli-options';
import { defineCommand, kebab, type OptionConfig } from '../../command.js';
import { InputError, UsageError } from '../../errors.js';

// retrysafe-mcp probe's options: every one takes a value, which its own parser reads.
const PROBE_OPTIONS: Record<string, OptionConfig> = Object.fromEntries(
  Object.entries(PROBE_COMMAND.options).map(([key, o]) => [key, { argument: `<${o.value}>`, description: o.help }]),
);

export const probe = defineCommand({
  name: 'probe',
  description:
    'count duplicate effects of an MCP tool: identical calls at once and after a timeout, counted through a read tool (in a sandbox you provide)',
  arguments: [['[server...]', 'after --: the MCP server command to spawn (stdio)']],
  options: { ...PROBE_OPTIONS, json: { description: 'print the probe receipt as JSON' } },
  helpAfter:
    '\nExit codes: 0 at most once · 1 duplicates · 3 no effect seen (does the read tool list what the tool creates?) · 2 bad usage or the probe could not run.',
  async run({ io, json }, { json: asJson, ...o }, [server]: [string[]]) {
    const flags = Object.entries(o).flatMap(([key, v]) => (v === undefined ? [] : [`--${kebab(key)}`, String(v)]));
    const { runProbe } = await import('@retrysafe/mcp');
    try {
      const { receipt, exit } = await runProbe([...flags, '--', ...server], asJson ? () => {} : io.out);
      if (asJson) json(receipt);
      return exit;
    } catch (e) {
      // 1 is "duplicates": a probe that could not run (its server did not start, its read tool gave no list) exits
      // 2, as bad usage does, but only a wrong command line is pointed at --help; a server command that cannot be
      // spawned is named as a file-system error is.
      if ((e as NodeJS.ErrnoException)?.syscall) throw e;
      const message = String((e as Error)?.message ?? e);
      throw e instanceof ProbeUsageError ? new UsageError(message) : new InputError(message);
    }
  },
});
