// The whole release path, for real, on loopback:
//   Verdaccio on 127.0.0.1 (no uplink for @retrysafe/*) → a throwaway copy of the workspace →
//   a sample changeset versioned → `release.mjs --loopback-only` (guard → build → publint →
//   type-export checks → changeset publish) → for each adapter, a fresh npm project outside the
//   workspace installs only @retrysafe/core + @retrysafe/ledger-sqlite + that adapter, `npm ls` is compared with what the
//   published manifests say it must be, and a provider operation runs through it from ESM and from
//   type-checked TypeScript.
// Nothing here publishes from the real working tree or to any registry but the loopback one.
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tscPath } from '../scripts/check-exports.mjs';
import { assertLoopbackRegistry, isLoopbackRegistry } from '../scripts/registry-guard.mjs';
import { cleanEnv, ensureVerdaccio, startRegistry } from '../scripts/verdaccio.mjs';
import { propagateContractBreak } from '../scripts/version.mjs';
import { listPublicPackages, listWorkspacePackages, repoRoot, runtimeDependencyNames } from '../scripts/workspace.mjs';
import { copyWorkspace, removeCopy } from '../scripts/workspace-copy.mjs';

const run = promisify(execFile);
const consumersDir = join(dirname(fileURLToPath(import.meta.url)), 'consumers');
const CORE = '@retrysafe/core';
/** The embedded ledger the consumers' samples open: core's user adds this one package. */
const SQLITE = '@retrysafe/ledger-sqlite';
const SAMPLE_SENTENCE = 'Release check: this sentence is the changelog entry a user reads for this version.';

/** One adapter leg: the adapter installed next to core, and what must (not) come along with it. */
interface Leg {
  adapter: string;
  /** Folder under test/consumers with its use.ts. */
  scenario: string;
  /** Vendor SDKs that must be installed. */
  mustHave: string[];
  /** Named in the issue: must never come along with this adapter. */
  mustNotHave: string[];
  /** What the scenario must print besides the common fields. */
  expect: Record<string, unknown>;
}
const OTHER_SDKS = ['@microsoft/microsoft-graph-client', '@hubspot/api-client', 'axios', 'pg'];
/** Test tooling an adapter's production install must never bring (its ./sandbox entry needs only @retrysafe/sandbox-kit). */
const TEST_TOOLING = ['@retrysafe/testkit', 'vitest'];
/** What every leg installs besides its adapter: the runner and the embedded ledger (node:sqlite, no native build). */
const BASE = [CORE, SQLITE];
const LEGS: Leg[] = [
  // The first create's response is lost after the sandbox committed it: still one record.
  {
    adapter: '@retrysafe/sandbox',
    scenario: 'sandbox',
    mustHave: [],
    mustNotHave: ['stripe', ...OTHER_SDKS, ...TEST_TOOLING],
    expect: {},
  },
  // The second ask is answered from the ledger: one POST reached the (loopback) Stripe API.
  {
    adapter: '@retrysafe/stripe',
    scenario: 'stripe',
    mustHave: ['stripe'],
    mustNotHave: [...OTHER_SDKS, ...TEST_TOOLING],
    expect: { posts: 1, providerRef: expect.stringMatching(/^pi_/) },
  },
];

interface Packument {
  versions: Record<string, Manifest>;
  'dist-tags': Record<string, string>;
}
interface Manifest {
  name: string;
  version: string;
  dist?: { integrity?: string; tarball?: string };
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}
interface LsNode {
  version?: string;
  dependencies?: Record<string, LsNode>;
  missing?: boolean;
  invalid?: string;
  extraneous?: boolean;
  problems?: string[];
}

const timings: Record<string, number> = {};
const temps: string[] = [];
let registry: Awaited<ReturnType<typeof startRegistry>>;
let copy: string;
let publishEnv: NodeJS.ProcessEnv;
let plan: { releases: { name: string; type: string; oldVersion: string; newVersion: string }[] };
let releaseLog = '';
const refusals: { label: string; code: number; output: string }[] = [];
const publishedBeforeRelease: string[] = [];
const realChangesetsBefore = readdirSync(join(repoRoot, '.changeset')).sort();
let privateBefore: { name: string; version: string; changelog: boolean }[] = [];
const published = new Map<string, Manifest>();
const installs = new Map<string, Promise<{ dir: string; ms: number; native: string[] }>>();

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  temps.push(d);
  return d;
}

