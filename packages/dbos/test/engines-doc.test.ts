import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { expect, it } from 'vitest';
import { databaseUrl } from './crash-harness.js';

// docs/engines.md promises that its code blocks compile: the DBOS one against the real packages, the
// untested engines' ones against the declarations of the engine API written in each block.
const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, '..');
const doc = readFileSync(join(pkg, '..', '..', 'docs', 'engines.md'), 'utf8');
const run = promisify(execFile);
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

it('the DBOS example runs as the page says (own database): it prints the record reference and ends', async () => {
  const how = /Save the block below as\s+`([\w.-]+)`[\s\S]*?run\s+`(node [^`]+)`[\s\S]*?prints[^`]*`([^`]+)`/.exec(doc);
  expect(how, 'docs/engines.md says what to save the DBOS block as, how to run it and what it prints').not.toBeNull();
  const [, file, command, printed] = how!;
  const block = /```ts nocheck\n([\s\S]*?)```/.exec(doc)![1]!;
  // It ends once it is done: the ledger's pool closed too (an open one holds Node for pg's idle timeout).
  expect(block).toMatch(/^await rs\.close\(\);$/m);
  // A database of its own: the block uses DBOS's default schemas, which other tests' runs must not share.
  const url = new URL(databaseUrl());
  const name = `engines_doc_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url.href });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const dir = mkdtempSync(join(pkg, '.doc-run-'));
  try {
    writeFileSync(join(dir, file!), block);
    const args = command!.split(/\s+/).slice(1);
    const { stdout } = await run(process.execPath, args, {
      cwd: dir,
      env: { ...process.env, DATABASE_URL: Object.assign(new URL(url.href), { pathname: `/${name}` }).href },
      timeout: 60_000,
    });
    expect(stdout.trim().split('\n').at(-1)).toBe(printed);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}, 90_000);
