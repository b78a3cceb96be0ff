// identityOf takes one digest of { operation, intent } for both the intent fingerprint and the derived
// id: both must be exactly what the contract's own functions give, for any intent, and anything the
// contract refuses stays refused with the contract's error.

import {
  businessOperationId,
  fingerprint,
  InvalidIdError,
  InvalidIntentError,
  type OperationSpec,
} from '@retrysafe/contract';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { identityOf } from '../src/intake/identity.js';

const spec = createSandboxAdapter({
  provider: createSandboxProvider(REPLAYING_BEHAVIOUR),
}).operations['records.create'] as OperationSpec;
const withOperation = (operation: string): OperationSpec => ({ ...spec, card: { ...spec.card, operation } });

describe("identityOf: one digest, the contract's id and fingerprint", () => {
  it('for any intent, the id and fingerprint equal businessOperationId() and fingerprint() of the contract', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), {
          minKeys: 1,
          maxKeys: 4,
        }),
        fc.constantFrom('sandbox.records.create', 'other.op', 'x'),
        (intent, operation) => {
          const s = withOperation(operation);
          const got = identityOf(s, { params: {}, intent: intent as Record<string, unknown> }, undefined);
          expect(got.id).toBe(businessOperationId(operation, intent as Record<string, unknown>));
          expect(got.intentFingerprint).toBe(fingerprint({ operation, intent }));
          // An account is another operation: another id, another fingerprint for the caller's own id.
          const theirs = identityOf(s, { params: {}, intent: intent as Record<string, unknown> }, 'acme');
          expect(theirs.id).toBe(businessOperationId(operation, intent as Record<string, unknown>, 'acme'));
          expect(theirs.id).not.toBe(got.id);
          const given = { params: {}, intent: intent as Record<string, unknown>, businessOperationId: 'mine-1' };
          expect(identityOf(s, given, 'acme').intentFingerprint).not.toBe(
            identityOf(s, given, undefined).intentFingerprint,
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('what the contract refuses stays refused: a bad operation name, an empty intent (also after a good run of that name)', () => {
    expect(() => identityOf(withOperation('not a name!'), { params: {}, intent: { a: 1 } }, undefined)).toThrow(
      InvalidIdError,
    );
    identityOf(withOperation('seen.before'), { params: {}, intent: { a: 1 } }, undefined);
    expect(() => identityOf(withOperation('seen.before'), { params: {}, intent: {} }, undefined)).toThrow(
      InvalidIntentError,
    );
    expect(() => identityOf(withOperation('never.seen'), { params: {}, intent: {} }, undefined)).toThrow(
      InvalidIntentError,
    );
  });
});
