import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Runs tsc on test/run-types.test-d.ts (the typed runner.run with the Stripe adapter).
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

describe('typed runner.run', () => {
  it('the right calls compile and every @ts-expect-error is a real error', () => {
    const result = typecheck('tsconfig.typetest.json');
    expect(result.output).toBe('');
    expect(result.ok).toBe(true);
  });

  it('without the directives, each wrong call is an error of its own (name, missing intent field, param type, …)', () => {
    const dir = mkdtempSync(join(pkgDir, 'test', '.typetest-'));
    try {
      const source = readFileSync(join(pkgDir, 'test', 'run-types.test-d.ts'), 'utf8')
        .replace(/\/\/ @ts-expect-error.*\n/g, '')
        .replaceAll("'../src/index.js'", "'../../src/index.js'");
      writeFileSync(join(dir, 'bare.ts'), source);
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: '../../tsconfig.typetest.json', compilerOptions: { rootDir: '../..' }, files: ['bare.ts'] }));
      const result = typecheck(join(dir, 'tsconfig.json'));
      expect(result.ok).toBe(false);
      const errors = result.output.split('\n').filter((l) => l.includes('error TS'));
      expect(errors).toHaveLength(6);
      expect(result.output).toMatch(/"paymentIntent\.create"/);
      expect(result.output).toMatch(/orderRef/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
