import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Packs the built package the way a release would, installs the tarball into a fresh npm project
// outside the workspace, and uses it from ESM and from type-checked TypeScript.
const pkgDir = dirname(dirname(fileURLToPath(import.meta.url)));
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
let project: string;

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'retrysafe-contract-pack-'));
  execFileSync('pnpm', ['pack', '--pack-destination', project], { cwd: pkgDir, stdio: 'pipe' });
  const tarball = readdirSync(project).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error('pnpm pack produced no tarball');
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--offline', `./${tarball}`], {
    cwd: project,
    stdio: 'pipe',
  });
}, 120_000);

afterAll(() => rmSync(project, { recursive: true, force: true }));

describe('@retrysafe/contract as installed from its tarball', () => {
  it('ships only dist, README and package.json (no tests, no sources)', () => {
    const files = readdirSync(join(project, 'node_modules/@retrysafe/contract/dist'), { recursive: true }).map(String);
    expect(files).toContain('index.js');
    expect(files).toContain('index.d.ts');
    expect(files.filter((f) => f.includes('.test.') || (f.endsWith('.ts') && !f.endsWith('.d.ts')))).toEqual([]);
  });

  it('imports from ESM and works', () => {
    writeFileSync(
      join(project, 'use.mjs'),
      `
      import { businessOperationId, validateCard, ConflictError } from '@retrysafe/contract';
      const id = businessOperationId('shop.orders.create', { b: 2, a: 1 });
      const same = businessOperationId('shop.orders.create', { a: 1, b: 2.0 });
      console.log(JSON.stringify({ id, same: id === same, missing: validateCard({}).problems.length, err: ConflictError.isInstance(new ConflictError({ businessOperationId: 'x', field: 'intent', detail: 'y' })) }));
    `,
    );
    const out = JSON.parse(execFileSync(process.execPath, ['use.mjs'], { cwd: project, encoding: 'utf8' }));
    expect(out.id).toMatch(/^shop\.orders\.create:[0-9a-f]{32}$/);
    expect(out.same).toBe(true);
    expect(out.missing).toBe(23);
    expect(out.err).toBe(true);
  });

  it('has a small root (at most 45 values) and the authors’ subpaths, sharing one set of error classes', () => {
    writeFileSync(
      join(project, 'subpaths.mjs'),
      `
      import * as root from '@retrysafe/contract';
      import { checkBaseUrl } from '@retrysafe/contract/provider';
      import { checkFence } from '@retrysafe/contract/ledger';
      import { normalizeIntent } from '@retrysafe/contract/rules';
      import { renderCard } from '@retrysafe/contract/render';
      const thrown = (f) => { try { f(); } catch (e) { return e; } };
      console.log(JSON.stringify({
        values: Object.keys(root).length,
        render: typeof renderCard,
        provider: thrown(() => checkBaseUrl('acme', 'ftp://x')) instanceof root.AdapterConfigurationError,
        ledger: thrown(() => checkFence(null, { businessOperationId: 'a:1', fence: 1 })) instanceof root.RetrysafeError,
        rules: thrown(() => normalizeIntent({ a: 'x' }, [{ field: 'a', steps: ['nope'], source: 's' }])) instanceof root.InvalidIntentError,
      }));
    `,
    );
    const out = JSON.parse(execFileSync(process.execPath, ['subpaths.mjs'], { cwd: project, encoding: 'utf8' }));
    expect(out.values).toBeLessThanOrEqual(45);
    expect(out).toMatchObject({ render: 'function', provider: true, ledger: true, rules: true });
  });

  it('type-checks a TypeScript consumer, and its types still keep ids apart', () => {
    writeFileSync(
      join(project, 'use.ts'),
      `
      import { businessOperationId, newRunId, type BusinessOperationId, type RetrySafetyCard } from '@retrysafe/contract';
      const id: BusinessOperationId = businessOperationId('shop.orders.create', { a: 1 });
      // @ts-expect-error run ids are not business-operation ids
      const wrong: BusinessOperationId = newRunId();
      const field: keyof RetrySafetyCard = 'retention';
      export { id, wrong, field };
    `,
    );
    const out = (() => {
      try {
        return execFileSync(
          process.execPath,
          [tsc, '--strict', '--module', 'NodeNext', '--target', 'ES2022', '--noEmit', '--types', '', 'use.ts'],
          { cwd: project, encoding: 'utf8' },
        );
      } catch (e) {
        const x = e as { stdout?: string };
        return `FAILED ${x.stdout ?? ''}`;
      }
    })();
    expect(out).toBe('');
  });
});
