import { execFileSync } from 'node:child_process';

const shipped = new Map<string, Set<string>>();

/** The paths `pnpm pack` puts in the tarball of the workspace package in `dir` (what a user installs). */
export function shippedFiles(dir: string): Set<string> {
  if (!shipped.has(dir)) {
    const out = execFileSync('pnpm', ['pack', '--dry-run', '--json'], { cwd: dir, encoding: 'utf8' });
    shipped.set(dir, new Set((JSON.parse(out) as { files: { path: string }[] }).files.map((f) => f.path)));
  }
  return shipped.get(dir)!;
}
