// Type-export checks run before a publish: every public package's exports map has the repo's
// `{ types, default }` shape with types first, every target file exists in the built package, and
// a TypeScript consumer can import every subpath by the package name (NodeNext and Bundler
// resolution, full lib check) — the checks publint does not do.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** Path of the TypeScript compiler the workspace builds with. */
export function tscPath(fromDir) {
  return join(dirname(createRequire(join(fromDir, 'package.json')).resolve('typescript/package.json')), 'bin', 'tsc');
}

/**
 * Shape problems of one package's manifest (no compiler): a list of strings, empty when fine.
 * @param {{ dir: string, name: string, manifest: any }} pkg
 */
export function exportShapeProblems(pkg) {
  const problems = [];
  const { manifest, dir, name } = pkg;
  const exp = manifest.exports;
  if (!exp || typeof exp !== 'object' || Array.isArray(exp)) return [`${name}: no exports map`];
  if (exp['./package.json'] !== './package.json') problems.push(`${name}: "./package.json" is not exported`);
  if (!exp['.']) problems.push(`${name}: no "." export`);
  for (const [sub, target] of Object.entries(exp)) {
    if (sub === './package.json') continue;
    if (typeof target !== 'object' || target === null) { problems.push(`${name} ${sub}: expected { types, default }, got ${JSON.stringify(target)}`); continue; }
    const keys = Object.keys(target);
    if (keys[0] !== 'types') problems.push(`${name} ${sub}: "types" must be the first condition (got ${keys.join(', ')})`);
    if (!('default' in target)) problems.push(`${name} ${sub}: no "default" condition`);
    const { types, default: js } = target;
    if (typeof types !== 'string' || !types.endsWith('.d.ts')) problems.push(`${name} ${sub}: types ${JSON.stringify(types)} is not a .d.ts file`);
    if (typeof js !== 'string' || !js.endsWith('.js')) problems.push(`${name} ${sub}: default ${JSON.stringify(js)} is not a .js file`);
    if (typeof types === 'string' && typeof js === 'string' && types !== js.replace(/\.js$/, '.d.ts')) problems.push(`${name} ${sub}: types ${types} is not the declaration of ${js}`);
    for (const f of [types, js]) if (typeof f === 'string' && !existsSync(join(dir, f))) problems.push(`${name} ${sub}: ${f} does not exist (not built?)`);
  }
  if (manifest.type !== 'module') problems.push(`${name}: "type" is not "module"`);
  if (manifest.types && exp['.']?.types && manifest.types !== exp['.'].types) problems.push(`${name}: top-level "types" (${manifest.types}) differs from exports["."].types`);
  return problems;
}

/**
 * Compiles a file that imports every exported subpath of the package by its own name (a
 * self-reference, resolved through the exports map exactly as a consumer's would be), under NodeNext
 * and under Bundler resolution, with skipLibCheck off so the published .d.ts files are checked too.
 * Returns the compiler's complaints, empty when fine. Writes only to `<pkg>/.typetest-exports/`.
 */
export function compileExportProblems(pkg) {
  const subpaths = Object.keys(pkg.manifest.exports ?? {}).filter((s) => s !== './package.json');
  const dir = join(pkg.dir, '.typetest-exports');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const specifiers = subpaths.map((s) => (s === '.' ? pkg.name : `${pkg.name}/${s.slice(2)}`));
  writeFileSync(join(dir, 'check.ts'), specifiers.map((s, i) => `import * as m${i} from '${s}';\nexport const keys${i}: string[] = Object.keys(m${i});\n`).join(''));
  const problems = [];
  const base = { strict: true, noEmit: true, skipLibCheck: false, target: 'ES2022', types: ['node'] };
  for (const [label, opts] of [['NodeNext', { module: 'NodeNext', moduleResolution: 'NodeNext' }], ['Bundler', { module: 'ESNext', moduleResolution: 'Bundler' }]]) {
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...base, ...opts }, files: ['check.ts'] }));
    try {
      execFileSync(process.execPath, [tscPath(pkg.dir), '-p', 'tsconfig.json'], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      problems.push(`${pkg.name} (${label}): ${String(e.stdout || e.stderr || e.message).trim()}`);
    }
  }
  rmSync(dir, { recursive: true, force: true });
  return problems;
}