async function timed<T>(label: string, f: () => Promise<T> | T): Promise<T> {
  const t0 = Date.now();
  try {
    return await f();
  } finally {
    timings[label] = Date.now() - t0;
  }
}

/** Runs a command; resolves with its exit code and combined output instead of throwing. */
async function attempt(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }) {
  try {
    const r = await run(cmd, args, { ...opts, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, output: `${r.stdout}${r.stderr}` };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string; message: string };
    return { code: typeof x.code === 'number' ? x.code : 1, output: `${x.stdout ?? ''}${x.stderr ?? ''}${x.message}` };
  }
}

async function packument(name: string): Promise<Packument | null> {
  const res = await fetch(new URL(name.replace('/', '%2f'), registry.url));
  if (res.status === 404) return null;
  if (!res.ok) throw new Error(`registry answered ${res.status} for ${name}`);
  return (await res.json()) as Packument;
}

/** An environment for npm in a consumer project: the loopback registry, native builds against Node's headers. */
function consumerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...cleanEnv(),
    npm_config_registry: registry.url,
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
  if (!env.npm_config_nodedir && existsSync('/usr/include/node/node.h')) env.npm_config_nodedir = '/usr';
  return env;
}

/** A consumer installs with --ignore-scripts; any dependency with an install script is then rebuilt for real. */
async function provideNativeBuilds(dir: string): Promise<string[]> {
  const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; hasInstallScript?: boolean }>;
  };
  const done: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (!entry.hasInstallScript || !path) continue;
    const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    await run('npm', ['rebuild', name], { cwd: dir, env: consumerEnv(), maxBuffer: 64 * 1024 * 1024 });
    done.push(`${name}@${entry.version}: npm rebuild`);
  }
  return done;
}

/** Runs `npm install @retrysafe/core @retrysafe/ledger-sqlite @retrysafe/<adapter>` in a new project outside the workspace. */
async function install(leg: Leg): Promise<{ dir: string; ms: number; native: string[] }> {
  const dir = tempDir(`retrysafe-consumer-${leg.scenario}-`);
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: `consumer-${leg.scenario}`, version: '1.0.0', private: true, type: 'module' }, null, 2),
  );
  writeFileSync(join(dir, '.npmrc'), `registry=${registry.url}\n`);
  const specs = [...BASE, leg.adapter].map((n) => `${n}@${published.get(n)!.version}`);
  const t0 = Date.now();
  try {
    await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', '--ignore-scripts', ...specs], {
      cwd: dir,
      env: consumerEnv(),
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (e) {
    throw new Error(`npm install ${specs.join(' ')} failed:\n${(e as { stderr?: string }).stderr ?? String(e)}`);
  }
  const ms = Date.now() - t0;
  return { dir, ms, native: await provideNativeBuilds(dir) };
}

/** Every package the published manifests say a user gets with `names`: the closure over @retrysafe deps. */
function closure(names: string[]): Set<string> {
  const out = new Set<string>();
  const todo = [...names];
  while (todo.length) {
    const n = todo.pop()!;
    if (out.has(n)) continue;
    out.add(n);
    const m = published.get(n);
    if (m) for (const d of requiredDeps(m)) if (d.startsWith('@retrysafe/')) todo.push(d);
  }
  return out;
}

/** dependencies + non-optional peerDependencies + optionalDependencies: what npm installs for a package. */
function requiredDeps(m: Manifest): string[] {
  const optionalPeers = new Set(
    Object.entries(m.peerDependenciesMeta ?? {})
      .filter(([, v]) => v.optional)
      .map(([k]) => k),
  );
  return [
    ...new Set([
      ...Object.keys(m.dependencies ?? {}),
      ...Object.keys(m.peerDependencies ?? {}).filter((p) => !optionalPeers.has(p)),
      ...Object.keys(m.optionalDependencies ?? {}),
    ]),
  ];
}

/**
 * All installed nodes of an `npm ls --all --json` tree, as [name, node] pairs (deduped entries
 * included). npm also lists an optional peer that is not installed, without a version: left out.
 */
function walk(node: LsNode, out: [string, LsNode][] = []): [string, LsNode][] {
  for (const [name, child] of Object.entries(node.dependencies ?? {})) {
    if (!child.version) continue;
    out.push([name, child]);
    walk(child, out);
  }
  return out;
}

