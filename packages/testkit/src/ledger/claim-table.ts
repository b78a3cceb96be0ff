import {
  type ClaimInput,
  type ClaimResult,
  type Fenced,
  type Ledger,
  LedgerError,
  type ProviderKey,
} from '@retrysafe/contract';
import { claimTransition } from '@retrysafe/contract/ledger';
import { expect } from 'vitest';
import { claimed, claimInput, id, packet, REVISED, receipt, refused, T0, type Test } from './fixtures.js';

/**
 * The claim decision table: every ledger must answer each (existing record, claim input) exactly as the contract's
 * claimTransition does on the record it stores, and store what the rule writes. A ledger that restates the rule
 * (say, in SQL) and drifts fails here, on the case where it drifts.
 */
export function claimTableCases(test: Test): void {
  type Existing = (l: Ledger, name: string) => Promise<Fenced | null>;
  /** A claimed operation, then `then` on it. */
  const claimedThen =
    (then: (l: Ledger, ref: Fenced, name: string) => Promise<unknown> = async () => {}): Existing =>
    async (l, name) => {
      const { ref } = await claimed(l, name);
      await then(l, ref, name);
      return ref;
    };
  const dispatch = (l: Ledger, ref: Fenced) => l.markDispatched(ref, T0 + 1);
  const live = claimedThen();
  const released = claimedThen((l, ref) => l.release(ref));
  const dispatched = claimedThen(dispatch);
  const settled = (state: 'succeeded' | 'rejected') =>
    claimedThen(async (l, ref) => {
      await dispatch(l, ref);
      await l.setState(ref, { state, lastOutcome: state, now: T0 + 2 });
    });
  const succeeded = settled('succeeded');
  const rejected = settled('rejected');
  /** Every call failed before its request left: given back (`not-sent`), its receipt kept. */
  const notSent = claimedThen(async (l, ref, name) => {
    await dispatch(l, ref);
    await l.appendReceipt(ref, receipt(name, 1, null));
    await l.setState(ref, { state: 'not-sent', lastOutcome: 'not-applied', now: T0 + 2 });
  });
  const handedOff = claimedThen(async (l, ref, name) => {
    await dispatch(l, ref);
    await l.handOff(ref, packet(name), T0 + 2);
  });
  /** Handed off, then abandoned by a person: its fence as stored. */
  const abandoned: Existing = async (l, name) => {
    await handedOff(l, name);
    const { fence } = await l.resolve(id(name), { action: 'abandon' }, T0 + 3);
    return { businessOperationId: id(name), fence };
  };
  /** The claim's fields, or a function of the existing record's fence. */
  type Over = Partial<ClaimInput> | ((ref: Fenced | null, name: string) => Partial<ClaimInput>);
  /** A revised claim superseding at the record's fence + `delta` (0: the fence the caller checked). */
  const supersedeAt =
    (delta: number, over: Partial<ClaimInput> = {}) =>
    (ref: Fenced | null): Partial<ClaimInput> => ({
      ...REVISED,
      now: T0 + 3,
      supersede: { fence: ref!.fence + delta, revision: 2 },
      ...over,
    });
  /** The next values of a done set (`supersede.done`): its card makes them a revision, not a conflict. */
  const doneAt =
    (delta: number, over: Partial<ClaimInput> = {}) =>
    (ref: Fenced | null) => {
      const s = supersedeAt(delta, over)(ref);
      return { ...s, supersede: { ...s.supersede!, done: true as const } };
    };
  /** A revision that keeps the key of the claim it supersedes (`claimInput`'s), and with it the key's age. */
  const keptKey = (ref: Fenced | null, name: string) =>
    supersedeAt(0, { providerKey: `rs-${name}` as ProviderKey })(ref);
  const otherIntent = { intentFingerprint: 'sha256:intent-b', now: T0 + 5000 };
  const resume = { resume: true };
  const claimTable: ReadonlyArray<readonly [string, Existing, Over, ClaimResult['kind'], boolean?]> = [
    ['new operation', async () => null, {}, 'claimed', false],
    ['new operation, dispatch', async () => null, { dispatch: true }, 'claimed', false],
    ['live lease', live, { owner: 'w2', now: T0 + 999 }, 'busy'],
    ['live lease, own owner', live, { now: T0 + 500 }, 'busy'],
    ['expired lease: takeover', live, { owner: 'w2', now: T0 + 1000 }, 'claimed', true],
    [
      'expired lease of a dispatched op, dispatch: takeover, state kept',
      dispatched,
      { owner: 'w2', dispatch: true, now: T0 + 5000 },
      'claimed',
      true,
    ],
    ['released lease: takeover before expiry', released, { owner: 'w2', now: T0 + 1 }, 'claimed', true],
    ['live lease, resume', live, { owner: 'w2', resume: true, now: T0 + 10 }, 'busy'],
    ['expired lease, supersede ignored', live, supersedeAt(0, { owner: 'w2', now: T0 + 5000 }), 'claimed', true],
    ['intent conflict', live, otherIntent, 'conflict'],
    ['operation conflict', live, { operation: 'sandbox.other', now: T0 + 5000 }, 'conflict'],
    ['intent conflict on a terminal op', succeeded, otherIntent, 'conflict'],
    ['succeeded: terminal', succeeded, { owner: 'w2', now: T0 + 5000 }, 'terminal'],
    ['succeeded, resume: terminal', succeeded, { owner: 'w2', resume: true, now: T0 + 5000 }, 'terminal'],
    ['succeeded, supersede at its fence: terminal', succeeded, supersedeAt(0, { now: T0 + 5000 }), 'terminal'],
    ['succeeded, done revision at its fence', succeeded, doneAt(0, { owner: 'w2' }), 'claimed', false],
    ['succeeded, done revision with a stale fence: terminal', succeeded, doneAt(-1), 'terminal'],
    ['live lease, done revision: busy', live, doneAt(0, { owner: 'w2', now: T0 + 10 }), 'busy'],
    ['rejected, done revision at its fence: terminal', rejected, doneAt(0), 'terminal'],
    ['handed-off, done revision at its fence: terminal', handedOff, doneAt(0), 'terminal'],
    ['abandoned, done revision at its fence', abandoned, doneAt(0, { owner: 'w2' }), 'claimed', false],
    ['abandoned, done revision with a stale fence: terminal', abandoned, doneAt(-1), 'terminal'],
    ['abandoned, supersede at its fence: terminal', abandoned, supersedeAt(0), 'terminal'],
    ['rejected: terminal', rejected, { now: T0 + 5000 }, 'terminal'],
    ['rejected, resume: terminal', rejected, { resume: true, now: T0 + 5000 }, 'terminal'],
    ['rejected, supersede with a stale fence: terminal', rejected, supersedeAt(7), 'terminal'],
    ['rejected, supersede at its fence', rejected, supersedeAt(0, { owner: 'w2' }), 'claimed', false],
    ['not-sent: opened again as new, receipts kept', notSent, { owner: 'w2', now: T0 + 3 }, 'claimed', false],
    ['not-sent, dispatch: opened again born dispatched', notSent, { dispatch: true, now: T0 + 3 }, 'claimed', false],
    ['not-sent, other params: opened again with them', notSent, { ...REVISED, now: T0 + 3 }, 'claimed', false],
    ['intent conflict on a not-sent op', notSent, otherIntent, 'conflict'],
    ['not-sent, a stored row only (recover): terminal', notSent, { existing: true, now: T0 + 3 }, 'terminal'],
    ['not-sent, resume: terminal', notSent, { resume: true, now: T0 + 3 }, 'terminal'],
    ['not-sent, supersede at its fence: terminal', notSent, supersedeAt(0), 'terminal'],
    ['handed-off: terminal', handedOff, { now: T0 + 3 }, 'terminal'],
    ['handed-off, resume', handedOff, { owner: 'person', resume: true, now: T0 + 3 }, 'claimed', true],
    ['handed-off, supersede with a stale fence: terminal', handedOff, supersedeAt(-1), 'terminal'],
    ['handed-off, supersede at its fence', handedOff, supersedeAt(0), 'claimed', false],
    ['handed-off, supersede at its fence keeping the key', handedOff, keptKey, 'claimed', false],
    ['rejected, supersede at its fence keeping the key', rejected, keptKey, 'claimed', false],
    // A caller's own id with another intent is never a revision of it: the runner answers it as a conflict.
    [
      'rejected, supersede at its fence under another intent: conflict',
      rejected,
      supersedeAt(0, otherIntent),
      'conflict',
    ],
    ['handed-off, resume and supersede at its fence: resume wins', handedOff, supersedeAt(0, resume), 'claimed', true],
    ['handed-off, resume and supersede with a stale fence: resume', handedOff, supersedeAt(1, resume), 'claimed', true],
  ];
  for (const [what, existing, over, kind, takenOver] of claimTable) {
    test(`claim decision table: ${what} → ${kind}${takenOver === undefined ? '' : takenOver ? ' (taken over)' : ' (new)'}, as the contract's claimTransition says`, async (l) => {
      const name = `table-${what.replace(/[^a-z]+/gi, '-')}`;
      const ref = await existing(l, name);
      const before = await l.get(id(name));
      const input = claimInput(name, typeof over === 'function' ? over(ref, name) : over);
      const rule = claimTransition(before, input);
      expect(rule.result.kind).toBe(kind); // the table's intent, so the rule itself cannot drift unseen
      if (rule.result.kind === 'claimed') expect(rule.result.takenOver).toBe(takenOver);
      const got = await l.claim(input);
      expect(got).toEqual(rule.result);
      // A takeover names the lease it ended (null: released), so the taker can allow for the old owner's clock.
      if (takenOver && !input.resume) expect(got).toMatchObject({ previousLeaseExpiresAt: before!.leaseExpiresAt });
      expect(await l.get(id(name))).toEqual(rule.write ?? before);
    });
  }

  test('refuses writes to an operation that does not exist', async (l) => {
    await refused(l.markDispatched({ businessOperationId: id('ghost'), fence: 1 }, T0), LedgerError);
  });
}
