// Issue 15 item 7: the API refuses what the CLI refuses. resume on a packet that marks it unsafe is an
// UnsafeResumeError (nothing sent) unless { force: true }.

import { fingerprint, InvalidStateError, LedgerError, UnsafeResumeError } from '@retrysafe/contract';
import { createRunner, parseReceiptKeys, RunnerConfigurationError, verifyOperation } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { afterCall, expectForcedResume, failingOnce, setup } from './helpers.js';

const OP = 'records.create';
const FORGETFUL = { replays: false, retentionMs: null, lookup: 'none' } as const;

/** An operation handed off after its throttled attempts ran out, its packet offering a safe resume. */
async function resumableHandoff(ref: string) {
  const env = setup(FORGETFUL, { policy: { maxAttempts: 2 } });
  env.provider.failNext({ kind: 'not-applied', retryAfterMs: 10 }, 2);
  const r = await env.runner.run(env.adapter, OP, { params: { ref } });
  expect(r.status === 'handed-off' && r.packet.safeNextActions[0]).toMatchObject({ action: 'resume', safe: true });
  return { ...env, id: r.businessOperationId };
}

describe('runner.resolve(id, { action: "resume" }) and an unsafe packet', () => {
  it('refuses with a typed error, sends nothing, and leaves the operation handed off', async () => {
    const { provider, adapter, runner, ledger } = setup(FORGETFUL);
    provider.failNext({ kind: 'unknown-after-commit' });
    const r = await runner.run(adapter, OP, { params: { ref: 'unsafe-1' } });
    expect(r.status === 'handed-off' && r.packet.safeNextActions.find((a) => a.action === 'resume')?.safe).toBe(false);
    const callsBefore = provider.calls();
    const err = await runner
      .resolve(r.businessOperationId, { action: 'resume' }, { adapters: [adapter] })
      .catch((e: unknown) => e);
    expect(UnsafeResumeError.isInstance(err)).toBe(true);
    expect(err).toMatchObject({ code: 'RETRYSAFE_UNSAFE_RESUME', businessOperationId: r.businessOperationId });
    expect(provider.calls()).toBe(callsBefore);
    expect(provider.count()).toBe(1);
    expect((await ledger.get(r.businessOperationId))?.state).toBe('handed-off');
  });

  it('{ force: true } resumes (a person checked at the provider that the effect does not exist)', async () => {
    const { provider, adapter, runner } = setup(FORGETFUL);
    provider.failNext({ kind: 'unknown-before-commit' });
    const r = await runner.run(adapter, OP, { params: { ref: 'unsafe-2' } });
    expect(r.status === 'handed-off' && r.packet.safeNextActions.find((a) => a.action === 'resume')?.safe).toBe(false);
    expect(provider.count()).toBe(0);
    await expect(
      runner.resolve(r.businessOperationId, { action: 'resume' }, { adapters: [adapter] }),
    ).rejects.toSatisfy(UnsafeResumeError.isInstance);
    await expectForcedResume({ provider, adapter, runner }, r.businessOperationId);
  });

  it('a packet that marks resume safe needs no force', async () => {
    const { provider, adapter, runner } = setup(FORGETFUL, { policy: { maxAttempts: 2 } });
    provider.failNext({ kind: 'not-applied', retryAfterMs: 10 }, 2);
    const r = await runner.run(adapter, OP, { params: { ref: 'safe-3' } });
    expect(r.status === 'handed-off' && r.packet.safeNextActions.find((a) => a.action === 'resume')?.safe).toBe(true);
    expect((await runner.resolve(r.businessOperationId, { action: 'resume' }, { adapters: [adapter] })).status).toBe(
      'done',
    );
    expect(provider.count()).toBe(1);
  });
});

