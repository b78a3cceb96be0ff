#!/usr/bin/env node
// `pnpm version-packages`: applies the pending changesets, after making sure a breaking change to
// @retrysafe/contract shows up as a major version of every package that depends on it.
//
// Why this step exists: changesets (2.31.1, assemble-release-plan `determineDependents`) gives a
// dependent a MAJOR bump only when it declares the changed package in `peerDependencies`. A package
// that has it in `dependencies` — as every retrysafe package does, with `workspace:^` — gets a PATCH
// bump when the new version leaves its range, whatever the bump type, and no config option changes
// that. So before `changeset version` runs, this script adds one changeset that marks every public
// package depending on the contract major whenever a pending changeset marks the contract major.
// A minor contract bump keeps changesets' own behaviour (dependents whose range it leaves get a patch
// with the new range) — the 0.x convention the first contract release uses.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { listWorkspacePackages, repoRoot } from './workspace.mjs';

export const CONTRACT = '@retrysafe/contract';
export const PROPAGATED_CHANGESET = 'contract-breaking-change-dependents.md';
const ORDER = { none: 0, patch: 1, minor: 2, major: 3 };

export class VersioningError extends Error {
  constructor(message) {
    super(message);
    this.name = 'VersioningError';
    this.code = 'RETRYSAFE_RELEASE_VERSIONING';
  }
}

/** The releases a changeset file declares: `{ name: bumpType }` from its front matter. */
export function parseChangeset(text, file = 'changeset') {
  const m = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text);
  if (!m) throw new VersioningError(`${file}: no front matter`);
  const releases = {};
  for (const line of m[1]
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean)) {
    const r = /^["']?([^"':]+(?::[^"':]+)?)["']?\s*:\s*(major|minor|patch|none)$/.exec(line);
    if (!r) throw new VersioningError(`${file}: cannot read release line ${JSON.stringify(line)}`);
    releases[r[1]] = r[2];
  }
  return releases;
}

/** Highest bump type per package over all pending changesets in `<root>/.changeset`. */
export function pendingBumps(root) {
  const dir = join(root, '.changeset');
  const bumps = {};
  if (!existsSync(dir)) return bumps;
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.md') && x !== 'README.md')) {
    for (const [name, type] of Object.entries(parseChangeset(readFileSync(join(dir, f), 'utf8'), f))) {
      if (ORDER[type] > ORDER[bumps[name] ?? 'none']) bumps[name] = type;
    }
  }
  return bumps;
}

export function nextMajor(version) {
  const m = /^(\d+)\.\d+\.\d+/.exec(version ?? '');
  if (!m) throw new VersioningError(`${CONTRACT} version ${JSON.stringify(version)} is not x.y.z`);
  return `${Number(m[1]) + 1}.0.0`;
}

/**
 * When a pending changeset marks the contract major: its next version and the public packages that
 * depend on it (dependencies, peerDependencies or optionalDependencies) and are not yet marked major.
 * Private packages are left out: they are not versioned (.changeset/config.json `privatePackages`).
 */
export function dependentsNeedingMajor(root) {
  const packages = listWorkspacePackages(root);
  const contract = packages.find((p) => p.name === CONTRACT);
  const bumps = pendingBumps(root);
  if (!contract || bumps[CONTRACT] !== 'major') return { next: null, dependents: [] };
  const dependents = packages
    .filter((p) => !p.private && p.name !== CONTRACT && bumps[p.name] !== 'major')
    .filter((p) => ['dependencies', 'peerDependencies', 'optionalDependencies'].some((k) => p.manifest[k]?.[CONTRACT]))
    .map((p) => p.name);
  return { next: nextMajor(contract.version), dependents };
}

/** Writes the changeset that marks the dependents major; returns its path, or null when none is needed. */
export function propagateContractBreak(root) {
  const { next, dependents } = dependentsNeedingMajor(root);
  if (dependents.length === 0) return null;
  const file = join(root, '.changeset', PROPAGATED_CHANGESET);
  const front = dependents.map((d) => `"${d}": major`).join('\n');
  writeFileSync(
    file,
    `---\n${front}\n---\n\nBuilt on ${CONTRACT} ${next}, which has a breaking change: upgrade @retrysafe/core and your adapters together, and see the ${CONTRACT} changelog for what changed.\n`,
  );
  return file;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const written = propagateContractBreak(repoRoot);
  if (written) console.log(`version: ${CONTRACT} has a breaking change; marked its dependents major in ${written}`);
  execFileSync(join(repoRoot, 'node_modules', '.bin', 'changeset'), ['version'], { cwd: repoRoot, stdio: 'inherit' });
}
