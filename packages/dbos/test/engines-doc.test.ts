import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

// docs/engines.md promises that its code blocks compile: the DBOS one against the real packages, the
// untested engines' ones against the declarations of the engine API written in each block. (The DBOS one
// runs in a fresh folder, as a user installs it: packages/release/test/walkthroughs.test.ts.)
const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, '..');
const doc = readFileSync(join(pkg, '..', '..', 'docs', 'engines.md'), 'utf8');
const tsc = join(dirname(createRequire(join(pkg, 'package.json')).resolve('typescript/package.json')), 'bin', 'tsc');

it('every ts code block of docs/engines.md type-checks (strict, NodeNext)', () => {
  const blocks = [...doc.matchAll(/```ts(?: nocheck)?\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(blocks.length).toBeGreaterThanOrEqual(6); // DBOS + Temporal, Restate, Inngest, Trigger.dev, Vercel Workflow
  // Inside the package, so the blocks resolve @retrysafe/* and @dbos-inc/dbos-sdk as a user's code would.
  const dir = mkdtempSync(join(pkg, '.doc-blocks-'));
  try {
    const files = blocks.map((b, i) => {
      const f = `block-${i + 1}.ts`;
      writeFileSync(join(dir, f), b);
      return f;
    });
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          types: ['node'],
          skipLibCheck: true,
          noUncheckedIndexedAccess: true,
        },
        files,
      }),
    );
    let out = '';
    try {
      // One checker: each extra checker thread checks the same declarations again.
      execFileSync(process.execPath, [tsc, '-p', dir, '--checkers', '1'], { encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      out = `${(e as { stdout?: string }).stdout ?? ''}${(e as { stderr?: string }).stderr ?? ''}`;
    }
    expect(out).toBe('');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
