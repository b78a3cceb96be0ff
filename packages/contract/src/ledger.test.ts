import { describe, expect, it } from 'vitest';
import { LedgerError } from './errors.js';
import { asProviderKey } from './ids.js';
import type { ClaimInput, OperationRecord, StatePatch } from './ledger.js';
import {
  appendStoredReceipt,
  claimTransition,
  parseStoredReceipts,
  parseStoredRecord,
  setStateTransition,
} from './ledger.js';
import type { ReceiptKind } from './receipt.js';

// A claim of a new operation; the tests override what they look at.
function claimInput(overrides: Partial<ClaimInput> = {}): ClaimInput {
  return {
    businessOperationId: 'a:1',
    provider: 'p',
    operation: 'a.b',
    intentFingerprint: 'sha256:' + 'a'.repeat(64),
    paramsFingerprint: 'sha256:' + 'b'.repeat(64),
    params: null,
    providerKey: null,
    owner: 'w',
    leaseMs: 10,
    now: 1000,
    ...overrides,
  } as ClaimInput;
}

// setStateTransition written with one spread per patch field: the reference.
function reference(record: OperationRecord, patch: StatePatch, terminal: boolean): OperationRecord {
  return {
    ...record,
    state: patch.state,
    ...(patch.lastOutcome !== undefined ? { lastOutcome: patch.lastOutcome } : {}),
    ...(patch.result !== undefined ? { result: patch.result } : {}),
    ...(patch.providerRef !== undefined ? { providerRef: patch.providerRef } : {}),
    ...(patch.statusRef !== undefined ? { statusRef: patch.statusRef } : {}),
    ...(terminal ? { leaseOwner: null, leaseExpiresAt: null } : {}),
    updatedAt: patch.now,
  };
}

describe('claimTransition', () => {
  it('a new record has the lease fields where the lease spread put them', () => {
    const input = claimInput();
    const record = claimTransition(null, input).write!;
    expect(Object.keys(record)).toEqual([
      'businessOperationId',
      'provider',
      'operation',
      'intentFingerprint',
      'paramsFingerprint',
      'params',
      'providerKey',
      'state',
      'fence',
      'leaseOwner',
      'leaseExpiresAt',
      'updatedAt',
      'createdAt',
      'firstDispatchedAt',
      'attemptCount',
      'lastOutcome',
      'result',
      'providerRef',
      'statusRef',
      'handoff',
      'resolution',
      'receiptChain',
    ]);
    expect(record).toMatchObject({
      leaseOwner: 'w',
      leaseExpiresAt: 1010,
      updatedAt: 1000,
      createdAt: 1000,
      state: 'claimed',
      fence: 1,
    });
  });

  it('a revision that keeps the provider key keeps its age; one with a key of its own starts it over', () => {
    const first = claimTransition(null, claimInput({ providerKey: asProviderKey('k1'), dispatch: true })).write!;
    const stopped: OperationRecord = { ...first, state: 'rejected', leaseOwner: null, leaseExpiresAt: null };
    const revise = (key: string) =>
      claimTransition(
        stopped,
        claimInput({
          providerKey: asProviderKey(key),
          paramsFingerprint: 'sha256:' + 'c'.repeat(64),
          now: 9000,
          supersede: { fence: 1, revision: 2 },
        }),
      ).write!;
    expect(revise('k1')).toMatchObject({ firstDispatchedAt: 1000, attemptCount: 0, fence: 2 });
    expect(revise('k2')).toMatchObject({ firstDispatchedAt: null, attemptCount: 0, fence: 2 });
  });

  it('a revision given back unsent is opened again under its own key, never the key of revision 1 (its stored result)', () => {
    const first = claimTransition(null, claimInput({ providerKey: asProviderKey('k1'), dispatch: true })).write!;
    const done: OperationRecord = { ...first, state: 'succeeded', leaseOwner: null, leaseExpiresAt: null };
    const other = { paramsFingerprint: 'sha256:' + 'c'.repeat(64), now: 9000 };
    const supersede = { fence: 1, revision: 2, done: true } as const;
    const revised = claimTransition(done, claimInput({ ...other, providerKey: asProviderKey('k2'), supersede })).write!;
    const givenBack: OperationRecord = { ...revised, state: 'not-sent', leaseOwner: null, leaseExpiresAt: null };
    const again = claimTransition(givenBack, claimInput({ ...other, providerKey: asProviderKey('k1'), now: 9500 }));
    expect(again.write).toMatchObject({ state: 'claimed', providerKey: 'k2', fence: 3 });
  });
});