describe('a packet that marked resume safe because the key folds re-sends', () => {
  it('is judged again at resume: past the key retention a resume is refused, nothing sent, one record', async () => {
    const { provider, adapter, runner, clock } = setup({ lookup: 'none' }, { policy: { maxAttempts: 1 } });
    provider.failNext({ kind: 'unknown-after-commit' });
    const r = await runner.run(adapter, OP, { params: { ref: 'aged-1' } });
    expect(r.status === 'handed-off' && r.packet.reason).toBe('retry-exhausted');
    expect(r.status === 'handed-off' && r.packet.safeNextActions.find((a) => a.action === 'resume')?.safe).toBe(true);
    clock.advance(25 * 3_600_000); // the sandbox keeps keys 24 h
    const callsBefore = provider.calls();
    const err = await runner
      .resolve(r.businessOperationId, { action: 'resume' }, { adapters: [adapter] })
      .catch((e: unknown) => e);
    expect(provider.count()).toBe(1);
    expect(provider.calls()).toBe(callsBefore);
    expect(UnsafeResumeError.isInstance(err) && err.why).toMatch(/retention/);
  });

  // { force: true } adds nothing to a resume the packet marked safe: past the retention it still looks up first.
  it.each([
    ['aged-3', { action: 'resume' }],
    ['aged-4', { action: 'resume', force: true }],
  ] as const)(
    'past the key retention, with a lookup, %s %o: the resumed run looks the operation up first and adopts it, one record',
    async (ref, decision) => {
      const s = setup({}, { policy: { maxAttempts: 1 } });
      const { provider, runner, clock, ledger } = s;
      // The provider's lookup is down during the first run: the run hands off with resume marked safe (same key).
      let lookupDown = true;
      const adapter = {
        ...s.adapter,
        doLookup: (...a: Parameters<typeof s.adapter.doLookup>) =>
          lookupDown
            ? Promise.resolve({ kind: 'cannot-tell', reason: 'lookup down' } as const)
            : s.adapter.doLookup(...a),
      };
      provider.failNext({ kind: 'unknown-after-commit' });
      const r = await runner.run(adapter, OP, { params: { ref } });
      lookupDown = false;
      expect(r.status === 'handed-off' && r.packet.safeNextActions.find((a) => a.action === 'resume')?.safe).toBe(true);
      clock.advance(25 * 3_600_000); // the sandbox keeps keys 24 h; its lookup finds records for ever
      const resumed = await runner.resolve(r.businessOperationId, decision, { adapters: [adapter] });
      expect(provider.count()).toBe(1);
      expect(resumed).toMatchObject({ status: 'done', adopted: true });
      const kinds = (await ledger.receipts(r.businessOperationId)).map((x) => x.kind);
      expect(kinds.slice(kinds.lastIndexOf('resolve'))).toEqual(['resolve', 'lookup']);
    },
  );

  it('{ force: true } past the retention without a lookup: sent as the person vouched, from the same key', async () => {
    const { provider, adapter, runner, clock } = setup({ lookup: 'none' }, { policy: { maxAttempts: 1 } });
    provider.failNext({ kind: 'unknown-before-commit' }); // nothing was made
    const r = await runner.run(adapter, OP, { params: { ref: 'aged-5' } });
    expect(r.status === 'handed-off' && r.packet.safeNextActions.find((a) => a.action === 'resume')?.safe).toBe(true);
    clock.advance(25 * 3_600_000);
    const resumed = await runner.resolve(
      r.businessOperationId,
      { action: 'resume', force: true },
      { adapters: [adapter] },
    );
    expect(resumed.status).toBe('done');
    expect(provider.count()).toBe(1);
  });

  it('inside the retention the same resume goes ahead and adopts the stored result', async () => {
    const { provider, adapter, runner, clock } = setup({ lookup: 'none' }, { policy: { maxAttempts: 1 } });
    provider.failNext({ kind: 'unknown-after-commit' });
    const r = await runner.run(adapter, OP, { params: { ref: 'aged-2' } });
    clock.advance(3_600_000);
    const resumed = await runner.resolve(r.businessOperationId, { action: 'resume' }, { adapters: [adapter] });
    expect(resumed.status).toBe('done');
    expect(provider.count()).toBe(1);
  });
});

describe('a resume allowed because the key folds re-sends, near the end of the key retention', () => {
  it("the resumed run's own retries do not go out past the retention: no second record", async () => {
    const { provider, adapter, runner, clock } = setup(
      { lookup: 'none' },
      { policy: { maxAttempts: 5, maxElapsedMs: 600_000 } },
    );
    provider.failNext({ kind: 'unknown-after-commit' }); // the provider made it; the answer was lost
    provider.failNext({ kind: 'unknown-before-commit' }, 4);
    const r = await runner.run(adapter, OP, { params: { ref: 'aged-3' } });
    const resume = r.status === 'handed-off' && r.packet.safeNextActions.find((a) => a.action === 'resume');
    expect(resume).toMatchObject({ safe: true, why: expect.stringMatching(/folds/) });
    expect(provider.count()).toBe(1);
    clock.advance(24 * 3_600_000 - 130_000); // inside the sandbox's 24 h key retention, margins included
    provider.failNext({ kind: 'not-applied', retryAfterMs: 50_000 }, 4); // throttled until the key has expired
    const out = await runner.resolve(r.businessOperationId, { action: 'resume' }, { adapters: [adapter] });
    expect(out.status).toBe('handed-off');
    expect(provider.count()).toBe(1);
  });
});