beforeAll(async () => {
  const runtime = await timed('verdaccio install (0 = cached)', () => ensureVerdaccio());
  timings['verdaccio install (0 = cached)'] = runtime.ms;
  registry = await timed('verdaccio start', () =>
    startRegistry({ runtimeDir: runtime.dir, workDir: tempDir('retrysafe-verdaccio-') }),
  );
  // Refuse outright unless the registry we are about to configure is on loopback.
  assertLoopbackRegistry(registry.url, 'the release test registry');

  copy = await timed('workspace copy', () => copyWorkspace(repoRoot));
  temps.push(copy);

  // Before the copy is configured: the release script must refuse to publish when the tools disagree
  // or the registry is not loopback. Non-routable TEST-NET-1 addresses (192.0.2.0/24), so that even a
  // broken guard could not reach a real registry.
  const envBase = { ...cleanEnv(), npm_config_nodedir: process.env.npm_config_nodedir ?? '/usr' };
  const releaseScript = join(copy, 'packages/release/scripts/release.mjs');
  writeFileSync(join(copy, '.npmrc'), 'registry=http://192.0.2.1:9/\n');
  for (const [label, env] of [
    ['.npmrc and npm_config_registry disagree', { ...envBase, npm_config_registry: registry.url }],
    [
      'every tool agrees on a registry that is not loopback',
      { ...envBase, npm_config_registry: 'http://192.0.2.1:9/' },
    ],
  ] as const) {
    refusals.push({
      label,
      ...(await attempt(process.execPath, [releaseScript, '--loopback-only'], { cwd: copy, env })),
    });
  }
  for (const p of listPublicPackages(copy)) if (await packument(p.name)) publishedBeforeRelease.push(p.name);

  // Configure the copy for the loopback registry, both ways (TOOLCHAIN.md): pnpm reads .npmrc,
  // changesets' `npm info` reads npm_config_registry. Verdaccio takes anonymous publishes of
  // @retrysafe/*; npm still wants a token to exist, so a placeholder is given for this host only.
  const host = new URL(registry.url).host;
  writeFileSync(join(copy, '.npmrc'), `registry=${registry.url}\n//${host}/:_authToken=loopback-anonymous\n`);
  publishEnv = { ...envBase, npm_config_registry: registry.url };

  privateBefore = listWorkspacePackages(copy)
    .filter((x) => x.private)
    .map((p) => ({ name: p.name, version: p.version, changelog: existsSync(join(p.dir, 'CHANGELOG.md')) }));
  // A sample changeset, versioned through the release flow's own versioning step.
  const publicNames = listPublicPackages(copy).map((p) => p.name);
  writeFileSync(
    join(copy, '.changeset', 'release-check-sample.md'),
    `---\n${publicNames.map((n) => `"${n}": patch`).join('\n')}\n---\n\n${SAMPLE_SENTENCE}\n`,
  );
  // The plan as changesets reports it, after the flow's own step for a major contract change (if any
  // is pending), so the plan and what version.mjs does are the same thing.
  propagateContractBreak(copy);
  const changeset = join(copy, 'node_modules', '.bin', 'changeset');
  execFileSync(changeset, ['status', '--output', 'release-plan.json'], { cwd: copy, env: publishEnv, stdio: 'pipe' });
  plan = JSON.parse(readFileSync(join(copy, 'release-plan.json'), 'utf8'));
  rmSync(join(copy, 'release-plan.json'));
  await timed('changeset version', () =>
    run(process.execPath, [join(copy, 'packages/release/scripts/version.mjs')], { cwd: copy, env: publishEnv }),
  );

  // The release itself.
  const release = await timed('release.mjs (guard, build, publint, type exports, publish)', () =>
    attempt(process.execPath, [releaseScript, '--loopback-only'], { cwd: copy, env: publishEnv }),
  );
  releaseLog = release.output;
  if (release.code !== 0) throw new Error(`release.mjs failed (${release.code}):\n${releaseLog.slice(-6000)}`);

  for (const p of listPublicPackages(copy)) {
    const doc = await packument(p.name);
    const m = doc?.versions[p.version];
    if (m) published.set(p.name, m);
  }
  // Both legs install side by side.
  for (const leg of LEGS)
    if (published.has(leg.adapter) && BASE.every((n) => published.has(n))) installs.set(leg.adapter, install(leg));
}, 900_000);

