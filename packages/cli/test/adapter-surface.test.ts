/**
 * One check over every folder in adapters/: each adapter has the same pieces under the same names, so a
 * new adapter (or a missing piece of an old one) fails here rather than in review. The pieces: the
 * factory and the cards under one spelling of the vendor, a small root entry that reaches only the
 * contract and the vendor SDK, the loopback sandbox and drills from `./sandbox`, the shared conformance
 * test, the README card section rendered by the one script (scripts/render-cards.mjs at the root), and an exactly pinned SDK. Besides the
 * contract and that SDK, an adapter with a `./sandbox` entry may depend on the dependency-free
 * `@retrysafe/sandbox-kit` (what that entry is built from), and on nothing else. The one exception is
 * the package that is itself a sandbox (`SELF_SANDBOX`): its root entry is what `./sandbox` is
 * elsewhere, so its root entry may reach the kit; it has no vendor SDK.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type RetrySafetyCard, validateCard } from '@retrysafe/contract';
import { entryCards, readCardSection } from '@retrysafe/contract/render';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..', '..', '..', 'adapters');
const adapters = readdirSync(root, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(root, d.name, 'package.json')))
  .map((d) => d.name);
/** The package that is itself a sandbox: its root entry holds what `./sandbox` holds elsewhere. */
const SELF_SANDBOX = 'sandbox';
/** Most values a root entry may export (the factory, the cards, and a few the options need). */
const MAX_ROOT_VALUES = 9;
/** The one other dependency an adapter may have, and only for its `./sandbox` entry. */
const SANDBOX_KIT = '@retrysafe/sandbox-kit';

const read = (...p: string[]) => readFileSync(join(root, ...p), 'utf8');
/** Every adapter README as the one card renderer (scripts/render-cards.mjs) sees it. */
const readmes: Promise<{ adapter: string; text: string; rendered: string; cards: RetrySafetyCard[] }[]> = import(
  pathToFileURL(join(root, '..', 'scripts', 'render-cards.mjs')).href
).then((m: { adapterReadmes(): Promise<never[]> }) => m.adapterReadmes());
const pkgOf = (a: string) =>
  JSON.parse(read(a, 'package.json')) as {
    name: string;
    exports: Record<string, unknown>;
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
    scripts?: Record<string, string>;
  };
const importEntry = (a: string, sub: string) =>
  import(pathToFileURL(join(root, a, 'dist', sub, 'index.js')).href) as Promise<Record<string, unknown>>;

