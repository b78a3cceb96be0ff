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
