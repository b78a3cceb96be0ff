// The frame rule "a recorded key is sent as recorded" must be able to fail for a key that travels in the
// body, where the fault proxy records no header: run an adapter that re-derives it in a child vitest.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { childVitest } from '../../../packages/testkit/test/child-vitest.js';

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), '..');

it('runConformance fails an adapter that re-derives a key travelling in the body', { timeout: 120_000 }, () => {
  const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-rederived-'));
  try {
    const { status, out } = childVitest(pkgDir, 'test/fixtures/vitest.rederived.config.mjs', outDir, [
      '-t',
      'a recorded key',
    ]);
    expect(status, out.slice(-2000)).toBe(1);
    expect(out).toContain('another key: another body');
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
});
