import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { bin } from './fence-helpers.js';

const run = (...args: string[]) =>
  spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });

describe('retrysafe-mcp command line', () => {
  it('--help exits 0 and lists every command with its options', () => {
    const r = run('--help');
    expect(r.status).toBe(0);
    const listed = [
      'retrysafe-mcp --config',
      'retrysafe-mcp wrap',
      'retrysafe-mcp probe',
      '--allow-origin',
      '--count-path',
      '--url',
    ];
    expect(listed.filter((s) => !r.stdout.includes(s))).toEqual([]);
  });

  it('wrap and probe refuse an unknown option or a missing value the same way: one line, exit 2', () => {
    for (const cmd of ['wrap', 'probe']) {
      const unknown = run(cmd, '--bogus');
      expect(unknown.status).toBe(2);
      expect(unknown.stderr).toMatch(new RegExp(`^retrysafe-mcp ${cmd}: unknown option --bogus`));
      const missing = run(cmd, '--url');
      expect(missing.status).toBe(2);
      expect(missing.stderr).toContain('--url needs a value');
    }
    const json = run('probe', '--tool', 't', '--args', '[1]');
    expect(json.status).toBe(2);
    expect(json.stderr).toContain('--args must be a JSON object');
  });

  it('without a config: a usage error, exit 2', () => {
    const r = run();
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--config/);
  });
});
