import { describe, expect, it } from 'vitest';
import { errorClass } from './error-class.js';
import * as contract from './index.js';
import { ConflictError, InvalidStateError, LeaseLostError, RetrysafeError } from './index.js';
import { STATES, stateWords } from './ledger-states.js';
import { outcomeProblem } from './outcome.js';

describe('typed errors', () => {
  it('isInstance recognises errors by their Symbol.for marker, across copies of the class', () => {
    const e = new ConflictError({ businessOperationId: 'op:1', field: 'intent', detail: 'amount differs' });
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

  it('a message built around a word reads as English: no "a different params", "a unknown outcome"', () => {
    expect(
      new ConflictError({ businessOperationId: 'op:1', field: 'params', detail: 'stored x', paths: ['amount'] })
        .message,
    ).toContain('already exists with different params at amount: stored x');
    expect(new ConflictError({ businessOperationId: 'op:1', field: 'intent', detail: 'stored x' }).message).toContain(
      'already exists with a different intent:',
    );
    expect(outcomeProblem({ kind: 'unknown', cause: 'timeout' })).toBe('unknown outcomes need a message');
  });

  // A state is the ledger's word ("succeeded", "handed-off"); every sentence built from one says it as words that
  // follow "is": never "the operation is succeeded", nor "is unknown" (which reads as an id nobody knows).
  it.each(STATES)('a sentence built from the state %s reads as English', (state) => {
    expect(stateWords(state)).toMatch(/^[a-z]+( [a-z]+)*$/);
    const said = new InvalidStateError('op:1', state, 'x').message;
    expect(said).toBe(`op:1 is ${stateWords(state)}: x`);
    expect(said).not.toMatch(/ is (succeeded|unknown)\b/);
  });

  it('every exported error class has its own marker and isInstance', () => {
    const classes = Object.entries(contract).filter(
      (e): e is [string, typeof contract.RetrysafeError] =>
        typeof e[1] === 'function' && e[0].endsWith('Error') && e[0] !== 'RetrysafeError',
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

describe('errorClass', () => {
  it('names the class, and two copies of one error class recognise each other (instanceof by the marker)', () => {
    // What a bundle and its subpath entries (or two installs) hold: the same declaration evaluated twice.
    const declare = () =>
      errorClass('CopiedError', 'RETRYSAFE_COPIED', (id: string) => ({ id, message: `copied ${id}` }));
    const [A, B] = [declare(), declare()];
    expect(A.name).toBe('CopiedError');
    expect(contract.LeaseExpiredError.name).toBe('LeaseExpiredError');
    const e = new A('x');
    expect(e).toBeInstanceOf(B);
    expect(e).toBeInstanceOf(RetrysafeError);
    expect(new Error('plain')).not.toBeInstanceOf(B);
    expect(new ConflictError({ businessOperationId: 'id', field: 'intent', detail: 'stored' })).not.toBeInstanceOf(B);
  });
});
