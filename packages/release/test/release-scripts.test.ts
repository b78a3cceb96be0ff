// The pieces of the release flow that decide something, tested on small fixtures (no registry).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exportShapeProblems, splitDiagnostics } from '../scripts/check-exports.mjs';
import {
  assertLoopbackRegistry,
  changesetsRegistryFor,
  isLoopbackRegistry,
  PUBLIC_NPM_REGISTRY,
  RegistryGuardError,
  resolvePublishRegistry,
} from '../scripts/registry-guard.mjs';
import {
  dependentsNeedingMajor,
  parseChangeset,
  propagateContractBreak,
  VersioningError,
} from '../scripts/version.mjs';
import { listPublicPackages, listWorkspacePackages, WorkspaceError } from '../scripts/workspace.mjs';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A tiny workspace on disk: `{ 'packages/a': manifest, … }` plus optional changesets and .npmrc. */
function fixture(
  pkgs: Record<string, object>,
  opts: { changesets?: Record<string, string>; npmrc?: string; workspace?: string } = {},
) {
  const root = mkdtempSync(join(tmpdir(), 'retrysafe-release-fixture-'));
  dirs.push(root);
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'fixture-root', private: true }));
  writeFileSync(join(root, 'pnpm-workspace.yaml'), opts.workspace ?? 'packages:\n  - packages/*\n  - adapters/*\n');
  for (const [rel, manifest] of Object.entries(pkgs)) {
    mkdirSync(join(root, rel), { recursive: true });
    writeFileSync(join(root, rel, 'package.json'), JSON.stringify(manifest));
  }
  mkdirSync(join(root, '.changeset'));
  for (const [f, text] of Object.entries(opts.changesets ?? {})) writeFileSync(join(root, '.changeset', f), text);
  if (opts.npmrc !== undefined) writeFileSync(join(root, '.npmrc'), opts.npmrc);
  return root;
}

const contract = { name: '@retrysafe/contract', version: '0.3.1' };
const dep = (name: string, extra: object = {}) => ({
  name,
  version: '0.2.0',
  dependencies: { '@retrysafe/contract': 'workspace:^' },
  ...extra,
});

describe('loopback check', () => {
  it.each([
    'http://127.0.0.1:4873/',
    'http://127.0.0.1:4873',
    'http://127.9.8.7/',
    'https://127.0.0.1:443/npm/',
    'http://[::1]:4873/',
  ])('accepts %s', (url) => expect(isLoopbackRegistry(url)).toBe(true));

  it.each([
    'https://registry.npmjs.org/',
    'http://localhost:4873/',
    'http://127.0.0.1.nip.io/',
    'http://128.0.0.1/',
    'http://10.0.0.1:4873/',
    'http://[::2]/',
    'file:///tmp/registry',
    'http://user:pw@127.0.0.1:4873/',
    'not a url',
    '',
  ])('refuses %s', (url) => {
    expect(isLoopbackRegistry(url)).toBe(false);
    expect(() => assertLoopbackRegistry(url)).toThrow(RegistryGuardError);
  });

  it('names the address it refused', () => {
    expect(() => assertLoopbackRegistry('https://registry.npmjs.org/', 'the publish registry')).toThrow(
      /the publish registry is "https:\/\/registry\.npmjs\.org\/", not a loopback address/,
    );
  });
});

