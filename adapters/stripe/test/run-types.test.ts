import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { typeTests } from '../../../packages/contract/src/__fixtures__/type-test.js';

// Runs tsc on test/run-types.test-d.ts (the typed runner.run with the Stripe adapter).
const { typecheck, typecheckWithoutDirectives } = typeTests(dirname(dirname(fileURLToPath(import.meta.url))));

describe('typed runner.run', () => {
  it('the right calls compile and every @ts-expect-error is a real error', () => {
    const result = typecheck('tsconfig.typetest.json');
    expect(result.output).toBe('');
    expect(result.ok).toBe(true);
  });

  it('without the directives, each wrong call is an error of its own (name, missing intent field, param type, …)', () => {
    const result = typecheckWithoutDirectives('test/run-types.test-d.ts', 'tsconfig.typetest.json');
    expect(result.ok).toBe(false);
    expect(result.errors).toHaveLength(6);
    expect(result.output).toMatch(/"paymentIntent\.create"/);
    expect(result.output).toMatch(/orderRef/);
  });
});