describe('two people resume one handoff at once (runbook: the CLI refuses a resume the packet marks not safe)', () => {
  for (const force of [false, true]) {
    it(`the later claim, judged on a packet the first resume replaced, sends nothing${force ? ' (forced too)' : ''}: one record`, async () => {
      const { provider, adapter, runner, ledger, clock } = setup(FORGETFUL, { policy: { maxAttempts: 2 } });
      provider.failNext({ kind: 'not-applied', retryAfterMs: 10 }, 2);
      const r = await runner.run(adapter, OP, { params: { ref: `both-${force}` } });
      expect(r.status === 'handed-off' && r.packet.safeNextActions[0]).toMatchObject({ action: 'resume', safe: true });
      const id = r.businessOperationId;
      // Bob's resume reads the operation; before it claims it, Alice's resume runs whole: the provider applies her
      // request, the answer is lost, and the operation is handed off again with resume not safe.
      let alice: Promise<unknown> | null = null;
      const bobsLedger = afterCall(ledger, 'get', async () => {
        provider.failNext({ kind: 'unknown-after-commit' });
        alice = runner.resolve(id, { action: 'resume' }, { adapters: [adapter], by: 'alice' });
        await alice;
      });
      const bob = createRunner({ ledger: bobsLedger, clock, random: () => 0.5 });
      const err = await bob
        .resolve(id, { action: 'resume', ...(force ? { force } : {}) }, { adapters: [adapter], by: 'bob' })
        .catch((e: unknown) => e);
      await expect(alice).resolves.toMatchObject({ status: 'handed-off' });
      expect(UnsafeResumeError.isInstance(err)).toBe(true);
      expect(provider.count()).toBe(1);
      const after = await ledger.get(id);
      expect(after?.state).toBe('handed-off');
      expect(after?.handoff?.safeNextActions[0]).toMatchObject({ action: 'resume', safe: false });
    });
  }
});

describe('a resume whose operation another person drove after it was read, and whose worker stopped mid-flight', () => {
  it('resumed by another, applied, its worker stopped before writing the outcome: the later resume takes it over as it is, never re-sends on the packet it read: one record', async () => {
    const { provider, adapter, ledger, clock, id } = await resumableHandoff('stopped-1');
    // Bob reads it; Alice's resume runs meanwhile: the provider applies her request, her worker stops before writing
    // the outcome, and her lease runs out.
    const bob = createRunner({
      ledger: afterCall(ledger, 'get', async () => {
        const alice = createRunner({ ledger: failingOnce(ledger, 'setState'), clock, random: () => 0.5 });
        await expect(alice.resolve(id, { action: 'resume' }, { adapters: [adapter], by: 'alice' })).rejects.toSatisfy(
          LedgerError.isInstance,
        );
        expect(provider.count()).toBe(1);
        clock.advance(600_000);
      }),
      clock,
      random: () => 0.5,
    });
    const out = await bob
      .resolve(id, { action: 'resume' }, { adapters: [adapter], by: 'bob' })
      .catch((e: unknown) => e);
    expect(provider.count()).toBe(1);
    expect(out).toMatchObject({ status: 'handed-off' });
  });

  it('a corrected request (resend-with) made meanwhile, its worker stopped before sending: the resume sends the corrected request, never the replaced one', async () => {
    const { provider, adapter, ledger, clock } = setup();
    const bad = { ref: 'stopped-2', note: 'bad' };
    const good = { ref: 'stopped-2', note: 'good' };
    // Throttled until its budget ran out: handed off, nothing applied (resume and resend-with both offered).
    provider.failNext({ kind: 'not-applied', retryAfterMs: 10 }, 2);
    const r = await createRunner({ ledger, clock, random: () => 0.5, policy: { maxAttempts: 2 } }).run(adapter, OP, {
      params: bad,
    });
    expect(r.status === 'handed-off' && r.packet.safeNextActions.map((a) => a.action)).toContain('resend-with');
    const id = r.businessOperationId;
    const bob = createRunner({
      ledger: afterCall(ledger, 'get', async () => {
        // Carol sends the corrected request; her worker stops before sending it (nothing at the provider).
        const carol = createRunner({ ledger: failingOnce(ledger, 'markDispatched'), clock, random: () => 0.5 });
        await expect(
          carol.resolve(id, { action: 'resend-with', params: good }, { adapters: [adapter], by: 'carol' }),
        ).rejects.toSatisfy(LedgerError.isInstance);
        expect(provider.calls()).toBe(2);
        clock.advance(600_000);
      }),
      clock,
      random: () => 0.5,
    });
    const out = await bob.resolve(id, { action: 'resume' }, { adapters: [adapter], by: 'bob' });
    expect(out).toMatchObject({ status: 'done' });
    expect(provider.count()).toBe(1);
    const sent = provider.records()[0]!;
    const after = await ledger.get(id);
    expect(after?.params).toEqual(good);
    expect(sent.paramsFingerprint).not.toBe(fingerprint(bad));
    expect(sent.paramsFingerprint).toBe(fingerprint(good));
    expect(sent.key).toBe(after?.providerKey);
  });
});

