// The sandbox kit is reached only from an adapter's `./sandbox` entry: the root entry (what a user's
// program imports) still needs only the contract and the vendor SDK. Walks the built import graph of
// each adapter's entries (dist, as published) and lists the bare specifiers each one reaches.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const adapters = join(import.meta.dirname, '..', '..', '..', 'adapters');
// A specifier has no whitespace: that keeps prose such as `'… JSONL export'` in a card string from reading as an import.
const SPECIFIER =
  /(?:^|[\s;}])(?:import|export)\s*(?:[^'";]*?\sfrom\s*)?['"]([^'"\s]+)['"]|\bimport\s*\(\s*['"]([^'"\s]+)['"]\s*\)/g;

/** Bare specifiers (packages, `node:` builtins) reached from `entry` through its relative imports. */
function reached(entry: string): Set<string> {
  const seen = new Set<string>();
  const bare = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const m of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
      const spec = (m[1] ?? m[2])!;
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
      else bare.add(spec);
    }
  };
  visit(entry);
  return bare;
}

const KIT = '@retrysafe/sandbox-kit';
const kitDir = join(import.meta.dirname, '..', '..', 'sandbox-kit');
const packageOf = (spec: string) =>
  spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  exports: Record<string, { default?: string } | string>;
}
const withSandboxEntry = readdirSync(adapters)
  .map((d) => join(adapters, d))
  .filter((dir) => existsSync(join(dir, 'package.json')))
  .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest }))
  .filter(({ manifest }) => typeof manifest.exports['./sandbox'] === 'object');

describe('adapter entries and the sandbox kit', () => {
  it('finds the adapters with a ./sandbox entry', () => {
    expect(withSandboxEntry.map((a) => a.manifest.name).sort()).toEqual([
      '@retrysafe/github',
      '@retrysafe/http',
      '@retrysafe/hubspot',
      '@retrysafe/msgraph',
      '@retrysafe/resend',
      '@retrysafe/slack',
      '@retrysafe/stripe',
    ]);
  });

  it.each(withSandboxEntry.map((a) => [a.manifest.name, a] as const))(
    '%s: the root entry reaches only the contract, its SDK and node builtins; ./sandbox adds only the kit',
    (_name, { dir, manifest }) => {
      const entry = (key: string) => join(dir, (manifest.exports[key] as { default: string }).default);
      expect(manifest.dependencies?.[KIT], `${manifest.name} depends on ${KIT}`).toBe('workspace:^');
      expect(manifest.dependencies ?? {}, `${manifest.name} must not depend on the testkit`).not.toHaveProperty(
        '@retrysafe/testkit',
      );
      const sdk = Object.keys(manifest.dependencies ?? {}).filter((d) => d !== '@retrysafe/contract' && d !== KIT);
      const root = [...reached(entry('.'))].filter((s) => !s.startsWith('node:'));
      expect(root.length).toBeGreaterThan(0);
      for (const spec of root)
        expect(['@retrysafe/contract', ...sdk], `${manifest.name} root imports ${spec}`).toContain(packageOf(spec));
      const sandbox = [...reached(entry('./sandbox'))].filter((s) => !s.startsWith('node:'));
      expect(sandbox).toContain(KIT);
      for (const spec of sandbox.filter((s) => packageOf(s) === KIT))
        expect(spec, `${manifest.name}/sandbox imports the kit from its root entry`).toBe(KIT);
      for (const spec of sandbox)
        expect(['@retrysafe/contract', KIT, ...sdk], `${manifest.name}/sandbox imports ${spec}`).toContain(
          packageOf(spec),
        );
    },
  );

  it('@retrysafe/sandbox (itself a sandbox, no ./sandbox entry): its root entry reaches only the contract and the kit', () => {
    const dir = join(adapters, 'sandbox');
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
    expect(manifest.name).toBe('@retrysafe/sandbox');
    expect(manifest.exports).not.toHaveProperty('./sandbox');
    expect(manifest.dependencies).toEqual({ '@retrysafe/contract': 'workspace:^', [KIT]: 'workspace:^' });
    const root = [...reached(join(dir, (manifest.exports['.'] as { default: string }).default))].filter(
      (s) => !s.startsWith('node:'),
    );
    expect(root).toContain(KIT);
    for (const spec of root)
      expect(['@retrysafe/contract', KIT], `@retrysafe/sandbox imports ${spec}`).toContain(packageOf(spec));
  });

  it('the kit itself needs nothing but node builtins (no core, no vitest) and declares no dependencies', () => {
    const kitManifest = JSON.parse(readFileSync(join(kitDir, 'package.json'), 'utf8')) as Manifest &
      Record<string, unknown>;
    expect(kitManifest.name).toBe(KIT);
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies'])
      expect(kitManifest, `${KIT} ${field}`).not.toHaveProperty(field);
    const kit = [...reached(join(kitDir, 'dist', 'index.js'))];
    expect(kit.length).toBeGreaterThan(0);
    expect(kit.filter((s) => !s.startsWith('node:'))).toEqual([]);
  });

  it('the testkit has no ./sandbox entry and no dependency on the kit: sandboxes import the kit itself', () => {
    const testkit = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as Manifest;
    expect(Object.keys(testkit.exports)).not.toContain('./sandbox');
    expect(testkit.dependencies ?? {}).not.toHaveProperty(KIT);
  });
});
