// A throwaway copy of the workspace for versioning and publishing, so `changeset version` never
// consumes the real .changeset/ folder and no publish ever runs from the real working tree.
//
// Files: what git would commit (tracked + untracked, minus .gitignore), read from the working tree.
// Dependencies: the copy's root node_modules is a folder of its own whose `.pnpm` store is a symlink
// to the real one and whose other entries (relative symlinks into `.pnpm`, pnpm's state files) are
// copied, so pnpm's bookkeeping in the copy never writes into the real workspace. Each package's own
// node_modules holds only relative symlinks, copied as symlinks, so workspace links point at the
// copy's packages. The copy gets its own git repository on branch `main` (changesets
// reads the base branch and tags releases there).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { listWorkspacePackages } from './workspace.mjs';

/**
 * Copies `root` to a new temp folder and returns its path.
 * @param {string} root the real workspace root
 * @param {{ prefix?: string, git?: boolean }} [opts]
 */
export function copyWorkspace(root, { prefix = 'retrysafe-release-', git = true } = {}) {
  const dest = mkdtempSync(join(tmpdir(), prefix));
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    .split('\0').filter(Boolean);
  for (const f of files) {
    const from = join(root, f);
    if (!existsSync(from) || lstatSync(from).isDirectory()) continue; // deleted in the working tree, or a submodule
    mkdirSync(dirname(join(dest, f)), { recursive: true });
    cpSync(from, join(dest, f), { preserveTimestamps: true, verbatimSymlinks: true });
  }
  linkRootNodeModules(join(root, 'node_modules'), join(dest, 'node_modules'));
  for (const p of listWorkspacePackages(root)) {
    const nm = join(p.dir, 'node_modules');
    if (existsSync(nm)) cpSync(nm, join(dest, p.rel, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  }
  if (git) {
    const g = (...args) => execFileSync('git', ['-c', 'user.name=retrysafe release test', '-c', 'user.email=release-test@example.invalid', '-c', 'commit.gpgsign=false', ...args], { cwd: dest, stdio: 'pipe' });
    g('init', '-q', '-b', 'main');
    g('add', '-A');
    g('commit', '-q', '-m', 'workspace snapshot for the release test');
  }
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