describe('a mark-done whose operation a person corrected (resend-with) after it was read', () => {
  it('its receipt names the provider key of the revision it closed, not the one read before', async () => {
    const { provider, adapter: plain, ledger, clock } = setup();
    const spec = plain.operations[OP]!;
    const includesErrors = { value: true, source: 'test: the provider stores rejections' };
    const card = { ...spec.card, storedResult: { ...spec.card.storedResult, includesErrors } };
    const adapter = { ...plain, operations: { ...plain.operations, [OP]: { ...spec, card } } };
    const policy = { maxAttempts: 1 };
    provider.failNext({ kind: 'not-applied', retryAfterMs: 10 });
    const r = await createRunner({ ledger, clock, random: () => 0.5, policy }).run(adapter, OP, {
      params: { ref: 'closed-1', note: 'bad' },
    });
    expect(r.status).toBe('handed-off');
    const id = r.businessOperationId;
    const bob = createRunner({
      ledger: afterCall(ledger, 'get', async () => {
        // Carol's corrected request, a revision with a key of its own, is throttled and handed off again.
        provider.failNext({ kind: 'not-applied', retryAfterMs: 10 });
        const carol = createRunner({ ledger, clock, random: () => 0.5, policy });
        const params = { ref: 'closed-1', note: 'good' };
        await expect(
          carol.resolve(id, { action: 'resend-with', params }, { adapters: [adapter], by: 'carol' }),
        ).resolves.toMatchObject({ status: 'handed-off' });
      }),
      clock,
      random: () => 0.5,
    });
    await bob.resolve(id, { action: 'mark-done', providerRef: 'rec_checked' }, { by: 'bob' });
    const after = await ledger.get(id);
    expect(after?.state).toBe('succeeded');
    const last = (await ledger.receipts(id)).at(-1)!;
    expect(last.decision.action).toBe('mark-done');
    expect(last.providerKey).toBe(after?.providerKey);
  });
});

describe('a resume without the receipt key, whose operation a person with the key resumed after it was read', () => {
  const variants = [
    { how: 'handed off again', fault: 'not-applied', stops: false, lookup: 'none' },
    { how: 'her worker stopped, nothing applied', fault: 'not-applied', stops: 'handOff', lookup: 'none' },
    {
      how: 'her worker stopped, maybe applied',
      fault: 'unknown-after-commit',
      stops: 'setState',
      lookup: 'get-by-key',
    },
  ] as const;
  for (const { how, fault, stops, lookup } of variants) {
    it(`${how}: a RunnerConfigurationError, and her keyed chain stays whole`, async () => {
      const keys = parseReceiptKeys('k2026:0123456789abcdef-secret');
      const { provider, adapter, ledger, clock } = setup({ ...FORGETFUL, lookup }, { policy: { maxAttempts: 2 } });
      const policy = { maxAttempts: 2 };
      provider.failNext({ kind: 'not-applied', retryAfterMs: 10 }, 2);
      const r = await createRunner({ ledger, clock, policy }).run(adapter, OP, { params: { ref: `keyless-${how}` } });
      expect(r.status).toBe('handed-off');
      const id = r.businessOperationId;
      let sent = 0;
      const bob = createRunner({
        ledger: afterCall(ledger, 'get', async () => {
          // Alice, with the key, resumes: handed off again, or her worker stops before handing it off.
          provider.failNext(fault === 'not-applied' ? { kind: fault, retryAfterMs: 10 } : { kind: fault }, 2);
          const aliceLedger = stops ? failingOnce(ledger, stops) : ledger;
          const alice = createRunner({ ledger: aliceLedger, clock, policy, receiptKey: keys.current });
          const resumed = alice.resolve(id, { action: 'resume' }, { adapters: [adapter], by: 'alice' });
          if (stops) await expect(resumed).rejects.toSatisfy(LedgerError.isInstance);
          else await expect(resumed).resolves.toMatchObject({ status: 'handed-off' });
          sent = provider.calls();
          clock.advance(600_000);
        }),
        clock,
        policy,
      });
      const err = await bob.resolve(id, { action: 'resume' }, { adapters: [adapter], by: 'bob' }).catch((e) => e);
      expect(await verifyOperation(ledger, id, { keys: keys.keyring, allowUnkeyed: true })).toEqual({ ok: true });
      expect(RunnerConfigurationError.isInstance(err)).toBe(true);
      expect(provider.calls()).toBe(sent);
      expect((await ledger.get(id))?.leaseOwner).toBeNull();
    });
  }
});

