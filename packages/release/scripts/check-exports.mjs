// Type-export checks run before a publish: every public package's exports map has the repo's
// `{ types, default }` shape with types first, every target file exists in the built package, and
// a TypeScript consumer can import every subpath by the package name (NodeNext and Bundler
// resolution, full lib check) — the checks publint does not do.
// (The release test then repeats the consumer check for real, on packages installed from a registry.)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

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
    // A data file exported as itself (a published JSON Schema) has no types to declare; it must exist.
    if (typeof target === 'string' && sub.endsWith('.json') && target === sub) {
      if (!existsSync(join(dir, target))) problems.push(`${name} ${sub}: the exported file ${target} is missing`);
      continue;
    }
    if (typeof target !== 'object' || target === null) {
      problems.push(`${name} ${sub}: expected { types, default }, got ${JSON.stringify(target)}`);
      continue;
    }
    const keys = Object.keys(target);
    if (keys[0] !== 'types')
      problems.push(`${name} ${sub}: "types" must be the first condition (got ${keys.join(', ')})`);
    if (!('default' in target)) problems.push(`${name} ${sub}: no "default" condition`);
    const { types, default: js } = target;
    if (typeof types !== 'string' || !types.endsWith('.d.ts'))
      problems.push(`${name} ${sub}: types ${JSON.stringify(types)} is not a .d.ts file`);
    if (typeof js !== 'string' || !js.endsWith('.js'))
      problems.push(`${name} ${sub}: default ${JSON.stringify(js)} is not a .js file`);
    if (typeof types === 'string' && typeof js === 'string' && types !== js.replace(/\.js$/, '.d.ts'))
      problems.push(`${name} ${sub}: types ${types} is not the declaration of ${js}`);
    for (const f of [types, js])
      if (typeof f === 'string' && !existsSync(join(dir, f)))
        problems.push(`${name} ${sub}: ${f} does not exist (not built?)`);
  }
  if (manifest.type !== 'module') problems.push(`${name}: "type" is not "module"`);
  if (manifest.types && exp['.']?.types && manifest.types !== exp['.'].types)
    problems.push(`${name}: top-level "types" (${manifest.types}) differs from exports["."].types`);
  return problems;
}

/**
 * Compiles one file that imports every exported subpath of every package by name, the way a
 * consumer would: each package is linked into a scratch `node_modules` and resolved through its
 * exports map, under NodeNext and under Bundler resolution, with skipLibCheck off so the published
 * .d.ts files are checked too. Returns the compiler's complaints, empty when fine. One compiler run
 * per resolution mode for all packages. Writes only to `<root>/.typetest-exports/` (git-ignored).
 * @param {string} root the workspace root
 * @param {{ dir: string, name: string, manifest: any }[]} packages
 */
export function compileExportProblems(root, packages) {
  const dir = join(root, '.typetest-exports');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
  const specifiers = [];
  for (const pkg of packages) {
    const link = join(dir, 'node_modules', pkg.name);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(pkg.dir, link, 'dir');
    for (const sub of Object.keys(pkg.manifest.exports ?? {}).filter(
      (s) => s !== './package.json' && !s.endsWith('.json'),
    )) {
      specifiers.push(sub === '.' ? pkg.name : `${pkg.name}/${sub.slice(2)}`);
    }
  }
  const nodeTypes = dirname(createRequire(join(root, 'package.json')).resolve('@types/node/package.json'));
  symlinkSync(nodeTypes, join(dir, 'node_modules', '@types', 'node'), 'dir');
  writeFileSync(
    join(dir, 'check.ts'),
    specifiers
      .map((s, i) => `import * as m${i} from '${s}';\nexport const keys${i}: string[] = Object.keys(m${i});\n`)
      .join(''),
  );
  const problems = [];
  const base = { strict: true, noEmit: true, skipLibCheck: false, target: 'ES2022', types: ['node'] };
  for (const [label, opts] of [
    ['NodeNext', { module: 'NodeNext', moduleResolution: 'NodeNext' }],
    ['Bundler', { module: 'ESNext', moduleResolution: 'Bundler' }],
  ]) {
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { ...base, ...opts }, files: ['check.ts'] }),
    );
    // One checker: each extra checker thread checks the same large third-party declarations again.
    try {
      execFileSync(process.execPath, [tscPath(root), '-p', 'tsconfig.json', '--checkers', '1'], {
        cwd: dir,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (e) {
      const { ours, theirs } = splitDiagnostics(
        String(e.stdout || e.stderr || e.message),
        dir,
        packages.map((p) => p.dir),
      );
      if (ours.length) problems.push(`${label} resolution:\n${ours.join('\n')}`);
      if (theirs.length)
        console.warn(
          `note (${label}): ${theirs.length} diagnostic(s) inside third-party declarations, not ours:\n${theirs.join('\n')}`,
        );
    }
  }
  rmSync(dir, { recursive: true, force: true });
  return problems;
}

/**
 * Splits compiler output into diagnostics about our packages (their built declarations, or the check
 * file itself, or no file at all) and diagnostics inside other packages' declarations — a vendor's
 * .d.ts that cannot find its own untyped dependency is the vendor's problem, not an export of ours.
 */
export function splitDiagnostics(output, cwd, packageDirs) {
  const diagnostics = [];
  for (const line of output.split(/\r?\n/)) {
    if (!line.trim()) continue;
    if (/^\s/.test(line) && diagnostics.length) diagnostics[diagnostics.length - 1] += `\n${line}`;
    else diagnostics.push(line);
  }
  const ours = [];
  const theirs = [];
  for (const d of diagnostics) {
    const m = /^(.+?)\(\d+,\d+\): error /.exec(d);
    if (!m) {
      ours.push(d);
      continue;
    }
    const file = resolve(cwd, m[1]);
    const inOurs =
      file === join(cwd, 'check.ts') ||
      packageDirs.some((p) => file.startsWith(`${p}/`) && !file.startsWith(join(p, 'node_modules') + '/'));
    (inOurs ? ours : theirs).push(d);
  }
  return { ours, theirs };
}
