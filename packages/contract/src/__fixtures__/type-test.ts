// Test-only (excluded from the build, never published): the harness of the packages' type tests. A type
// test is a `.test-d.ts` file of calls that must compile and calls marked `// @ts-expect-error` that must
// not; the harness runs tsc on it as written, and on a copy without the directives, so that each
// directive is shown to stand for an error of its own (an unused directive alone would not say that).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

export interface TypecheckResult {
  readonly ok: boolean;
  /** tsc's output (stdout and stderr), '' when clean. */
  readonly output: string;
  /** The `error TS…` lines of the output. */
  readonly errors: readonly string[];
}

/** Type tests of the package at `pkgDir` (the folder of its package.json). */
export function typeTests(pkgDir: string) {
  const tsc = join(
    dirname(createRequire(join(pkgDir, 'package.json')).resolve('typescript/package.json')),
    'bin',
    'tsc',
  );
  const posix = (p: string) => p.split('\\').join('/');

  /** Runs tsc on `project` (a tsconfig path, relative to `pkgDir` or absolute). */
  function typecheck(project: string): TypecheckResult {
    let ok = true;
    let output: string;
    try {
      output = execFileSync(process.execPath, [tsc, '-p', project], { cwd: pkgDir, encoding: 'utf8' });
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string };
      ok = false;
      output = `${err.stdout ?? ''}${err.stderr ?? ''}`;
    }
    return { ok, output, errors: output.split('\n').filter((l) => l.includes('error TS')) };
  }

  /**
   * Type-checks `file` (relative to `pkgDir`) with every `// @ts-expect-error` line removed, as the only
   * file of a project extending `project`: a copy in a temporary folder beside it, relative imports
   * re-pointed at the originals. The folder is removed afterwards.
   */
  function typecheckWithoutDirectives(file: string, project: string): TypecheckResult {
    const original = resolve(pkgDir, file);
    const dir = mkdtempSync(join(dirname(original), '.typetest-'));
    try {
      const source = readFileSync(original, 'utf8')
        .replace(/\/\/ @ts-expect-error.*\n/g, '')
        .replace(/(['"])(\.\.?\/[^'"\n]+)\1/g, (_m, q: string, spec: string) => {
          const target = posix(relative(dir, resolve(dirname(original), spec)));
          return `${q}${target.startsWith('.') ? target : `./${target}`}${q}`;
        });
      writeFileSync(join(dir, 'bare.ts'), source);
      const config = {
        extends: posix(relative(dir, resolve(pkgDir, project))),
        compilerOptions: { rootDir: posix(relative(dir, pkgDir)) },
        files: ['bare.ts'],
      };
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config));
      return typecheck(join(dir, 'tsconfig.json'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  return { typecheck, typecheckWithoutDirectives };
}

/** One type test as a vitest suite: the file compiles as written, and without its directives has exactly `errors` errors. */
export interface TypeTestSuite {
  /** The tsconfig (relative to the package) whose `files` is the type test; default `tsconfig.typetest.json`. */
  readonly project?: string;
  /** The type test itself, relative to the package. */
  readonly file: string;
  readonly title: string;
  readonly compiles: string;
  readonly withoutDirectives: string;
  /** How many errors the file has without its `// @ts-expect-error` lines: one per directive. */
  readonly errors: number;
  /** Patterns the errors must mention (the names the wrong calls use). */
  readonly mentions?: readonly RegExp[];
}

/** `testUrl`: the calling test's `import.meta.url`, a file one folder below its package (`src/` or `test/`). */
export function typeTestSuite(testUrl: string, t: TypeTestSuite): void {
  const { typecheck, typecheckWithoutDirectives } = typeTests(dirname(dirname(fileURLToPath(testUrl))));
  const project = t.project ?? 'tsconfig.typetest.json';
  describe(t.title, () => {
    it(t.compiles, () => {
      const result = typecheck(project);
      expect(result.output).toBe('');
      expect(result.ok).toBe(true);
    });

    it(t.withoutDirectives, () => {
      const result = typecheckWithoutDirectives(t.file, project);
      expect(result.ok).toBe(false);
      expect(result.errors).toHaveLength(t.errors);
      for (const m of t.mentions ?? []) expect(result.output).toMatch(m);
    });
  });
}