describe('a resume whose operation another person closed, and a prune deleted, after it was read', () => {
  it('is refused (the operation is gone), never created again as a new operation and sent: one record', async () => {
    const { provider, adapter, ledger, clock, id } = await resumableHandoff('pruned-1');
    // Bob reads it; meanwhile Alice abandons it and a prune deletes the closed row.
    const bob = createRunner({
      ledger: afterCall(ledger, 'get', async () => {
        await createRunner({ ledger, clock }).resolve(id, { action: 'abandon' }, { by: 'alice' });
        expect((await ledger.prune!({ before: clock.now() + 1 })).pruned).toBe(1);
      }),
      clock,
      random: () => 0.5,
    });
    const out = await bob
      .resolve(id, { action: 'resume' }, { adapters: [adapter], by: 'bob' })
      .catch((e: unknown) => e);
    expect(InvalidStateError.isInstance(out)).toBe(true);
    expect(provider.calls()).toBe(2);
    expect(await ledger.get(id)).toBeNull();
  });
});

describe('a forced resume decided on an earlier packet (ResolveOptions.handoffAt)', () => {
  it('is refused once the operation was handed off again since: nothing sent; on the current packet it resumes', async () => {
    const { provider, adapter, runner, ledger, clock } = setup(FORGETFUL);
    provider.failNext({ kind: 'unknown-before-commit' });
    const r = await runner.run(adapter, OP, { params: { ref: 'stale-1' } });
    if (r.status !== 'handed-off') throw new Error(r.status);
    const id = r.businessOperationId;
    // Another person forces a resume first, and it is handed off again: a new packet.
    clock.advance(1_000);
    provider.failNext({ kind: 'unknown-before-commit' });
    const again = await runner.resolve(id, { action: 'resume', force: true }, { adapters: [adapter] });
    if (again.status !== 'handed-off') throw new Error(again.status);
    expect(again.packet.createdAt).not.toBe(r.packet.createdAt);
    const calls = provider.calls();
    const err = await runner
      .resolve(id, { action: 'resume', force: true }, { adapters: [adapter], handoffAt: r.packet.createdAt })
      .catch((e: unknown) => e);
    expect(UnsafeResumeError.isInstance(err) && err.why).toMatch(/handed off again/);
    expect(provider.calls()).toBe(calls);
    expect((await ledger.get(id))?.state).toBe('handed-off');
    const done = await runner.resolve(
      id,
      { action: 'resume', force: true },
      { adapters: [adapter], handoffAt: again.packet.createdAt },
    );
    expect(done.status).toBe('done');
    expect(provider.count()).toBe(1);
  });
});

describe('runner.checkResolve: the dry run of resolve, by the same checks', () => {
  it('throws what resolve throws (unsafe packet, no adapter), and where resolve goes ahead writes and sends nothing', async () => {
    const { provider, adapter, runner } = setup(FORGETFUL);
    provider.failNext({ kind: 'unknown-after-commit' });
    const unsafe = (await runner.run(adapter, OP, { params: { ref: 'check-1' } })).businessOperationId;
    const { id, ...safe } = await resumableHandoff('check-2');
    for (const [runnerOf, op, adapters] of [
      [runner, unsafe, [adapter]],
      [safe.runner, id, []],
    ] as const) {
      const asked = [op, { action: 'resume' }, { adapters }] as const;
      const checked = await runnerOf.checkResolve(...asked).catch((e: unknown) => e);
      const resolved = await runnerOf.resolve(...asked).catch((e: unknown) => e);
      expect(checked).toBeInstanceOf(Error);
      expect(checked).toEqual(resolved);
    }
    const before = [safe.provider.calls(), await safe.ledger.get(id), await safe.ledger.receipts(id)];
    await expect(safe.runner.checkResolve(id, { action: 'resume' }, { adapters: [safe.adapter] })).resolves.toBe(
      undefined,
    );
    expect([safe.provider.calls(), await safe.ledger.get(id), await safe.ledger.receipts(id)]).toEqual(before);
  });
});