describe('which registry each publishing tool will use', () => {
  const pkgs = { 'packages/contract': contract, 'adapters/sandbox': dep('@retrysafe/sandbox') };
  const env = (extra: Record<string, string>) => {
    const e: Record<string, string | undefined> = { ...process.env };
    for (const k of Object.keys(e)) if (/^npm_config_.*registry/i.test(k)) delete e[k];
    return { ...e, ...extra };
  };

  it('follows the changesets rule: publishConfig, then npm_config_registry, else the public registry', () => {
    expect(changesetsRegistryFor({}, {})).toBe(PUBLIC_NPM_REGISTRY);
    expect(changesetsRegistryFor({}, { npm_config_registry: 'http://127.0.0.1:9/' })).toBe('http://127.0.0.1:9/');
    expect(
      changesetsRegistryFor(
        { publishConfig: { registry: 'http://127.0.0.1:8/' } },
        { npm_config_registry: 'http://127.0.0.1:9/' },
      ),
    ).toBe('http://127.0.0.1:8/');
    expect(changesetsRegistryFor({}, { 'npm_config_@retrysafe:registry': 'http://127.0.0.1:7/' })).toBe(
      'http://127.0.0.1:7/',
    );
  });

  it('passes when a project .npmrc and npm_config_registry name the same loopback registry', async () => {
    const root = fixture(pkgs, { npmrc: 'registry=http://127.0.0.1:4999/\n' });
    const { registry, seen } = await resolvePublishRegistry({
      root,
      packages: listPublicPackages(root),
      env: env({ npm_config_registry: 'http://127.0.0.1:4999/' }),
      loopbackOnly: true,
    });
    expect(registry).toBe('http://127.0.0.1:4999/');
    expect(Object.keys(seen)).toEqual(
      expect.arrayContaining([
        'npm (workspace root)',
        'pnpm (@retrysafe/sandbox)',
        'changesets npm info (@retrysafe/contract)',
      ]),
    );
  });

  it('refuses npm_config_registry alone: pnpm ignores it and would publish to its default registry', async () => {
    const root = fixture(pkgs);
    const err = await resolvePublishRegistry({
      root,
      packages: listPublicPackages(root),
      env: env({ npm_config_registry: 'http://127.0.0.1:4999/' }),
      loopbackOnly: true,
    }).then(
      () => null,
      (e: RegistryGuardError) => e,
    );
    expect(err).toBeInstanceOf(RegistryGuardError);
    expect(err!.message).toMatch(/do not agree/);
    expect(err!.seen['pnpm (@retrysafe/sandbox)']).not.toBe('http://127.0.0.1:4999/');
    expect(err!.seen['changesets npm info (@retrysafe/sandbox)']).toBe('http://127.0.0.1:4999/');
  });

  it('refuses a .npmrc alone: changesets would ask the public registry whether the versions exist', async () => {
    const root = fixture(pkgs, { npmrc: 'registry=http://127.0.0.1:4999/\n' });
    await expect(
      resolvePublishRegistry({ root, packages: listPublicPackages(root), env: env({}), loopbackOnly: true }),
    ).rejects.toThrow(
      /do not agree[\s\S]*changesets npm info \(@retrysafe\/contract\): https:\/\/registry\.npmjs\.org\//,
    );
  });

  it('refuses a non-loopback registry even when every tool agrees on it (test-only mode)', async () => {
    const root = fixture(pkgs, { npmrc: 'registry=http://192.0.2.10:4873/\n' });
    const args = {
      root,
      packages: listPublicPackages(root),
      env: env({ npm_config_registry: 'http://192.0.2.10:4873/' }),
    };
    expect((await resolvePublishRegistry(args)).registry).toBe('http://192.0.2.10:4873/');
    await expect(resolvePublishRegistry({ ...args, loopbackOnly: true })).rejects.toThrow(/not a loopback address/);
  });

  it('sees a scoped @retrysafe registry override in a package folder', async () => {
    const root = fixture(pkgs, { npmrc: 'registry=http://127.0.0.1:4999/\n' });
    writeFileSync(join(root, 'adapters/sandbox/.npmrc'), '@retrysafe:registry=http://192.0.2.10/\n');
    await expect(
      resolvePublishRegistry({
        root,
        packages: listPublicPackages(root),
        env: env({ npm_config_registry: 'http://127.0.0.1:4999/' }),
        loopbackOnly: true,
      }),
    ).rejects.toThrow(/npm \(@retrysafe\/sandbox\): http:\/\/192\.0\.2\.10\//);
  });
});

describe('workspace discovery', () => {
  it('lists every package folder the workspace globs match, public ones apart', () => {
    const root = fixture({
      'packages/contract': contract,
      'packages/release': { name: '@retrysafe/release', version: '0.0.0', private: true },
      'adapters/stripe': dep('@retrysafe/stripe'),
      'adapters/notes': {}, // no name: not a package pnpm would publish
    });
    mkdirSync(join(root, 'adapters/empty-folder'));
    expect(listWorkspacePackages(root).map((p) => p.rel)).toEqual([
      'adapters/stripe',
      'packages/contract',
      'packages/release',
    ]);
    expect(listPublicPackages(root).map((p) => p.name)).toEqual(['@retrysafe/stripe', '@retrysafe/contract']);
  });

  it('refuses a glob shape it does not understand instead of missing packages', () => {
    const root = fixture({}, { workspace: "packages:\n  - 'packages/**'\n" });
    expect(() => listWorkspacePackages(root)).toThrow(WorkspaceError);
  });
});

describe('a major contract change marks every dependent major', () => {
  const pkgs = {
    'packages/contract': contract,
    'packages/core': dep('@retrysafe/core'),
    'adapters/stripe': dep('@retrysafe/stripe'),
    'packages/testkit': {
      name: '@retrysafe/testkit',
      version: '0.2.0',
      peerDependencies: { '@retrysafe/contract': '^0.3.0' },
    },
    'packages/bench': dep('@retrysafe/bench', { private: true }),
    'adapters/unrelated': {
      name: '@retrysafe/unrelated',
      version: '1.0.0',
      devDependencies: { '@retrysafe/contract': 'workspace:^' },
    },
  };
  const cs = (lines: string) => `---\n${lines}\n---\n\nA sentence to a user.\n`;

  it('reads changeset front matter', () => {
    expect(parseChangeset(cs('"@retrysafe/contract": major\n\'@retrysafe/core\': patch'))).toEqual({
      '@retrysafe/contract': 'major',
      '@retrysafe/core': 'patch',
    });
    expect(() => parseChangeset('no front matter', 'x.md')).toThrow(VersioningError);
    expect(() => parseChangeset(cs('"@retrysafe/contract": huge'), 'x.md')).toThrow(/cannot read release line/);
  });

  it('lists the public runtime dependents, not private packages or devDependency users', () => {
    const root = fixture(pkgs, {
      changesets: { 'break.md': cs('"@retrysafe/contract": major'), 'other.md': cs('"@retrysafe/core": minor') },
    });
    const { next, dependents } = dependentsNeedingMajor(root);
    expect(next).toBe('1.0.0');
    expect(dependents.sort()).toEqual(['@retrysafe/core', '@retrysafe/stripe', '@retrysafe/testkit']);
  });

  it('leaves out a dependent a changeset already marks major', () => {
    const root = fixture(pkgs, {
      changesets: { 'break.md': cs('"@retrysafe/contract": major\n"@retrysafe/stripe": major') },
    });
    expect(dependentsNeedingMajor(root).dependents.sort()).toEqual(['@retrysafe/core', '@retrysafe/testkit']);
  });

  it('does nothing for a minor or patch contract change', () => {
    for (const type of ['minor', 'patch']) {
      const root = fixture(pkgs, { changesets: { 'c.md': cs(`"@retrysafe/contract": ${type}`) } });
      expect(dependentsNeedingMajor(root).dependents).toEqual([]);
      expect(propagateContractBreak(root)).toBeNull();
    }
  });

  it('writes one changeset a user can read', async () => {
    const root = fixture(pkgs, { changesets: { 'break.md': cs('"@retrysafe/contract": major') } });
    const file = propagateContractBreak(root)!;
    const { readFileSync } = await import('node:fs');
    const text = readFileSync(file, 'utf8');
    expect(parseChangeset(text)).toEqual({
      '@retrysafe/core': 'major',
      '@retrysafe/stripe': 'major',
      '@retrysafe/testkit': 'major',
    });
    expect(text).toMatch(/@retrysafe\/contract 1\.0\.0, which has a breaking change/);
  });
});

/** A fixture workspace with one package, built (`dist/index.js` and its `.d.ts`) unless told otherwise. */
function onePackage(name: string, built = true) {
  const dir = join(fixture({ [`packages/${name}`]: {} }), 'packages', name);
  if (built) {
    mkdirSync(join(dir, 'dist'));
    for (const f of ['index.js', 'index.d.ts']) writeFileSync(join(dir, 'dist', f), '');
  }
  return { dir, problems: (manifest: object) => exportShapeProblems({ dir, name, manifest }) };
}

describe('exports map shape', () => {
  it('accepts { types, default } with types first and both files present', () => {
    const { problems } = onePackage('a');
    const manifest = {
      name: 'a',
      type: 'module',
      exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' }, './package.json': './package.json' },
    };
    expect(problems(manifest)).toEqual([]);
  });

  it('names each problem: order, missing files, mismatched declaration, no package.json export', () => {
    const { problems } = onePackage('b', false);
    const manifest = {
      name: 'b',
      type: 'module',
      exports: { '.': { default: './dist/index.js', types: './dist/other.d.ts' } },
    };
    expect(problems(manifest)).toEqual(
      expect.arrayContaining([
        'b: "./package.json" is not exported',
        'b .: "types" must be the first condition (got default, types)',
        'b .: types ./dist/other.d.ts is not the declaration of ./dist/index.js',
        'b .: ./dist/index.js does not exist (not built?)',
      ]),
    );
  });
});

describe('exports map: a data file', () => {
  it('a JSON file exported as itself needs no types, but must exist', () => {
    const { dir, problems } = onePackage('c');
    const exports = {
      '.': { types: './dist/index.d.ts', default: './dist/index.js' },
      './schema/card.v1.json': './schema/card.v1.json',
      './package.json': './package.json',
    };
    const manifest = { name: 'c', type: 'module', exports };
    expect(problems(manifest)).toEqual(['c ./schema/card.v1.json: the exported file ./schema/card.v1.json is missing']);
    mkdirSync(join(dir, 'schema'));
    writeFileSync(join(dir, 'schema/card.v1.json'), '{}');
    expect(problems(manifest)).toEqual([]);
    // a code subpath still needs { types, default }
    expect(problems({ ...manifest, exports: { ...exports, './x': './dist/index.js' } })).toEqual([
      'c ./x: expected { types, default }, got "./dist/index.js"',
    ]);
  });
});

describe('type-export diagnostics', () => {
  it("counts errors in our declarations, the check file or no file; only notes errors inside a vendor's declarations", () => {
    const out = [
      "../../../work/x/node_modules/.pnpm/@vendor+p@1.0.0/node_modules/@vendor/p/dist/index.d.ts(1,29): error TS7016: Could not find a declaration file for module 'json-schema'.",
      '  Try `npm i --save-dev @types/json-schema`',
      "../packages/core/dist/index.d.ts(3,1): error TS2307: Cannot find module '@types/some-driver'.",
      "../packages/core/node_modules/x/index.d.ts(1,1): error TS1005: ';' expected.",
      "check.ts(1,20): error TS2307: Cannot find module '@retrysafe/stripe/sandbox'.",
      "error TS2318: Cannot find global type 'Array'.",
    ].join('\n');
    const { ours, theirs } = splitDiagnostics(out, '/tmp/copy/.typetest-exports', ['/tmp/copy/packages/core']);
    expect(ours).toEqual([
      "../packages/core/dist/index.d.ts(3,1): error TS2307: Cannot find module '@types/some-driver'.",
      "check.ts(1,20): error TS2307: Cannot find module '@retrysafe/stripe/sandbox'.",
      "error TS2318: Cannot find global type 'Array'.",
    ]);
    expect(theirs).toHaveLength(2);
    expect(theirs[0]).toContain('Try `npm i --save-dev @types/json-schema`');
  });
});