describe('setStateTransition', () => {
  const input = claimInput({
    businessOperationId: 'orders.create:0123456789abcdef0123456789abcdef' as ClaimInput['businessOperationId'],
    operation: 'orders.create',
    params: { orderRef: 'o-1' },
    providerKey: 'k-1' as ClaimInput['providerKey'],
    leaseMs: 30_000,
    now: 1_780_000_000_000,
    dispatch: true,
  });
  const record = claimTransition(null, input).write!;
  const stored = {
    ...record,
    lastOutcome: 'unknown',
    result: { id: 'x' },
    providerRef: 'ref-0',
    statusRef: 'st-0',
  } as OperationRecord;

  it('gives the same record, keys in the same order, for every combination of patch fields', () => {
    const states = [
      ['succeeded', true],
      ['unknown', false],
      ['reconciling', false],
      ['rejected', true],
    ] as const;
    for (const base of [record, stored])
      for (const [state, terminal] of states)
        for (let mask = 0; mask < 16; mask++) {
          const patch: StatePatch = {
            state,
            now: input.now + 5,
            ...(mask & 1 ? { lastOutcome: 'succeeded' as const } : {}),
            ...(mask & 2 ? { result: { id: 'ord_1' } } : {}),
            ...(mask & 4 ? { providerRef: 'ord_1' } : {}),
            ...(mask & 8 ? { statusRef: null } : {}),
          };
          const next = setStateTransition(base, patch);
          const want = reference(base, patch, terminal);
          expect(next).toStrictEqual(want);
          expect(Object.keys(next)).toEqual(Object.keys(want));
        }
  });
});

describe('parseStoredRecord, parseStoredReceipts, appendStoredReceipt', () => {
  const stored = {
    ...{ businessOperationId: 'x:1', provider: 'p', operation: 'p.op', intentFingerprint: 'i', paramsFingerprint: 'f' },
    ...{ state: 'claimed', fence: 1, createdAt: 1, updatedAt: 1, attemptCount: 0, a: 1 },
  };

  it('returns the parsed value', () => {
    expect(parseStoredRecord(JSON.stringify(stored), 'Test ledger')).toEqual(stored);
    expect(parseStoredReceipts('[{"a":1}]', 'x:1', 'Test ledger')).toEqual([{ a: 1 }]);
    expect(parseStoredReceipts(null, 'x:1', 'Test ledger')).toEqual([]);
  });

  it('refuses a record or receipts stored as another kind of JSON (null would read as no operation)', () => {
    for (const text of ['null', '1', '"x"', '[]'])
      expect(() => parseStoredRecord(text, 'Test ledger')).toThrow(
        /^Test ledger: a stored record is .*, not an operation record/,
      );
    for (const text of ['null', '{}', '"[x]"'])
      expect(() => parseStoredReceipts(text, 'x:1', 'Test ledger')).toThrow(/the receipts of x:1 are not a JSON array/);
  });

  it('refuses a record without a field every reader relies on, or in a state this version does not know, naming the field and not the value', () => {
    const edits: Array<[string, object]> = [
      ['provider', { provider: undefined }],
      ['fence', { fence: '1' }],
      ['createdAt', { createdAt: null }],
      ['state', { state: 'paused-by-a-newer-version' }],
      ['handoff', { handoff: { reason: 'rejected' } }],
    ];
    for (const [field, edit] of edits) {
      const text = JSON.stringify({ ...stored, ...edit });
      expect(() => parseStoredRecord(text, 'Test ledger')).toThrow(
        new RegExp(`^Test ledger: a stored record has no valid ${field} \\(`),
      );
      expect(() => parseStoredRecord(text, 'Test ledger')).not.toThrow(/paused-by/);
    }
  });

  it('appends a receipt to the stored text, and refuses text that is not an array (it would write cut JSON)', () => {
    const receipt = { businessOperationId: 'x:1', seq: 2 } as never;
    expect(appendStoredReceipt('[{"seq":1}]', receipt, 'Test ledger')).toBe(
      '[{"seq":1},{"businessOperationId":"x:1","seq":2}]',
    );
    expect(appendStoredReceipt(null, receipt, 'Test ledger')).toBe('[{"businessOperationId":"x:1","seq":2}]');
    expect(appendStoredReceipt('null', undefined, 'Test ledger')).toBe('null');
    expect(() => appendStoredReceipt('null', receipt, 'Test ledger')).toThrow(
      /the receipts of x:1 are not a JSON array/,
    );
  });

  it('appends to an empty array (receipts emptied from outside) as to none, never writing "[,"', () => {
    const receipt = { businessOperationId: 'x:1', seq: 2 } as never;
    for (const text of ['[]', '[ ]', '[\n]']) {
      const stored = appendStoredReceipt(text, receipt, 'Test ledger')!;
      expect(parseStoredReceipts(stored, 'x:1', 'Test ledger')).toEqual([receipt]);
    }
  });

  it('turns cut or corrupt JSON into a LedgerError naming the ledger and the value', () => {
    let caught: unknown;
    try {
      parseStoredReceipts('{"a":', 'x:1', 'Test ledger at /db');
    } catch (e) {
      caught = e;
    }
    expect(LedgerError.isInstance(caught)).toBe(true);
    expect((caught as Error).message).toMatch(
      /^Test ledger at \/db: the receipts of x:1 is not valid JSON \(cut or corrupt\): /,
    );
    expect((caught as Error).cause).toBeInstanceOf(SyntaxError);
  });
});

describe('receipt kinds', () => {
  it('each is one something writes: a kind nothing writes sends a reader of receipts looking for it', () => {
    // A type check: a kind added to ReceiptKind needs its writer here. recover() writes the calls it makes.
    const writers = {
      dispatch: 'the first provider call of an operation',
      resend: 'a later provider call, by run() or recover()',
      lookup: "a look at the provider's stored status, by run() or recover()",
      poll: 'a look after an in-progress answer',
      resolve: "a person's resolution",
    } as const satisfies Record<ReceiptKind, string>;
    expect(Object.keys(writers)).toHaveLength(5);
  });
});
