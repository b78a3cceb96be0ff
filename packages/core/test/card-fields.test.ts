// Card fields flipped one at a time on the sandbox (a virtual clock): what the runner then does.

import { ConflictError, defineCard, type RetrySafetyCard } from '@retrysafe/contract';
import type { SandboxBehaviour } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

const OP = 'records.create';
type Card = Record<string, unknown>;

/** Sets the dot `path` of a card copy to `value`. */
function put(card: Card, path: string, value: unknown): void {
  const keys = path.split('.');
  const last = keys.pop()!;
  let at = card;
  for (const k of keys) at = at[k] as Card;
  at[last] = value;
}

/** The sandbox behind an adapter whose card is the sandbox's with `edit` applied (validated again by defineCard). */
function rig(behaviour: Partial<SandboxBehaviour>, edit: (card: Card) => void) {
  const { provider, adapter: sandbox, runner } = setup(behaviour);
  const spec = sandbox.operations[OP]!;
  const card = structuredClone(spec.card) as unknown as Card;
  edit(card);
  const adapter = {
    ...sandbox,
    operations: { [OP]: { ...spec, card: defineCard(card as unknown as RetrySafetyCard) } },
  };
  const sent: unknown[] = [];
  const doExecute: typeof sandbox.doExecute = (op, params, ctx) => {
    sent.push(params);
    return sandbox.doExecute(op, params, ctx);
  };
  return { provider, adapter: { ...adapter, doExecute }, runner, sent };
}

/** The first call's response is lost after the provider committed it, and its caller stops there (aborts). */
async function lostAndAbandoned(s: ReturnType<typeof rig>, params: Record<string, unknown>) {
  s.provider.failNext({ kind: 'unknown-after-commit' });
  const controller = new AbortController();
  const { adapter } = s;
  const stopping = {
    ...adapter,
    doExecute: async (...a: Parameters<typeof adapter.doExecute>) => {
      const outcome = await adapter.doExecute(...a);
      controller.abort(new Error('the caller gave up'));
      return outcome;
    },
  };
  await expect(s.runner.run(stopping, OP, { params, signal: controller.signal })).rejects.toThrow('gave up');
  expect(s.provider.count()).toBe(1);
}

describe('a later run of an operation that may be at the provider sends what the provider got', () => {
  const trim = [{ field: 'ref', steps: ['trim'], source: 'surrounding white space is formatting' }];
  const cases = [
    [
      'businessOperationId.normalize trims ref',
      { ref: ' r-1' },
      { ref: 'r-1' },
      (c: Card) => put(c, 'businessOperationId.normalize', trim),
    ],
    [
      'paramComparison trims note',
      { ref: 'r-1', note: 'hi ' },
      { ref: 'r-1', note: 'hi' },
      (c: Card) =>
        put(c, 'paramComparison', [{ field: 'note', compare: 'normalized', steps: ['trim'], source: 'formatting' }]),
    ],
  ] as const;
  for (const matching of ['none', 'mismatch-error'] as const)
    for (const [name, first, second, edit] of cases)
      it(`${name}, parameterMatching ${matching}: the same-key re-send carries the stored params, one record`, async () => {
        const s = rig({ parameterMatching: matching }, edit);
        await lostAndAbandoned(s, first);
        const r = await s.runner.run(s.adapter, OP, { params: second });
        expect(r.status).toBe('done');
        expect(s.provider.count()).toBe(1);
        expect(s.sent.at(-1)).toEqual(first);
      });
});

describe('lookup.consistencyDelay longer than backoff.retryAfterCap', () => {
  it("a not-found waits out the card's own settle time (not a provider's Retry-After), then proves absence and sends once", async () => {
    // Nothing folds a re-send; the lookup's answers may lag by up to 90 s (the sandbox's lag 0 is within that).
    const s = rig(
      { replays: false, retentionMs: null, parameterMatching: 'none', concurrency: 'duplicates', lateApplyMs: 0 },
      (c) => {
        put(c, 'lookup.consistencyDelay', { value: '90s', source: 'the provider indexes within 90 s' });
        put(c, 'limits', { maxAttempts: 4, maxElapsed: '10m', lookupWindow: '5m' });
      },
    );
    s.provider.failNext({ kind: 'unknown-before-commit' });
    const r = await s.runner.run(s.adapter, OP, { params: { ref: 'r-settle' } });
    expect(r.status, JSON.stringify(r.status === 'handed-off' ? r.packet.explanation : r)).toBe('done');
    expect(s.provider.count()).toBe(1);
  });
});

describe('sideEffect.rejectionMayCreate: a rejection that names nothing it created', () => {
  const first = { ref: 'r-left', note: 'x' };
  const corrected = { ref: 'r-left', note: 'y' };
  const mayCreate = (value: unknown) => (c: Card) => {
    put(c, 'sideEffect.rejectionMayCreate', { value, source: 'test' });
    if (value === 'unknown')
      put(c, 'unverified', [
        ...(c.unverified as unknown[]),
        { field: 'sideEffect.rejectionMayCreate', condition: 'whether a rejected call leaves an object', source: 'x' },
      ]);
  };

  it('unknown: no correction goes out (it could make a second object), the packet offers none and says why', async () => {
    const s = rig({}, mayCreate('unknown'));
    s.provider.failNext({ kind: 'rejected' }); // a 400 after processing that names nothing left behind
    const r = await s.runner.run(s.adapter, OP, { params: first });
    expect(r.status).toBe('handed-off');
    if (r.status !== 'handed-off') return;
    expect(r.packet.safeNextActions.map((a) => a.action)).not.toContain('resend-with');
    expect(r.packet.safeNextActions.find((a) => a.action === 'resume')?.why).toMatch(/rejectionMayCreate/);
    const again = await s.runner.run(s.adapter, OP, { params: corrected }).catch((e: unknown) => e);
    expect(ConflictError.isInstance(again) && again.needsPerson).toBe(true);
    expect((again as Error).message).toMatch(/rejectionMayCreate/);
    const resent = await s.runner
      .resolve(r.businessOperationId, { action: 'resend-with', params: corrected }, { adapters: [s.adapter] })
      .catch((e: unknown) => e);
    expect(ConflictError.isInstance(resent)).toBe(true);
    expect(s.provider.calls()).toBe(1);
  });

  it('unknown, refused before processing (authentication): the correction is a new revision', async () => {
    const s = rig({}, mayCreate('unknown'));
    const { adapter } = s;
    let calls = 0;
    const refusing = {
      ...adapter,
      doExecute: async (...a: Parameters<typeof adapter.doExecute>) =>
        calls++ === 0
          ? ({ kind: 'rejected', reason: 'authentication', message: 'bad token', status: 401 } as const)
          : adapter.doExecute(...a),
    };
    expect((await s.runner.run(refusing, OP, { params: first })).status).toBe('handed-off');
    expect((await s.runner.run(refusing, OP, { params: corrected })).status).toBe('done');
    expect(s.provider.count()).toBe(1);
  });

  // true: the adapter names what a rejection left (Stripe's payment_intent); one that names nothing left nothing.
  for (const value of [true, false])
    it(`${value}: a rejection naming nothing left nothing: the correction is a new revision, one record`, async () => {
      const s = rig({}, mayCreate(value));
      s.provider.failNext({ kind: 'rejected' });
      expect((await s.runner.run(s.adapter, OP, { params: first })).status).toBe('handed-off');
      expect((await s.runner.run(s.adapter, OP, { params: corrected })).status).toBe('done');
      expect(s.provider.count()).toBe(1);
    });
});
