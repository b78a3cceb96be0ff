import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PROBE_COMMAND, parseOptions, SERVE_COMMAND, UsageError, WRAP_COMMAND } from '../src/cli-options.js';

// An option or an argument a command accepts and then does not read is refused (exit 2), naming it.
describe('retrysafe-mcp refuses what its commands would not read', () => {
  it('serving takes no server command after -- (wrap and probe do)', () => {
    const argv = ['--config', 'retrysafe.yaml', '--', 'node', 'server.mjs'];
    expect(() => parseOptions(argv, SERVE_COMMAND)).toThrow(UsageError);
    expect(() => parseOptions(argv, SERVE_COMMAND)).toThrow(/after --.*retrysafe-mcp wrap/);
    expect(parseOptions(argv, WRAP_COMMAND).rest).toEqual(['node', 'server.mjs']);
    expect(parseOptions(['--tool', 't', ...argv.slice(2)], PROBE_COMMAND).rest).toEqual(['node', 'server.mjs']);
  });

  it('--busy-timeout is no option of serve or wrap: refused as unknown, not ignored', () => {
    for (const command of [SERVE_COMMAND, WRAP_COMMAND])
      expect(() => parseOptions(['--config', 'c.yaml', '--busy-timeout', '5'], command)).toThrow(
        /unknown option --busy-timeout/,
      );
  });
});

// Every option in the help is read by the code that runs its command (which reads its options as `o.<name>`, or
// takes them apart from `o`): an option added to a table and read nowhere fails here.
describe('every option of retrysafe-mcp is read by its command', () => {
  const source = (file: string) => readFileSync(new URL(`../src/${file}`, import.meta.url), 'utf8');
  const rows = [
    ['serve', SERVE_COMMAND, 'commands.ts'],
    ['wrap', WRAP_COMMAND, 'commands.ts'],
    ['probe', PROBE_COMMAND, 'probe.ts'],
  ] as const;
  it.each(rows.flatMap(([name, command, file]) => Object.keys(command.options).map((key) => [name, key, file])))(
    '%s --%s',
    (_name, key, file) => {
      expect(source(file)).toMatch(new RegExp(`\\bo\\.${key}\\b|\\{[^}]*\\b${key}\\b[^}]*\\} = o\\b`));
    },
  );
});
