import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { typeTests } from './__fixtures__/type-test.js';

const { typecheck, typecheckWithoutDirectives } = typeTests(dirname(dirname(fileURLToPath(import.meta.url))));

describe('branded id types', () => {
  it('mixing up ids fails to compile (every @ts-expect-error is a real error)', () => {
    const result = typecheck('tsconfig.typetest.json');
    expect(result.output).toBe('');
    expect(result.ok).toBe(true);
  });

  it('the same file without the expect-error directives does not compile', () => {
    const result = typecheckWithoutDirectives('src/ids.test-d.ts', 'tsconfig.typetest.json');
    expect(result.ok).toBe(false);
    expect(result.errors).toHaveLength(8);
  });
});
