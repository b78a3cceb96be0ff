import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * Runs `vitest run --config <config>` in `cwd` in a child process, with its drill output in `outDir`: a test that a
 * suite FAILS must run it apart from the suite it is in. The exit status and all it printed.
 */
export function childVitest(cwd: string, config: string, outDir: string, args: readonly string[] = []) {
  const vitestBin = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
  const r = spawnSync(process.execPath, [vitestBin, 'run', '--config', config, '--reporter', 'verbose', ...args], {
    cwd,
    env: { ...process.env, DRILL_OUT_DIR: outDir, NO_COLOR: '1', FORCE_COLOR: '0' },
    encoding: 'utf8',
    timeout: 110_000,
  });
  return { status: r.status, out: r.stdout + r.stderr };
}
