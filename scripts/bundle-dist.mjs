// Bundles a package's built entry (dist/index.js, emitted by tsc) into one ES module,
// dist/index.bundle.js (+ a .d.ts re-exporting tsc's), which package.json's "." export points at. One file instead of a few dozen:
// most of a cold import is resolving and linking small modules (contract: ~28 files).
// Dependencies, peers and node: builtins stay external.
// Run from the package directory after `tsc -b`: `node ../../scripts/bundle-dist.mjs`.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { rolldown } from 'rolldown';

// The bundle's declaration: tsc's, re-exported (the bundle exports exactly what dist/index.js does;
// core's test/bundle.test.ts checks). It does not depend on tsc's output, so `--dts-only` writes it
// before a `tsc -b` of dependent packages that resolve this package's types through it.
mkdirSync('dist', { recursive: true });
writeFileSync('dist/index.bundle.d.ts', "export * from './index.js';\n");
if (process.argv.includes('--dts-only')) process.exit(0);

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const deps = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})];
const isDep = (id) => deps.some((d) => id === d || id.startsWith(`${d}/`));
const bundle = await rolldown({
  input: 'dist/index.js',
  platform: 'node',
  logLevel: 'warn',
  external: (id) => id.startsWith('node:') || isDep(id),
});
try {
  await bundle.write({ file: 'dist/index.bundle.js', format: 'esm' });
} finally {
  await bundle.close();
}