afterAll(async () => {
  await Promise.allSettled(installs.values());
  await registry?.stop();
  const legs = await Promise.allSettled([...installs.entries()].map(async ([n, p]) => [n, await p] as const));
  for (const r of legs) {
    if (r.status !== 'fulfilled') continue;
    timings[`npm install core + ${r.value[0]}`] = r.value[1].ms;
    console.log(`native builds for core + ${r.value[0]}: ${r.value[1].native.join('; ') || 'none'}`);
  }
  console.log(`release check timings (ms): ${JSON.stringify(timings, null, 2)}`);
  console.log(
    `release.mjs steps:\n${releaseLog
      .split('\n')
      .filter((l) => /^▶ |^ {2}\(\d/.test(l))
      .join('\n')}`,
  );
  if (process.env.RETRYSAFE_KEEP_RELEASE_TMP === '1') console.log(`kept: ${temps.join(' ')}`);
  else for (const d of temps) removeCopy(d);
}, 120_000);

describe('publishing only ever goes to the loopback registry', () => {
  it('the test registry is Verdaccio on 127.0.0.1', async () => {
    expect(isLoopbackRegistry(registry.url)).toBe(true);
    expect(new URL(registry.url).hostname).toBe('127.0.0.1');
    expect((await fetch(new URL('-/ping', registry.url))).ok).toBe(true);
  });

  it.each([0, 1])('release.mjs refuses before building or publishing when misconfigured (case %i)', (i) => {
    const r = refusals[i]!;
    expect(r.code, r.label).not.toBe(0);
    expect(r.output).toMatch(i === 0 ? /do not agree on the registry/ : /not a loopback address/);
    expect(r.output).not.toMatch(/▶ build/);
  });

  it('after both refusals the registry still holds none of our packages', () => {
    expect(refusals).toHaveLength(2);
    expect(publishedBeforeRelease).toEqual([]);
  });

  it('the real working tree keeps its .changeset/ and never gets a registry config', () => {
    for (const f of realChangesetsBefore) expect(existsSync(join(repoRoot, '.changeset', f)), f).toBe(true);
    expect(existsSync(join(repoRoot, '.changeset', 'release-check-sample.md'))).toBe(false);
    expect(existsSync(join(repoRoot, '.npmrc')) ? readFileSync(join(repoRoot, '.npmrc'), 'utf8') : '').not.toMatch(
      /127\.0\.0\.1/,
    );
  });

  it('the guard of the real run saw every tool agree on the loopback registry', () => {
    expect(releaseLog).toContain(`every tool publishes to ${registry.url} (loopback: checked)`);
  });
});

describe('versioning the sample changeset', () => {
  it('bumps every package the plan names to the planned version, and writes the sentence to each changelog', () => {
    const pkgs = new Map(listWorkspacePackages(copy).map((p) => [p.name, p]));
    const publicNames = listPublicPackages(copy).map((p) => p.name);
    const releases = plan.releases.filter((r) => r.type !== 'none');
    expect(releases.map((r) => r.name).sort()).toEqual(expect.arrayContaining(publicNames.sort()));
    for (const r of releases) {
      expect(pkgs.get(r.name)?.version, r.name).toBe(r.newVersion);
      expect(r.newVersion, r.name).not.toBe(r.oldVersion);
      const changelog = readFileSync(join(pkgs.get(r.name)!.dir, 'CHANGELOG.md'), 'utf8');
      expect(changelog, r.name).toContain(`## ${r.newVersion}`);
      if (publicNames.includes(r.name)) expect(changelog, r.name).toContain(SAMPLE_SENTENCE);
    }
  });

  it('consumes the changesets in the copy only', () => {
    expect(readdirSync(join(copy, '.changeset')).filter((f) => f.endsWith('.md') && f !== 'README.md')).toEqual([]);
  });

  it('leaves private packages unversioned', () => {
    const after = listWorkspacePackages(copy)
      .filter((x) => x.private)
      .map((p) => ({ name: p.name, version: p.version, changelog: existsSync(join(p.dir, 'CHANGELOG.md')) }));
    expect(after).toEqual(privateBefore);
    for (const p of after)
      expect(
        plan.releases.filter((r) => r.type !== 'none').map((r) => r.name),
        p.name,
      ).not.toContain(p.name);
  });
});

