// What a user installs is the packed package, not the workspace: there a package's devDependencies, the
// root's, and files `files` leaves out are all within reach, so a docs example run or compiled in the
// repository can pass while the same paste fails after `npm install`. This checks every file each public
// package ships (as `pnpm pack` lists it): a package it imports is one it declares, a .d.ts's import has
// its types in what the user gets (the package's own, or an @types package it declares), and a relative
// import or an exports target is a file that ships.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listPublicPackages, repoRoot, runtimeDependencyNames } from '../scripts/workspace.mjs';
import { shippedFiles } from './packed.js';

interface Manifest {
  name: string;
  types?: string;
  typings?: string;
  exports?: unknown;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** Module specifiers of a compiled file: its import/export statements, dynamic imports and require()s (a bundle's
 * `require$1("ajv")`, a `createRequire(import.meta.url)('yaml')`). */
function specifiersOf(code: string): string[] {
  const statics = code.matchAll(/^(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]|^import\s*['"]([^'"]+)['"]/gm);
  const dynamics = code.matchAll(/(?:\bimport|\brequire\$?\d*|\bcreateRequire\([^()]*\))\(\s*['"]([^'"]+)['"]\s*\)/g);
  return [...statics, ...dynamics].map((m) => m[1] ?? m[2]!);
}

const packageName = (s: string) =>
  s
    .split('/')
    .slice(0, s.startsWith('@') ? 2 : 1)
    .join('/');
const typesPackage = (name: string) => `@types/${name.replace(/^@/, '').replace('/', '__')}`;

/** The manifest and folder of `name` as installed where the package in `dir` finds it. */
function installed(dir: string, name: string): { m: Manifest; pkg: string } | null {
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    const pkg = join(d, 'node_modules', name);
    if (existsSync(join(pkg, 'package.json')))
      return { m: JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as Manifest, pkg };
  }
  return null;
}

/** Whether `name`, as installed where the package in `dir` finds it, ships declarations of its own. */
function hasOwnTypes(dir: string, name: string): boolean {
  const found = installed(dir, name);
  if (!found) return false;
  const { m, pkg } = found;
  return (
    Boolean(m.types ?? m.typings) ||
    JSON.stringify(m.exports ?? {}).includes('"types"') ||
    existsSync(join(pkg, 'index.d.ts'))
  );
}

/** Declared for nothing shipped: not imported, not the types of an import, not a peer another dependency requires.
 * Ours are left out: the config and the CLI load the built-in adapters and ledgers by a name they compute. */
function unusedDependencies(dir: string, declared: Set<string>, imported: Set<string>): string[] {
  const needed = new Set([...imported].map(typesPackage));
  for (const d of declared) {
    const m = installed(dir, d)?.m;
    for (const peer of Object.keys(m?.peerDependencies ?? {}))
      if (!m?.peerDependenciesMeta?.[peer]?.optional) needed.add(peer);
  }
  return [...declared].filter((d) => !d.startsWith('@retrysafe/') && !imported.has(d) && !needed.has(d));
}

/** What a user's install of the package in `dir` would lack, file by file. */
function packedProblems(
  dir: string,
  manifest: Manifest,
  shipped: Set<string>,
  read = (file: string) => readFileSync(join(dir, file), 'utf8'),
): string[] {
  const declared = new Set(runtimeDependencyNames(manifest));
  const problems: string[] = [];
  const imported = new Set<string>();
  for (const file of shipped) {
    const dts = file.endsWith('.d.ts');
    if (!dts && !/\.[cm]?js$/.test(file)) continue;
    for (const s of new Set(specifiersOf(read(file)).map((x) => (x.startsWith('.') ? x : packageName(x))))) {
      if (s.startsWith('.')) {
        const target = normalize(join(dirname(file), s));
        const candidates = dts ? [target.replace(/\.js$/, '.d.ts'), target] : [target];
        if (!candidates.some((c) => shipped.has(c))) problems.push(`${file}: ${s} is not in the package`);
        continue;
      }
      if (s.startsWith('node:') || builtinModules.includes(s) || s === manifest.name) continue;
      imported.add(s);
      if (!declared.has(s)) problems.push(`${file}: imports ${s}, which package.json does not declare`);
      else if (dts && !hasOwnTypes(dir, s) && !declared.has(typesPackage(s)))
        problems.push(`${file}: the types of ${s} are in ${typesPackage(s)}, which package.json does not declare`);
    }
  }
  for (const d of unusedDependencies(dir, declared, imported))
    problems.push(
      `package.json declares ${d}, which nothing in the package imports (a test-only one goes in devDependencies)`,
    );
  // Every file the exports map points at (its keys are subpaths, its values files).
  const targets = JSON.stringify(manifest.exports ?? {}).matchAll(/:"\.\/([^"*]+)"/g);
  for (const [, path] of targets)
    if (!shipped.has(path!)) problems.push(`exports ${path}, which is not in the package`);
  return problems;
}

