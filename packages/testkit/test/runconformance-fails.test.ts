// runConformance (the vitest entry adapters use) turns drill failures into failing tests whose
// messages name the scenario and the counts: run a broken adapter's conformance file in a child vitest.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { tempDir } from './fixtures/temp-dir.js';

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), '..');

it('a broken adapter FAILS runConformance, naming the scenario and the counts', { timeout: 120_000 }, () => {
  const outDir = tempDir('drill-broken-vitest-');
  const vitestBin = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
  const r = spawnSync(
    process.execPath,
    [vitestBin, 'run', '--config', 'test/fixtures/vitest.broken.config.mjs', '--reporter', 'verbose'],
    {
      cwd: pkgDir,
      env: { ...process.env, DRILL_OUT_DIR: outDir, NO_COLOR: '1', FORCE_COLOR: '0' },
      encoding: 'utf8',
      timeout: 110_000,
    },
  );
  const out = r.stdout + r.stderr;
  expect(r.status, out.slice(-2000)).toBe(1);
  expect(out).toContain('broken-key records.create lost-response: providerRecords expected 1, observed 2');
  // the scenarios the broken key does not touch still pass
  expect(out).toMatch(/✓ .*permanent-error/);
  const summary = JSON.parse(readFileSync(join(outDir, 'summary.json'), 'utf8'));
  expect(summary.failed).toBeGreaterThan(0);
  expect(summary.failures.map((f: { scenario: string }) => f.scenario)).toContain('lost-response');
});
