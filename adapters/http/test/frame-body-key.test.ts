// The frame rule "a recorded key is sent as recorded" must be able to fail for a key that travels in the
// body, where the fault proxy records no header: run an adapter that re-derives it in a child vitest.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), '..');

it('runConformance fails an adapter that re-derives a key travelling in the body', { timeout: 120_000 }, () => {
  const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-rederived-'));
  try {
    const vitestBin = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
    const args = ['run', '--config', 'test/fixtures/vitest.rederived.config.mjs', '--reporter', 'verbose'];
    const r = spawnSync(process.execPath, [vitestBin, ...args, '-t', 'a recorded key'], {
      cwd: pkgDir,
      env: { ...process.env, DRILL_OUT_DIR: outDir, NO_COLOR: '1', FORCE_COLOR: '0' },
      encoding: 'utf8',
      timeout: 110_000,
    });
    const out = r.stdout + r.stderr;
    expect(r.status, out.slice(-2000)).toBe(1);
    expect(out).toContain('another key: another body');
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
});
