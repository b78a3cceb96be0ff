// Finds the workspace packages the way pnpm does (from pnpm-workspace.yaml), so the release flow
// publishes every public package that exists, not a list someone has to keep up to date.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The monorepo root this script belongs to. */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

export class WorkspaceError extends Error {
  constructor(message) {
    super(message);
    this.name = 'WorkspaceError';
    this.code = 'RETRYSAFE_RELEASE_WORKSPACE';
  }
}

/**
 * The `packages:` globs of pnpm-workspace.yaml. Only the two shapes this repo uses are accepted
 * (`dir/*` and `dir`), plus `!` exclusions; anything else is an error rather than a silent miss.
 */
export function workspaceGlobs(root) {
  const file = join(root, 'pnpm-workspace.yaml');
  if (!existsSync(file)) throw new WorkspaceError(`no pnpm-workspace.yaml in ${root}`);
  const globs = [];
  let inPackages = false;
  for (const raw of readFileSync(file, 'utf8').split(/\r?\n/)) {
    const line = raw.replace(/\s+#.*$/, '');
    if (/^packages:\s*$/.test(line)) {
      inPackages = true;
      continue;
    }
    if (inPackages && /^\s+-\s+/.test(line)) {
      globs.push(
        line
          .replace(/^\s+-\s+/, '')
          .trim()
          .replace(/^['"]|['"]$/g, ''),
      );
      continue;
    }
    if (inPackages && /^\S/.test(line)) inPackages = false;
  }
  if (globs.length === 0) throw new WorkspaceError(`pnpm-workspace.yaml in ${root} lists no packages`);
  for (const g of globs) {
    if (!/^!?[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*(\/\*)?$/.test(g)) {
      throw new WorkspaceError(`unsupported workspace glob ${JSON.stringify(g)}: use "dir/*" or "dir"`);
    }
  }
  return globs;
}

/**
 * Every workspace package: `{ dir (absolute), rel, name, version, private, manifest }`, sorted by
 * relative path. Packages without a name are skipped (pnpm does not publish them either).
 */
export function listWorkspacePackages(root = repoRoot) {
  const globs = workspaceGlobs(root);
  const excluded = new Set(globs.filter((g) => g.startsWith('!')).map((g) => g.slice(1)));
  const dirs = new Set();
  for (const g of globs.filter((x) => !x.startsWith('!'))) {
    if (g.endsWith('/*')) {
      const parent = join(root, g.slice(0, -2));
      if (!existsSync(parent)) continue;
      for (const d of readdirSync(parent, { withFileTypes: true })) {
        if (d.isDirectory()) dirs.add(`${g.slice(0, -2)}/${d.name}`);
      }
    } else {
      dirs.add(g);
    }
  }
  const out = [];
  for (const rel of [...dirs].sort()) {
    if (excluded.has(rel)) continue;
    const pj = join(root, rel, 'package.json');
    if (!existsSync(pj)) continue;
    const manifest = JSON.parse(readFileSync(pj, 'utf8'));
    if (typeof manifest.name !== 'string') continue;
    out.push({
      dir: join(root, rel),
      rel,
      name: manifest.name,
      version: manifest.version,
      private: manifest.private === true,
      manifest,
    });
  }
  return out;
}

/** The packages a release publishes: every workspace package not marked private. */
export function listPublicPackages(root = repoRoot) {
  return listWorkspacePackages(root).filter((p) => !p.private);
}

/** Names of the packages in `dependencies`, `peerDependencies` and `optionalDependencies` (what a user installs). */
export function runtimeDependencyNames(manifest) {
  return [
    ...new Set(
      ['dependencies', 'peerDependencies', 'optionalDependencies'].flatMap((k) => Object.keys(manifest[k] ?? {})),
    ),
  ];
}
