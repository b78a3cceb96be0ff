#!/usr/bin/env node
// The release pipeline (`pnpm release`): build → publint and type-export checks → changeset publish.
//
//   node packages/release/scripts/release.mjs                  real release (registry from .npmrc / npm config)
//   node packages/release/scripts/release.mjs --check-only     everything except the publish
//   node packages/release/scripts/release.mjs --loopback-only  refuse unless the registry is 127.0.0.0/8 or [::1]
//
// Before anything is published it asks npm, pnpm (from every package folder) and the changesets rule
// which registry they will use, and stops unless they all agree: see registry-guard.mjs.
// Run from the workspace root it belongs to (it finds the root from its own location).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { compileExportProblems, exportShapeProblems } from './check-exports.mjs';
import { RegistryGuardError, resolvePublishRegistry } from './registry-guard.mjs';
import { listPublicPackages, repoRoot } from './workspace.mjs';

const args = new Set(process.argv.slice(2));
for (const a of args)
  if (!['--check-only', '--loopback-only'].includes(a)) {
    console.error(`release: unknown option ${a} (expected --check-only, --loopback-only)`);
    process.exit(2);
  }
const checkOnly = args.has('--check-only');
const loopbackOnly = args.has('--loopback-only') || process.env.RETRYSAFE_RELEASE_LOOPBACK_ONLY === '1';

let stepStarted = null;
function step(title) {
  if (stepStarted !== null) console.log(`  (${((Date.now() - stepStarted) / 1000).toFixed(1)} s)`);
  stepStarted = title ? Date.now() : null;
  if (title) console.log(`\n▶ ${title}`);
}
function run(cmd, argv, opts = {}) {
  try {
    execFileSync(cmd, argv, { cwd: repoRoot, stdio: 'inherit', ...opts });
  } catch (e) {
    console.error(`release: ${[cmd, ...argv].join(' ')} failed (exit ${e.status ?? e.signal}); stopping`);
    process.exit(1);
  }
}
// The workspace's own tools, called directly (not through `pnpm exec`, which may first run an install).
const bin = (name) => join(repoRoot, 'node_modules', '.bin', name);

const packages = listPublicPackages(repoRoot);
if (packages.length === 0) {
  console.error('release: no public workspace packages');
  process.exit(1);
}
console.log(`release: ${packages.length} public packages: ${packages.map((p) => `${p.name}@${p.version}`).join(', ')}`);

let registry = null;
if (!checkOnly) {
  // First, before any work: a misconfigured registry must stop the run, not be discovered after the build.
  step('registry guard');
  try {
    registry = (await resolvePublishRegistry({ root: repoRoot, packages, loopbackOnly })).registry;
  } catch (e) {
    if (!RegistryGuardError.isGuardError(e)) throw e;
    console.error(`release: refused, nothing built or published: ${e.message}`);
    process.exit(1);
  }
  console.log(`every tool publishes to ${registry}${loopbackOnly ? ' (loopback: checked)' : ''}`);
}

step('build');
// Packages whose build bundles the entry after tsc (scripts/bundle-dist.mjs) get the same steps here:
// the bundle's .d.ts first (dependents resolve the package's types through it during this tsc -b),
// the bundle after.
const bundling = packages.filter((p) => /bundle-dist\.mjs/.test(p.manifest.scripts?.build ?? ''));
for (const p of bundling)
  run(process.execPath, [join(repoRoot, 'scripts', 'bundle-dist.mjs'), '--dts-only'], { cwd: p.dir });
// One checker per project (projects still build side by side): more would each check the same declarations again.
run(bin('tsc'), ['-b', '--checkers', '1', ...packages.map((p) => p.rel)]);
for (const p of bundling) run(process.execPath, [join(repoRoot, 'scripts', 'bundle-dist.mjs')], { cwd: p.dir });

step('publint --strict');
for (const p of packages) run(bin('publint'), ['--strict', p.rel]);

step('type-export checks');
const shapeProblems = packages.flatMap((p) => exportShapeProblems(p));
const problems = shapeProblems.length ? shapeProblems : compileExportProblems(repoRoot, packages);
if (problems.length) {
  console.error(problems.join('\n'));
  console.error(`release: ${problems.length} type-export problem(s); nothing published`);
  process.exit(1);
}
console.log(`exports of ${packages.length} packages resolve and type-check (NodeNext, Bundler)`);

step();
if (checkOnly) {
  console.log('\nrelease: --check-only, stopping before publish');
  process.exit(0);
}

step(`changeset publish → ${registry}`);
// changesets reads npm_config_registry for its "already published?" query; pnpm reads .npmrc. The
// guard above proved they agree; pass the agreed value explicitly so nothing falls back to a default.
run(bin('changeset'), ['publish'], { env: { ...process.env, npm_config_registry: registry } });
step();
