import { describe, expect, it } from 'vitest';
import * as contract from './index.js';
import { ConflictError, LeaseLostError, RetrysafeError } from './index.js';

describe('typed errors', () => {
  it('isInstance recognises errors by their Symbol.for marker, across copies of the class', () => {
    const e = new ConflictError('op:1', 'intent', 'amount differs');
    expect(ConflictError.isInstance(e)).toBe(true);
    expect(RetrysafeError.isInstance(e)).toBe(true);
    expect(LeaseLostError.isInstance(e)).toBe(false);
    // an error from a duplicate install: a plain object carrying the same markers
    const foreign = Object.assign(new Error('x'), {
      [Symbol.for('retrysafe.error')]: true,
      [Symbol.for('retrysafe.error.ConflictError')]: true,
    });
    expect(ConflictError.isInstance(foreign)).toBe(true);
    expect(ConflictError.isInstance(new Error('x'))).toBe(false);
    expect(e.code).toBe('RETRYSAFE_CONFLICT');
    expect(e.name).toBe('ConflictError');
    expect(JSON.parse(JSON.stringify(e))).toEqual({
      name: 'ConflictError',
      code: 'RETRYSAFE_CONFLICT',
      message: e.message,
    });
  });

  it('every exported error class has its own marker and isInstance', () => {
    const classes = Object.entries(contract).filter(
      ([name, v]) => typeof v === 'function' && name.endsWith('Error') && name !== 'RetrysafeError',
    );
    expect(classes.length).toBeGreaterThanOrEqual(13);
    for (const [name, cls] of classes) {
      expect(Object.hasOwn(cls, 'isInstance'), name).toBe(true);
      const others = classes.filter(([n]) => n !== name);
      const fake = Object.assign(new Error('x'), { [Symbol.for(`retrysafe.error.${name}`)]: true });
      expect((cls as unknown as { isInstance(v: unknown): boolean }).isInstance(fake), name).toBe(true);
      for (const [, other] of others)
        expect((other as unknown as { isInstance(v: unknown): boolean }).isInstance(fake)).toBe(false);
    }
  });
});
