// The README's first example, exactly as a new user pastes it: the packages it installs are packed
// from this workspace (`pnpm pack`, as published) together with their third-party dependencies (packed
// from the installed copies), installed into a fresh folder in ONE `npm install --offline` with an
// empty cache (nothing comes from a network), then the example runs there and must print what the
// README says it prints.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, parse } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { listWorkspacePackages, repoRoot } from '../scripts/workspace.mjs';
import { blockAfter } from './markdown.js';

const run = promisify(execFile);
const cli = join(repoRoot, 'packages/cli/dist/bin.js');
const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  temps.push(d);
  return d;
}

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** What npm installs for a package: dependencies, optional ones, and peers that are not optional. */
function runtimeDeps(m: Manifest): string[] {
  const peers = Object.keys(m.peerDependencies ?? {}).filter((n) => !m.peerDependenciesMeta?.[n]?.optional);
  return [...Object.keys(m.dependencies ?? {}), ...Object.keys(m.optionalDependencies ?? {}), ...peers];
}

/** Where Node would find `name` from the package in `dir` (pnpm links each package's dependencies beside it). */
function installedDir(dir: string, name: string): string {
  for (let d = realpathSync(dir); d !== parse(d).root; d = dirname(d)) {
    if (d.endsWith('/node_modules')) continue;
    const candidate = join(d, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
  }
  throw new Error(`${name} is not installed where ${dir} can see it`);
}

/** Packs the named workspace packages and everything they need into `out`; returns the tarballs. */
async function packClosure(names: string[], out: string): Promise<string[]> {
  const workspace = new Map(listWorkspacePackages().map((p) => [p.name, p.dir]));
  const seen = new Map<string, { dir: string; ours: boolean }>();
  const queue = names.map((name) => ({ name, from: repoRoot }));
  while (queue.length > 0) {
    const { name, from } = queue.shift()!;
    if (seen.has(name)) continue;
    const ours = workspace.has(name);
    const dir = ours ? workspace.get(name)! : installedDir(from, name);
    seen.set(name, { dir, ours });
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
    for (const dep of runtimeDeps(manifest)) queue.push({ name: dep, from: dir });
  }
  for (const [name, { dir, ours }] of seen) {
    // pnpm pack writes workspace:^ as the exact versions, as a publish does.
    if (ours) await run('pnpm', ['pack', '--pack-destination', out], { cwd: dir });
    // An installed third-party package already holds just its published files; npm unpacks any top folder as `package/`.
    else
      await run('tar', [
        '-czf',
        join(out, `${name.replace('/', '-')}.tgz`),
        '--exclude=./node_modules',
        '-C',
        dir,
        '.',
      ]);
  }
  return readdirSync(out)
    .filter((f) => f.endsWith('.tgz'))
    .map((f) => join(out, f));
}

it('getting started shows the same first example (and real-provider example) as the README', () => {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const page = readFileSync(join(repoRoot, 'docs/getting-started.md'), 'utf8');
  for (const name of ['first-example-install', 'first-example', 'first-example-output', 'real-provider']) {
    expect(blockAfter(page, name), name).toBe(blockAfter(readme, name));
  }
});

it('the README first example runs in a fresh folder as pasted and prints what the README shows', async () => {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const install = blockAfter(readme, 'first-example-install');
  const packages = install.match(/@retrysafe\/[a-z0-9-]+/g) ?? [];
  expect(install).toMatch(/npm install @retrysafe\//);
  const fileName = /save it as `([\w.-]+)`/.exec(readme)?.[1];
  expect(fileName, 'the README names the file the example is saved as').toBeDefined();

  const tarballs = await packClosure(packages, tempDir('rs-first-packs-'));
  const project = tempDir('rs-first-');
  await run('npm', ['init', '-y'], { cwd: project });
  await run(
    'npm',
    [
      'install',
      '--offline',
      '--cache',
      join(project, '.npm-cache'),
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
      '--loglevel=error',
      ...tarballs,
    ],
    { cwd: project },
  );
  writeFileSync(join(project, fileName!), blockAfter(readme, 'first-example'));

  const { stdout } = await run(process.execPath, [fileName!], { cwd: project, env: { PATH: process.env.PATH ?? '' } });
  expect(stdout).toBe(blockAfter(readme, 'first-example-output'));

  // Getting started runs it again: a new, empty sandbox, and the ledger answers both runs.
  const page = readFileSync(join(repoRoot, 'docs/getting-started.md'), 'utf8');
  const again = await run(process.execPath, [fileName!], { cwd: project, env: { PATH: process.env.PATH ?? '' } });
  expect(again.stdout).toBe(blockAfter(page, 'first-example-again-output'));

  // Getting started then reads that ledger with the CLI (the workspace's build stands in for `npx retrysafe`).
  const commands = blockAfter(page, 'look-at-the-ledger')
    .split('\n')
    .filter((l) => l.startsWith('npx retrysafe '));
  expect(commands.length).toBeGreaterThan(1);
  for (const command of commands) {
    const args = [...command.slice('npx retrysafe '.length).matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
    const shown = await run(process.execPath, [cli, ...args], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', NO_COLOR: '1' },
    });
    expect(shown.stdout, command).toMatch(/succeeded[\s\S]*rec_0001|rec_0001[\s\S]*succeeded/);
    // What the page says `ledger show` prints: the first send unknown, the re-send replayed.
    if (args.includes('show'))
      expect(shown.stdout, command).toMatch(/unknown[\s\S]*HTTP 500[\s\S]*replayed[\s\S]*HTTP 201/);
  }
}, 240_000);
