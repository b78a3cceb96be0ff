// A throwaway copy of the workspace for versioning and publishing, so `changeset version` never
// consumes the real .changeset/ folder and no publish ever runs from the real working tree.
//
// Files: the committed tree (HEAD) — what CI's clean clone holds — with the paths in `overlay` taken
// from the working tree instead (by default this package and the changesets config, so the release
// flow being edited is the one under test). Set RETRYSAFE_RELEASE_SOURCE=worktree to copy the whole
// working tree (tracked + untracked, minus .gitignore) instead.
// Dependencies: the copy's root node_modules is a folder of its own whose `.pnpm` store is a symlink
// to the real one and whose other entries (relative symlinks into `.pnpm`, pnpm's state files) are
// copied, so pnpm's bookkeeping in the copy never writes into the real workspace. Each package's own
// node_modules holds only relative symlinks, copied as symlinks, so workspace links point at the
// copy's packages. The copy gets its own git repository on branch `main` (changesets reads the base
// branch and tags releases there).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { listWorkspacePackages } from './workspace.mjs';

export const DEFAULT_OVERLAY = ['packages/release', '.changeset/config.json'];

function git(cwd, args) {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function copyFiles(root, dest, files) {
  for (const f of files) {
    const from = join(root, f);
    if (!existsSync(from) || lstatSync(from).isDirectory()) continue; // deleted in the working tree, or a submodule
    mkdirSync(dirname(join(dest, f)), { recursive: true });
    cpSync(from, join(dest, f), { preserveTimestamps: true, verbatimSymlinks: true });
  }
}

/**
 * Copies `root` to a new temp folder and returns its path.
 * @param {string} root the real workspace root (a git work tree)
 * @param {{ prefix?: string, source?: 'head' | 'worktree', overlay?: string[] }} [opts]
 */
export function copyWorkspace(
  root,
  {
    prefix = 'retrysafe-release-',
    source = process.env.RETRYSAFE_RELEASE_SOURCE === 'worktree' ? 'worktree' : 'head',
    overlay = DEFAULT_OVERLAY,
  } = {},
) {
  const dest = mkdtempSync(join(tmpdir(), prefix));
  const worktreeFiles = (paths = []) =>
    git(root, ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', ...paths])
      .split('\0')
      .filter(Boolean);
  if (source === 'worktree') {
    copyFiles(root, dest, worktreeFiles());
  } else {
    execFileSync('sh', ['-c', 'git archive --format=tar HEAD | tar -x -C "$1"', 'sh', dest], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    for (const path of overlay) rmSync(join(dest, path), { recursive: true, force: true });
    copyFiles(root, dest, worktreeFiles(overlay));
  }
  linkRootNodeModules(join(root, 'node_modules'), join(dest, 'node_modules'));
  for (const p of listWorkspacePackages(dest)) {
    const nm = join(root, p.rel, 'node_modules');
    if (existsSync(nm)) cpSync(nm, join(p.dir, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  }
  const g = (...args) =>
    execFileSync(
      'git',
      [
        '-c',
        'user.name=retrysafe release test',
        '-c',
        'user.email=release-test@example.invalid',
        '-c',
        'commit.gpgsign=false',
        ...args,
      ],
      { cwd: dest, stdio: 'pipe' },
    );
  g('init', '-q', '-b', 'main');
  g('add', '-A');
  g('commit', '-q', '--allow-empty', '-m', 'workspace snapshot for the release test');
  return dest;
}

function linkRootNodeModules(from, to) {
  if (!existsSync(from)) return;
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from)) {
    if (entry === '.vite' || entry === '.vite-temp' || entry === '.cache') continue;
    if (entry === '.pnpm') symlinkSync(join(from, entry), join(to, entry), 'dir');
    else cpSync(join(from, entry), join(to, entry), { recursive: true, verbatimSymlinks: true });
  }
}

export function removeCopy(dir) {
  rmSync(dir, { recursive: true, force: true });
}