describe('publishing every public package', () => {
  it('every public workspace package is in the registry at its new version, as latest', async () => {
    for (const p of listPublicPackages(copy)) {
      const doc = await packument(p.name);
      expect(doc, `${p.name} was not published`).not.toBeNull();
      expect(Object.keys(doc!.versions), p.name).toContain(p.version);
      expect(doc!['dist-tags'].latest, p.name).toBe(p.version);
    }
    expect(published.size).toBe(listPublicPackages(copy).length);
  });

  it('no private package was published', async () => {
    for (const p of listWorkspacePackages(copy).filter((x) => x.private))
      expect(await packument(p.name), p.name).toBeNull();
  });

  it('published manifests carry real version ranges: no workspace: protocol, internal deps at the versions just released', () => {
    for (const [name, m] of published) {
      for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies'] as const) {
        for (const [dep, range] of Object.entries(m[field] ?? {})) {
          expect(range, `${name} ${field}.${dep}`).not.toMatch(/^workspace:/);
          if (!published.has(dep)) continue;
          const released = published.get(dep)!.version;
          // optional peers (the config package's adapters) take any release from a floor up, so an
          // adapter's minor release does not force a major of the package that peers on it
          if (field === 'peerDependencies' && range.startsWith('>='))
            expect(atLeast(released, range.slice(2)), `${name} ${field}.${dep} ${range} admits ${released}`).toBe(true);
          else expect(range, `${name} ${field}.${dep}`).toBe(`^${released}`);
        }
      }
      expect(m).not.toHaveProperty('devDependencies.@retrysafe/release');
    }
  });

  it('the release ran publint and the type-export checks on every package before publishing', () => {
    const n = listPublicPackages(copy).length;
    expect(releaseLog).toMatch(new RegExp(`exports of ${n} packages resolve and type-check`));
    expect(releaseLog.indexOf('▶ type-export checks')).toBeLessThan(releaseLog.indexOf('▶ changeset publish'));
  });
});

