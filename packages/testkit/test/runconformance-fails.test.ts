// runConformance (the vitest entry adapters use) turns drill failures into failing tests whose
// messages name the scenario and the counts: run a broken adapter's conformance file in a child vitest.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { childVitest } from './child-vitest.js';
import { tempDir } from './fixtures/temp-dir.js';

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), '..');

it('a broken adapter FAILS runConformance, naming the scenario and the counts', { timeout: 120_000 }, () => {
  const outDir = tempDir('drill-broken-vitest-');
  const { status, out } = childVitest(pkgDir, 'test/fixtures/vitest.broken.config.mjs', outDir);
  expect(status, out.slice(-2000)).toBe(1);
  expect(out).toContain('broken-key records.create lost-response: providerRecords expected 1, observed 2');
  // the scenarios the broken key does not touch still pass
  expect(out).toMatch(/✓ .*permanent-error/);
  const summary = JSON.parse(readFileSync(join(outDir, 'summary.json'), 'utf8'));
  expect(summary.failed).toBeGreaterThan(0);
  expect(summary.failures.map((f: { scenario: string }) => f.scenario)).toContain('lost-response');
});