describe('what each published package imports is in what a user installs', () => {
  it('catches an undeclared import, types only in a devDependency, and a file left out', () => {
    // Seen from ledger-postgres, which has pg installed (no types of its own) and @types/pg beside it.
    const dir = listPublicPackages().find((p) => p.name === '@retrysafe/ledger-postgres')!.dir;
    const files: Record<string, string> = {
      'dist/a.js': "import { x } from 'fast-check';\nexport * from './b.js';\nawait import('pg');",
      'dist/a.d.ts': "import type { Pool } from 'pg';\nexport * from './c.js';",
      'dist/c.d.ts': '',
    };
    const manifest = {
      name: '@retrysafe/x',
      exports: { '.': { types: './dist/a.d.ts', default: './dist/x.js' } },
      dependencies: { pg: '8' },
    };
    expect(packedProblems(dir, manifest, new Set(Object.keys(files)), (f) => files[f]!)).toEqual([
      'dist/a.js: imports fast-check, which package.json does not declare',
      'dist/a.js: ./b.js is not in the package',
      'dist/a.d.ts: the types of pg are in @types/pg, which package.json does not declare',
      'exports dist/x.js, which is not in the package',
    ]);
  });

  it('catches a runtime dependency nothing shipped imports or needs (a require() counts, a required peer of another does)', () => {
    const dir = listPublicPackages().find((p) => p.name === '@retrysafe/mcp')!.dir;
    const files: Record<string, string> = {
      'dist/a.js':
        "import { Server } from '@modelcontextprotocol/sdk/server/index.js';\nconst pg = createRequire(import.meta.url)('pg');",
      'dist/b.js': 'const ajv = require$1("ajv");',
    };
    // zod: a peer the SDK requires; yaml: used by the package's tests only.
    const dependencies = { '@modelcontextprotocol/sdk': '1', ajv: '8', pg: '8', yaml: '2', zod: '3' };
    expect(
      packedProblems(dir, { name: '@retrysafe/x', dependencies }, new Set(Object.keys(files)), (f) => files[f]!),
    ).toEqual([
      'package.json declares yaml, which nothing in the package imports (a test-only one goes in devDependencies)',
    ]);
  });

  for (const p of listPublicPackages())
    it(p.name, () => {
      expect(packedProblems(p.dir, p.manifest as Manifest, shippedFiles(p.dir))).toEqual([]);
    });
});

it('every file of an installed package a page or a command names (`node_modules/@retrysafe/…`) ships in it', () => {
  const packages = new Map(listPublicPackages().map((p) => [p.name, p.dir]));
  const sources = execFileSync('git', ['ls-files', '*.md', '*/src/*.ts'], { cwd: repoRoot, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f && !f.includes('.test.') && !f.startsWith('docs/decisions/') && !f.startsWith('.changeset/'));
  const named = sources.flatMap((f) =>
    [...readFileSync(join(repoRoot, f), 'utf8').matchAll(/node_modules\/(@retrysafe\/[\w-]+)\/([\w./-]*\w)/g)].map(
      ([, name, path]) => ({ f, name: name!, path: path! }),
    ),
  );
  expect(named.length).toBeGreaterThan(5);
  const missing = named.filter(({ name, path }) => {
    // A path may be a file, a folder, or (built in code) the start of a file name.
    return ![...shippedFiles(packages.get(name)!)].some((s) => s.startsWith(path));
  });
  expect(missing.map(({ f, name, path }) => `${f}: ${name}/${path}`)).toEqual([]);
});
