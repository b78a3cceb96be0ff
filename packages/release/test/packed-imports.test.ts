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
}

/** Module specifiers of a compiled file: its import/export statements and dynamic imports. */
function specifiersOf(code: string): string[] {
  const statics = code.matchAll(/^(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]|^import\s*['"]([^'"]+)['"]/gm);
  const dynamics = code.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g);
  return [...statics, ...dynamics].map((m) => m[1] ?? m[2]!);
}

const packageName = (s: string) =>
  s
    .split('/')
    .slice(0, s.startsWith('@') ? 2 : 1)
    .join('/');
const typesPackage = (name: string) => `@types/${name.replace(/^@/, '').replace('/', '__')}`;

/** Whether `name`, as installed where the package in `dir` finds it, ships declarations of its own. */
function hasOwnTypes(dir: string, name: string): boolean {
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    const pkg = join(d, 'node_modules', name);
    if (!existsSync(join(pkg, 'package.json'))) continue;
    const m = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as Manifest;
    return (
      Boolean(m.types ?? m.typings) ||
      JSON.stringify(m.exports ?? {}).includes('"types"') ||
      existsSync(join(pkg, 'index.d.ts'))
    );
  }
  return false;
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
      if (!declared.has(s)) problems.push(`${file}: imports ${s}, which package.json does not declare`);
      else if (dts && !hasOwnTypes(dir, s) && !declared.has(typesPackage(s)))
        problems.push(`${file}: the types of ${s} are in ${typesPackage(s)}, which package.json does not declare`);
    }
  }
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