for (const leg of LEGS) {
  describe(`a fresh npm project with only ${BASE.join(' + ')} + ${leg.adapter}`, () => {
    let dir: string;
    let tree: LsNode;
    const project = async () => {
      const p = installs.get(leg.adapter);
      if (!p)
        throw new Error(`${leg.adapter} or one of ${BASE.join(', ')} was not published (is it built and public?)`);
      dir ??= (await p).dir;
      return dir;
    };

    it('installs from the loopback registry; `npm ls` is clean', async () => {
      await project();
      const ls = await attempt('npm', ['ls', '--all', '--json'], { cwd: dir, env: consumerEnv() });
      tree = JSON.parse(ls.output.slice(0, ls.output.lastIndexOf('}') + 1)) as LsNode;
      expect(ls.code, ls.output.slice(0, 2000)).toBe(0);
      expect(dir.startsWith(repoRoot)).toBe(false);
      // Every @retrysafe package installed is byte for byte the tarball just published on loopback.
      const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as {
        packages: Record<string, { version?: string; integrity?: string }>;
      };
      const ours = Object.entries(lock.packages).filter(([path]) => path.includes('node_modules/@retrysafe/'));
      expect(ours.length).toBeGreaterThan(1);
      for (const [path, entry] of ours) {
        const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
        expect(entry.integrity, path).toBe(published.get(name)?.dist?.integrity);
      }
    }, 600_000);

    it('npm ls shows exactly the packages the published manifests call for', () => {
      expect(tree, 'install step failed').toBeDefined();
      // At the top: what the project asked for, and nothing else.
      expect(Object.keys(tree.dependencies ?? {}).sort()).toEqual([...BASE, leg.adapter].sort());
      // Anywhere below: exactly the @retrysafe packages the published manifests call for.
      expect(
        [
          ...new Set(
            walk(tree)
              .map(([n]) => n)
              .filter((n) => n.startsWith('@retrysafe/')),
          ),
        ].sort(),
      ).toEqual([...closure([...BASE, leg.adapter])].sort());
      // Each @retrysafe package's children are exactly its declared runtime dependencies, at the released versions.
      for (const [name, node] of walk(tree).filter(([n]) => n.startsWith('@retrysafe/'))) {
        expect(node.version, name).toBe(published.get(name)!.version);
        const m = published.get(name)!;
        if (node.dependencies)
          expect(
            Object.entries(node.dependencies)
              .filter(([, c]) => c.version)
              .map(([k]) => k)
              .sort(),
            `${name}'s dependencies`,
          ).toEqual(requiredDeps(m).sort());
      }
    });

    it(`brings ${leg.mustHave.length ? leg.mustHave.join(', ') : 'no vendor SDK'} and no other adapter or vendor SDK`, () => {
      expect(tree, 'install step failed').toBeDefined();
      const installed = new Set(walk(tree).map(([n]) => n));
      const wanted = closure([...BASE, leg.adapter]);
      for (const sdk of leg.mustHave) expect(installed.has(sdk), sdk).toBe(true);
      const wantedVendor = new Set([...wanted].flatMap((n) => requiredDeps(published.get(n)!)));
      // Every other public package, and every vendor SDK only they depend on, must be absent.
      const others = [...published.keys()].filter((n) => !wanted.has(n));
      const theirVendors = others
        .flatMap((n) => runtimeDependencyNames(published.get(n)!))
        .filter((d) => !d.startsWith('@retrysafe/') && !wantedVendor.has(d));
      // The embedded ledger is node:sqlite: no SQLite addon comes along.
      const forbidden = new Set([...others, ...theirVendors, ...leg.mustNotHave, 'better-sqlite3']);
      expect(
        [...installed].filter((n) => forbidden.has(n)),
        `unexpected packages next to ${leg.adapter}`,
      ).toEqual([]);
    });

    it('ships built code only (no sources, tests or build info) in every @retrysafe package', () => {
      for (const name of closure([...BASE, leg.adapter])) {
        const files = readdirSync(join(dir, 'node_modules', name), { recursive: true }).map(String);
        expect(files, name).toContain('package.json');
        expect(
          files.filter((f) => /(^|\/)src\/|\.test\.|\.tsbuildinfo$|(^|\/)test\//.test(f)),
          name,
        ).toEqual([]);
      }
    });

    it('runs the operation from ESM: one provider record, the second ask adopted', async () => {
      await project();
      // The TypeScript consumer with its types erased: what a JavaScript user writes, run by Node alone.
      writeFileSync(join(dir, 'use.mjs'), javascriptOf(join(consumersDir, leg.scenario, 'use.ts')));
      expectOneEffect(await run(process.execPath, ['use.mjs'], { cwd: dir, env: cleanEnv(), timeout: 120_000 }), leg);
    }, 180_000);

    it('type-checks from TypeScript (strict, NodeNext, declarations checked) and runs the compiled code', async () => {
      await project();
      cpSync(join(consumersDir, leg.scenario, 'use.ts'), join(dir, 'use.ts'));
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            target: 'ES2022',
            skipLibCheck: false,
            types: ['node'],
            outDir: 'out',
            noEmitOnError: true,
          },
          files: ['use.ts'],
        }),
      );
      // A TypeScript project on Node has Node's types; stripe's declarations need them.
      await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', '--save-dev', '@types/node@^22'], {
        cwd: dir,
        env: consumerEnv(),
      });
      const tsc = await attempt(process.execPath, [tscPath(repoRoot), '-p', 'tsconfig.json', '--checkers', '1'], {
        cwd: dir,
        env: cleanEnv(),
      });
      expect(tsc.output.replace(/^Command failed.*$/m, '').trim(), 'tsc').toBe('');
      expect(tsc.code).toBe(0);
      expectOneEffect(
        await run(process.execPath, ['out/use.js'], { cwd: dir, env: cleanEnv(), timeout: 120_000 }),
        leg,
      );
    }, 180_000);
  });
}

/** The consumer's last line: both asks done, the second adopted, one effect at the provider. */
function expectOneEffect({ stdout }: { stdout: string }, leg: Leg): void {
  expect(JSON.parse(stdout.trim().split('\n').pop()!)).toMatchObject({
    first: 'done',
    again: 'done',
    adopted: true,
    sameOperation: true,
    records: 1,
    ...leg.expect,
  });
}

/** A TypeScript file with its types erased (Node's own stripper), as ESM. */
function javascriptOf(file: string): string {
  return stripTypeScriptTypes(readFileSync(file, 'utf8'));
}

/** `version` ≥ `floor`, both plain x.y.z. */
function atLeast(version: string, floor: string): boolean {
  const a = version.split('.').map(Number);
  const b = floor.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}
