// Core's published entry is a single bundled module (scripts/bundle-dist.mjs); the contract is not bundled,
// so its root and its subpaths share one set of error classes (its packaging test checks that):
// a cold import links one file each instead of dozens, which is most of its cost. The import time
// itself is measured in `pnpm bench` (footprint), not asserted here.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);

describe.each(['@retrysafe/core'])('%s entry', (name) => {
  const pjPath = require.resolve(`${name}/package.json`);
  const pj = JSON.parse(readFileSync(pjPath, 'utf8')) as {
    exports: Record<string, { types: string; default: string }>;
    main: string;
  };

  it('is one bundled module: no static import of another file of the package', () => {
    expect(pj.exports['.']!.default).toBe('./dist/index.bundle.js');
    expect(pj.exports['.']!.types).toBe('./dist/index.bundle.d.ts');
    expect(pj.main).toBe(pj.exports['.']!.default);
    const code = readFileSync(join(dirname(pjPath), pj.exports['.']!.default), 'utf8');
    const staticImports = [...code.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+["']([^"']+)["']/gm)].map(
      (m) => m[1]!,
    );
    expect(staticImports.filter((s) => s.startsWith('.'))).toEqual([]);
    // What stays external: node builtins, our own packages, and the package's declared dependencies.
    const deps = Object.keys(
      (JSON.parse(readFileSync(pjPath, 'utf8')) as { dependencies?: Record<string, string> }).dependencies ?? {},
    );
    for (const s of staticImports)
      expect(
        s.startsWith('node:') || s.startsWith('@retrysafe/') || deps.some((d) => s === d || s.startsWith(`${d}/`)),
        s,
      ).toBe(true);
  });

  it('exports what the tsc-built entry (and its .d.ts) declares', async () => {
    const bundled = await import(name);
    const built = await import(join(dirname(pjPath), 'dist', 'index.js'));
    expect(Object.keys(bundled).sort()).toEqual(Object.keys(built).sort());
  });
});