/** Bare specifiers reachable from a source file through its relative imports (type-only imports included: they must resolve too). */
function bareImports(file: string, seen = new Set<string>()): Set<string> {
  const out = new Set<string>();
  if (seen.has(file)) return out;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(
    /(?:import|export)\s[^'"]*?from\s*'([^']+)'|import\s*\(\s*'([^']+)'\s*\)|import\s*'([^']+)'/g,
  )) {
    const spec = m[1] ?? m[2] ?? m[3]!;
    if (spec.startsWith('.')) {
      const target = resolve(dirname(file), spec.replace(/\.js$/, '.ts'));
      for (const s of bareImports(target, seen)) out.add(s);
      out.add(`./${target.slice(root.length + 1)}`);
    } else out.add(spec);
  }
  return out;
}

describe('every adapter has the same pieces', () => {
  it('finds the adapters', () => {
    expect(adapters).toEqual(expect.arrayContaining(['http', 'hubspot', 'msgraph', 'sandbox', 'stripe']));
  });

  for (const a of adapters) {
    describe(a, () => {
      const pkg = pkgOf(a);
      const sdkDeps = Object.entries(pkg.dependencies ?? {}).filter(
        ([name]) => name !== '@retrysafe/contract' && name !== SANDBOX_KIT,
      );

      it('package: @retrysafe/<folder>, depends on the contract, at most one vendor SDK pinned to an exact version, and the sandbox kit only for ./sandbox', () => {
        expect(pkg.name).toBe(`@retrysafe/${a}`);
        expect(pkg.dependencies?.['@retrysafe/contract']).toBe('workspace:^');
        if (pkg.dependencies?.[SANDBOX_KIT] !== undefined) {
          if (a === SELF_SANDBOX) expect(sdkDeps, `${a} is a sandbox, not a vendor's adapter: no SDK`).toEqual([]);
          else expect(Object.keys(pkg.exports), `${SANDBOX_KIT} is only for a ./sandbox entry`).toContain('./sandbox');
          expect(pkg.dependencies[SANDBOX_KIT], `${SANDBOX_KIT} like the contract`).toBe('workspace:^');
        }
        expect(sdkDeps.length).toBeLessThanOrEqual(1);
        for (const [name, version] of sdkDeps)
          expect(version, `${name} must be pinned like every other SDK`).toMatch(/^\d+\.\d+\.\d+$/);
        expect(
          pkg.scripts?.cards,
          'README cards come from the one scripts/render-cards.mjs at the root',
        ).toBeUndefined();
      });

      it('files: <folder>-adapter.ts, <folder>-cards.ts and index.ts in src; conformance and readme tests', () => {
        // The sandbox adapter's conformance test lives in the testkit (core's tests use the sandbox and
        // the testkit depends on core: beside the adapter it would make a package cycle).
        const conformance =
          a === SELF_SANDBOX
            ? join(root, '..', 'packages', 'testkit', 'test', 'sandbox-conformance.test.ts')
            : join(root, a, 'test', 'conformance.test.ts');
        for (const f of [`src/${a}-adapter.ts`, `src/${a}-cards.ts`, 'src/index.ts', 'README.md']) {
          expect(existsSync(join(root, a, f)), `adapters/${a}/${f}`).toBe(true);
        }
        expect(existsSync(conformance), conformance).toBe(true);
        if (a === SELF_SANDBOX) {
          expect(existsSync(join(root, a, 'test', 'conformance.test.ts')), 'the sandbox adapter needs no testkit').toBe(
            false,
          );
          expect(readFileSync(conformance, 'utf8')).toMatch(
            /from '@retrysafe\/sandbox'[\s\S]*from '\.\.\/src\/conformance\.js'[\s\S]*runConformance\(drill\)/,
          );
          expect(pkg.devDependencies?.['@retrysafe/testkit'], 'no package cycle through the testkit').toBeUndefined();
        } else {
          expect(readFileSync(conformance, 'utf8')).toMatch(
            /from '@retrysafe\/testkit\/conformance'[\s\S]*runConformance\(/,
          );
        }
      });

      it('root entry: the factory and the cards under one spelling of the vendor, and little else', async () => {
        const entry = await importEntry(a, '');
        const values = Object.keys(entry);
        const factories = values.filter((n) => /^create[A-Z][A-Za-z]*Adapter$/.test(n));
        const vendor = factories
          .map((n) => n.slice('create'.length, -'Adapter'.length))
          .find((v) => v.toLowerCase() === a.toLowerCase());
        expect(vendor, `create<Vendor>Adapter for ${a} among ${values.join(', ')}`).toBeDefined();
        const cardsName = `${vendor![0]!.toLowerCase()}${vendor!.slice(1)}Cards`;
        expect(values.filter((n) => /Cards$/.test(n))).toEqual([cardsName]);
        const cards = entryCards(entry);
        expect(cards.length).toBeGreaterThan(0);
        for (const c of cards) expect(validateCard(c).ok, c.operation).toBe(true);
        // No other spelling of the vendor (HUBSPOT_…, hubspot…) next to the chosen one.
        for (const n of values)
          if (n.toLowerCase().includes(a.toLowerCase()))
            expect(n, `${n} spells ${a} as ${vendor}`).toMatch(
              new RegExp(`${vendor}|${vendor![0]!.toLowerCase()}${vendor!.slice(1)}`),
            );
        expect(values.length, `root values: ${values.join(', ')}`).toBeLessThanOrEqual(MAX_ROOT_VALUES);
      });

      it('root entry reaches only the contract, the vendor SDK and node built-ins (never the sandbox)', () => {
        // The self-sandbox's root entry is its sandbox, so it alone may reach the kit from there.
        const allowed = new Set([
          '@retrysafe/contract',
          ...sdkDeps.map(([n]) => n),
          ...(a === SELF_SANDBOX ? [SANDBOX_KIT] : []),
        ]);
        const builtins = new Set(builtinModules);
        for (const spec of bareImports(join(root, a, 'src', 'index.ts'))) {
          if (spec.startsWith('./')) {
            expect(spec, 'the root entry must not reach src/sandbox/').not.toMatch(
              new RegExp(`^\\./${a}/src/sandbox/`),
            );
            continue;
          }
          const pkgName = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
          const ok = allowed.has(pkgName) || builtins.has(spec.replace(/^node:/, '')) || spec.startsWith('node:');
          expect(ok, `adapters/${a}/src/index.ts reaches ${spec}`).toBe(true);
        }
      });

      it('sandbox entry: the drills (and a loopback sandbox) from ./sandbox', async () => {
        const sub = a === SELF_SANDBOX ? '' : 'sandbox';
        if (a !== SELF_SANDBOX) expect(Object.keys(pkg.exports)).toContain('./sandbox');
        const entry = await importEntry(a, sub);
        expect(Array.isArray(entry.drills), 'drills: DrillSetup[]').toBe(true);
        for (const d of entry.drills as { name: string; createAdapter: unknown; startSandbox: unknown }[]) {
          expect(typeof d.createAdapter, d.name).toBe('function');
          expect(typeof d.startSandbox, d.name).toBe('function');
        }
        expect(
          Object.keys(entry).some((n) => /^start[A-Za-z]*Sandbox[A-Za-z]*$/.test(n)),
          'a start…Sandbox export',
        ).toBe(true);
      });

      it('README: the card section under "## Retry safety cards" is what the one script renders from the root entry\'s cards', async () => {
        const readme = (await readmes).find((r) => r.adapter === a)!;
        expect(readme.text).toMatch(
          /## Retry safety cards\n[\s\S]*?<!-- cards:start \(generated by scripts\/render-cards\.mjs; do not edit\) -->[\s\S]*<!-- cards:end -->/,
        );
        expect(readCardSection(readme.text), 'regenerate: node scripts/render-cards.mjs').toBe(
          readCardSection(readme.rendered),
        );
        // Unknown facts are shown as unknown, and a vendor's adapter says how to install it.
        if (readme.cards.some((c: RetrySafetyCard) => validateCard(c).unknowns.length > 0))
          expect(readme.text).toContain('| **⚠ unknown** |');
        if (a !== SELF_SANDBOX) expect(readme.text).toContain(`pnpm add ${pkg.name}`);
        // Without it, one ledger serving two accounts gives the same intent one id: the second account's effect is lost.
        if (a !== SELF_SANDBOX) expect(readme.text, 'the README names the account option').toContain('`account`');
      });
    });
  }
});
