// On throwaway copies of the workspace (never the real .changeset/): what a contract change does to
// the versions of the packages built on it, through the release flow's versioning step
// (scripts/version.mjs → changeset version) and, for comparison, through changesets alone.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv } from '../scripts/verdaccio.mjs';
import { CONTRACT } from '../scripts/version.mjs';
import { listWorkspacePackages, repoRoot } from '../scripts/workspace.mjs';
import { copyWorkspace, removeCopy } from '../scripts/workspace-copy.mjs';

const run = promisify(execFile);
type Pkg = ReturnType<typeof listWorkspacePackages>[number];
interface Outcome {
  before: Map<string, Pkg>;
  after: Map<string, Pkg>;
  dir: string;
}
const copies: string[] = [];

/** Copies the workspace, replaces its pending changesets with one contract change, and versions it. */
async function versionWith(type: 'major' | 'minor', how: 'release flow' | 'changesets alone'): Promise<Outcome> {
  const dir = copyWorkspace(repoRoot, { prefix: 'retrysafe-major-bump-' });
  copies.push(dir);
  for (const f of readdirSync(join(dir, '.changeset')).filter((x) => x.endsWith('.md') && x !== 'README.md'))
    rmSync(join(dir, '.changeset', f));
  writeFileSync(
    join(dir, '.changeset', 'contract-change.md'),
    `---\n"${CONTRACT}": ${type}\n---\n\nThe contract changed (${type}).\n`,
  );
  const before = new Map(listWorkspacePackages(dir).map((p) => [p.name, p]));
  const env = cleanEnv();
  if (how === 'release flow')
    await run(process.execPath, [join(dir, 'packages/release/scripts/version.mjs')], { cwd: dir, env });
  else await run(join(dir, 'node_modules/.bin/changeset'), ['version'], { cwd: dir, env });
  const after = new Map(listWorkspacePackages(dir).map((p) => [p.name, p]));
  return { before, after, dir };
}

const major = (v: string) => Number(v.split('.')[0]);
const minor = (v: string) => Number(v.split('.')[1]);
const patch = (v: string) => Number(v.split('.')[2]);
/** The bump between two x.y.z versions. */
function bump(from: string, to: string): 'major' | 'minor' | 'patch' | 'none' {
  if (major(to) > major(from)) return 'major';
  if (minor(to) > minor(from)) return 'minor';
  if (patch(to) > patch(from)) return 'patch';
  return 'none';
}
const RUNTIME = ['dependencies', 'peerDependencies', 'optionalDependencies'] as const;
const dependsOnContract = (p: Pkg) => RUNTIME.some((k) => p.manifest[k]?.[CONTRACT]);
const publicDependents = (o: Outcome) =>
  [...o.before.values()].filter((p) => !p.private && p.name !== CONTRACT && dependsOnContract(p));

let viaFlow: Outcome;
let alone: Outcome;
let minorViaFlow: Outcome;

beforeAll(async () => {
  [viaFlow, alone, minorViaFlow] = await Promise.all([
    versionWith('major', 'release flow'),
    versionWith('major', 'changesets alone'),
    versionWith('minor', 'release flow'),
  ]);
}, 300_000);

afterAll(() => {
  for (const d of copies) removeCopy(d);
});

describe('a contract change marked major, through the release flow', () => {
  it('has dependents to check (the workspace builds packages on the contract)', () => {
    expect(publicDependents(viaFlow).length).toBeGreaterThan(0);
  });

  it('bumps the contract to its next major', () => {
    const from = viaFlow.before.get(CONTRACT)!.version;
    expect(viaFlow.after.get(CONTRACT)!.version).toBe(`${major(from) + 1}.0.0`);
  });

  it('bumps every public package that depends on the contract to its next major', () => {
    for (const p of publicDependents(viaFlow)) {
      expect(viaFlow.after.get(p.name)!.version, p.name).toBe(`${major(p.version) + 1}.0.0`);
    }
  });

  it('tells the user of each dependent why, in its changelog', () => {
    const next = viaFlow.after.get(CONTRACT)!.version;
    for (const p of publicDependents(viaFlow)) {
      const changelog = readFileSync(join(viaFlow.after.get(p.name)!.dir, 'CHANGELOG.md'), 'utf8');
      expect(changelog, p.name).toMatch(/### Major Changes/);
      expect(changelog, p.name).toContain(`Built on ${CONTRACT} ${next}, which has a breaking change`);
    }
  });

  it('leaves packages that do not depend on the contract, and private packages, at their versions', () => {
    for (const [name, p] of viaFlow.before) {
      if (name === CONTRACT || (!p.private && dependsOnContract(p))) continue;
      expect(viaFlow.after.get(name)!.version, name).toBe(p.version);
    }
  });

  it('keeps workspace:^ ranges in the manifests (pnpm writes the real range at publish)', () => {
    for (const p of publicDependents(viaFlow)) {
      const m = viaFlow.after.get(p.name)!.manifest;
      const range = RUNTIME.map((k) => m[k]?.[CONTRACT]).find(Boolean);
      expect(range, p.name).toMatch(/^workspace:/);
    }
  });
});

describe('why the versioning step exists: changesets alone', () => {
  it('gives a dependent a major only when it lists the contract in peerDependencies; a plain dependency gets a patch', () => {
    for (const p of publicDependents(alone)) {
      const expected = p.manifest.peerDependencies?.[CONTRACT] ? 'major' : 'patch';
      expect(bump(p.version, alone.after.get(p.name)!.version), p.name).toBe(expected);
    }
  });
});

describe('a contract change marked minor, through the release flow', () => {
  it('makes no dependent major (only the contract moves by a minor)', () => {
    const from = minorViaFlow.before.get(CONTRACT)!.version;
    expect(bump(from, minorViaFlow.after.get(CONTRACT)!.version)).toBe('minor');
    // (A peer dependent would be major here: changesets' onlyUpdatePeerDependentsWhenOutOfRange rule.)
    for (const p of publicDependents(minorViaFlow).filter((x) => !x.manifest.peerDependencies?.[CONTRACT])) {
      expect(bump(p.version, minorViaFlow.after.get(p.name)!.version), p.name).not.toBe('major');
    }
  });
});
