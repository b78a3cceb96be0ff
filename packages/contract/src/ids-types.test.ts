import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const pkgDir = dirname(dirname(fileURLToPath(import.meta.url)));
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');

function typecheck(project: string): { ok: boolean; output: string } {
  try {
    return { ok: true, output: execFileSync(process.execPath, [tsc, '-p', project], { cwd: pkgDir, encoding: 'utf8' }) };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    return { ok: false, output: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

describe('branded id types', () => {
  it('mixing up ids fails to compile (every @ts-expect-error is a real error)', () => {
    const result = typecheck('tsconfig.typetest.json');
    expect(result.output).toBe('');
    expect(result.ok).toBe(true);
  });

  it('the same file without the expect-error directives does not compile', () => {
    const dir = mkdtempSync(join(pkgDir, 'src', '.typetest-'));
    try {
      const source = readFileSync(join(pkgDir, 'src', 'ids.test-d.ts'), 'utf8').replace(/\/\/ @ts-expect-error.*\n/g, '').replaceAll("'./index.js'", "'../index.js'");
      writeFileSync(join(dir, 'mixed.ts'), source);
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: '../../tsconfig.typetest.json', compilerOptions: { rootDir: '..' }, files: ['mixed.ts'] }));
      const result = typecheck(join(dir, 'tsconfig.json'));
      expect(result.ok).toBe(false);
      const errors = result.output.split('\n').filter((l) => l.includes('error TS'));
      expect(errors).toHaveLength(8);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
