import {
  type AdapterV1,
  businessOperationId,
  ConflictError,
  type FieldNormalization,
  InvalidIntentError,
  InvalidParamsError,
  LedgerError,
  type ParamComparison,
  type RetrySafetyCard,
} from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { failingOnce, setup } from './helpers.js';

const OP = 'records.create';

/** The sandbox adapter with its card extended by a normalisation declaration (what an adapter author writes). */
function declared(
  adapter: AdapterV1,
  decl: {
    normalize?: FieldNormalization[];
    paramComparison?: ParamComparison[];
    includesErrors?: boolean;
    schema?: Record<string, unknown>;
  },
): AdapterV1 {
  const spec = adapter.operations[OP]!;
  const card: RetrySafetyCard = {
    ...spec.card,
    businessOperationId: { ...spec.card.businessOperationId, ...(decl.normalize ? { normalize: decl.normalize } : {}) },
    ...(decl.paramComparison ? { paramComparison: decl.paramComparison } : {}),
    storedResult: {
      ...spec.card.storedResult,
      ...(decl.includesErrors !== undefined
        ? { includesErrors: { value: decl.includesErrors, source: 'test: the provider stores rejections' } }
        : {}),
    },
  };
  return {
    ...adapter,
    operations: {
      ...adapter.operations,
      [OP]: { ...spec, card, ...(decl.schema ? { paramsSchema: decl.schema } : {}) },
    },
  } as AdapterV1;
}

const REF_RULE: FieldNormalization = {
  field: 'ref',
  steps: ['nfkc', 'trim', 'collapse-whitespace', 'case-fold'],
  source: 'test: the provider compares references case-insensitively, ignoring white space',
  evidence: 'https://provider.example/docs/references',
};

describe('declared intent normalisation (issue 16)', () => {
  it('a trailing space, full-width characters, inner white space or another case is the same business operation: one effect', async () => {
    const { provider, adapter, runner } = setup();
    const a = declared(adapter, { normalize: [REF_RULE] });
    const first = await runner.run(a, OP, { params: { ref: 'PO-1001' } });
    for (const ref of ['PO-1001 ', ' po-1001', 'ＰＯ－１００１', 'Po-1001\u00a0']) {
      const again = await runner.run(a, OP, { params: { ref } });
      expect(again.status === 'done' && again.adopted, ref).toBe(true);
      expect(again.businessOperationId).toBe(first.businessOperationId);
    }
    expect(provider.count()).toBe(1);
    expect(provider.calls()).toBe(1);
  });

  it('without a declaration, intent fields stay exact (a different ref is a different operation)', async () => {
    const { provider, adapter, runner } = setup();
    await runner.run(adapter, OP, { params: { ref: 'PO-1001' } });
    await runner.run(adapter, OP, { params: { ref: 'PO-1001 ' } });
    expect(provider.count()).toBe(2);
  });

  it('without a declaration, the same letters in two Unicode forms are two operations, and two requests', async () => {
    // A Linux file name, a Stripe metadata value or a Slack text keeps 'café' composed and decomposed apart:
    // one id for both would leave the second never performed.
    const { provider, adapter, runner } = setup();
    const composed = await runner.run(adapter, OP, { params: { ref: 'caf\u00e9' } });
    const decomposed = await runner.run(adapter, OP, { params: { ref: 'cafe\u0301' } });
    expect(decomposed.businessOperationId).not.toBe(composed.businessOperationId);
    expect(provider.count()).toBe(2);
    await runner.run(adapter, OP, { params: { ref: 'o-3', note: 'caf\u00e9' } });
    await expect(runner.run(adapter, OP, { params: { ref: 'o-3', note: 'cafe\u0301' } })).rejects.toSatisfy(
      (e) => ConflictError.isInstance(e) && e.paths.join() === 'note',
    );
    expect(provider.count()).toBe(3);
  });

  it("the id is the contract's digest of the intent, normalised as declared", async () => {
    const { adapter, runner } = setup();
    const clean = await runner.run(adapter, OP, { params: { ref: 'po-7' } });
    expect(clean.businessOperationId).toBe(businessOperationId('sandbox.records.create', { ref: 'po-7' }));
    const a = declared(adapter, { normalize: [REF_RULE] });
    const spaced = await runner.run(a, OP, { params: { ref: ' PO-8 ' } });
    expect(spaced.businessOperationId).toBe(businessOperationId('sandbox.records.create', { ref: 'po-8' }));
  });

  it('params compared per declaration: a re-formatted note is the same request, a changed one a conflict naming the path', async () => {
    const { provider, adapter, runner } = setup();
    const a = declared(adapter, {
      paramComparison: [
        {
          field: 'note',
          compare: 'normalized',
          steps: ['trim', 'collapse-whitespace'],
          source: 'test: free text, white space ignored',
          evidence: 'https://provider.example/docs/notes',
        },
      ],
    });
    await runner.run(a, OP, { params: { ref: 'o-1', note: 'leave at  door', amount: 5 } });
    const same = await runner.run(a, OP, { params: { ref: 'o-1', note: ' leave at door ', amount: 5 } });
    expect(same.status === 'done' && same.adopted).toBe(true);
    const err = await runner
      .run(a, OP, { params: { ref: 'o-1', note: 'leave with neighbour', amount: 6 } })
      .catch((e) => e);
    expect(ConflictError.isInstance(err)).toBe(true);
    expect((err as ConflictError).paths).toEqual(['amount', 'note']);
    // values never appear, and the message says "nothing was sent" once
    expect((err as Error).message).not.toMatch(/neighbour|door|\b6\b/);
    expect((err as Error).message.match(/nothing was sent/gi)?.length).toBe(1);
    // params not listed are compared exactly (default)
    const exact = declared(adapter, {});
    await runner.run(exact, OP, { params: { ref: 'o-2', note: 'a' } });
    await expect(runner.run(exact, OP, { params: { ref: 'o-2', note: 'a ' } })).rejects.toSatisfy(
      (e) => ConflictError.isInstance(e) && e.paths.join() === 'note',
    );
    expect(provider.count()).toBe(2);
  });
});

describe('an exact comparison beneath a normalised one', () => {
  it('is honoured: a changed reference inside a normalised object is a conflict, a re-formatted note is not', async () => {
    const { provider, adapter, runner } = setup();
    const a = declared(adapter, {
      normalize: [REF_RULE],
      paramComparison: [
        { field: 'meta', compare: 'normalized', steps: ['trim'], source: 'test: free text, white space ignored' },
        { field: 'meta.code', compare: 'exact', source: 'test: the provider keeps codes apart' },
      ],
    });
    await runner.run(a, OP, { params: { ref: 'o-1', meta: { note: 'door', code: 'A' } } });
    const same = await runner.run(a, OP, { params: { ref: ' O-1 ', meta: { note: ' door ', code: 'A' } } });
    expect(same.status === 'done' && same.adopted).toBe(true);
    await expect(runner.run(a, OP, { params: { ref: 'o-1', meta: { note: 'door', code: 'A ' } } })).rejects.toSatisfy(
      (e) => ConflictError.isInstance(e) && e.paths.join() === 'meta.code',
    );
    expect(provider.count()).toBe(1);
  });
});

describe("normalisation is for identity and comparison only: the params sent are the caller's", () => {
  it('params (or a part of them) without a prototype are neither changed in place nor sent normalised', async () => {
    const { provider, adapter, runner } = setup();
    const seen: unknown[] = [];
    const spy = {
      ...adapter,
      doExecute: (op: string, params: unknown, ctx: never) => {
        seen.push(JSON.parse(JSON.stringify(params)));
        return adapter.doExecute(op, params, ctx);
      },
    } as AdapterV1;
    const noteRule: ParamComparison = {
      field: 'meta.note',
      compare: 'normalized',
      steps: ['trim', 'case-fold'],
      source: 'test: free text, case and white space ignored',
      evidence: 'https://provider.example/docs/notes',
    };
    const a = declared(spy, { normalize: [REF_RULE], paramComparison: [noteRule] });
    const params = Object.assign(Object.create(null), {
      ref: ' PO-9 ',
      meta: Object.assign(Object.create(null), { note: ' Leave At Door ' }),
    });
    const r = await runner.run(a, OP, { params });
    expect(r.status).toBe('done');
    expect(seen).toEqual([{ ref: ' PO-9 ', meta: { note: ' Leave At Door ' } }]);
    expect({ ...params, meta: { ...params.meta } }).toEqual({ ref: ' PO-9 ', meta: { note: ' Leave At Door ' } });
    expect(r.businessOperationId).toBe(businessOperationId('sandbox.records.create', { ref: 'po-9' }));
    // and the declared steps still apply inside such objects: a re-formatted note is the same request
    const again = await runner.run(a, OP, { params: { ref: 'PO-9', meta: { note: 'leave at door' } } });
    expect(again.status === 'done' && again.adopted).toBe(true);
    expect(provider.count()).toBe(1);
  });
});

describe('a caller intent that is not a plain object', () => {
  it('is refused with or without a declared normalisation, never turned into an object of its characters or items', async () => {
    const { provider, adapter, runner, ledger } = setup();
    const a = declared(adapter, { normalize: [REF_RULE] });
    for (const card of [adapter, a])
      for (const intent of [['PO-1'], 'PO-1'])
        await expect(
          runner.run(card, OP, { params: { ref: 'PO-1' }, intent: intent as unknown as Record<string, unknown> }),
          JSON.stringify(intent),
        ).rejects.toSatisfy(InvalidIntentError.isInstance);
    expect(provider.calls()).toBe(0);
    expect(await ledger.list()).toEqual([]);
  });
});

describe('params validated against the schema before the claim (issue 16)', () => {
  it('InvalidParamsError names each field and why; no row, no provider call', async () => {
    const { provider, adapter, ledger, runner } = setup();
    const a = declared(adapter, {
      schema: {
        type: 'object',
        additionalProperties: false,
        required: ['ref', 'quantity'],
        properties: {
          ref: { type: 'string', minLength: 1 },
          quantity: { type: 'integer', minimum: 1 },
          note: { type: 'string' },
        },
      },
    });
    const err = await runner.run(a, OP, { params: { ref: 'o-9', quantity: '3', colour: 'red' } }).catch((e) => e);
    expect(InvalidParamsError.isInstance(err)).toBe(true);
    const fields = (err as InvalidParamsError).fields;
    expect(fields).toContainEqual({ path: 'quantity', message: 'must be integer' });
    expect(fields).toContainEqual({ path: 'colour', message: 'is not a field of this operation' });
    expect((err as Error).message).not.toMatch(/red/);
    expect(await ledger.list()).toEqual([]);
    expect(provider.calls()).toBe(0);
    // the corrected call is just a call
    const ok = await runner.run(a, OP, { params: { ref: 'o-9', quantity: 3 } });
    expect(ok.status).toBe('done');
    expect(provider.count()).toBe(1);
  });
});

describe('supersede: a corrected request after a rejection nothing applied (issue 16)', () => {
  it('a new revision with its own provider key where the provider stores rejections, recorded with receipts', async () => {
    const { provider, adapter, ledger, runner } = setup();
    const a = declared(adapter, { includesErrors: true });
    provider.failNext({ kind: 'rejected', message: 'note too long' });
    const first = await runner.run(a, OP, { params: { ref: 'o-3', note: 'x'.repeat(20) } });
    expect(first.status).toBe('handed-off');
    // the packet offers the correction as a safe next action
    expect(
      first.status === 'handed-off' && first.packet.safeNextActions.find((x) => x.action === 'resend-with')?.safe,
    ).toBe(true);
    const fixed = await runner.run(a, OP, { params: { ref: 'o-3', note: 'short' } });
    expect(fixed.status === 'done' && !fixed.adopted).toBe(true);
    expect(fixed.businessOperationId).toBe(first.businessOperationId);
    expect(provider.count()).toBe(1);
    const receipts = await ledger.receipts(first.businessOperationId);
    const sup = receipts.find((r) => r.decision.action === 'supersede')!;
    expect(sup.decision.reason).toMatch(/revision 2 .* changed: note; new provider key/);
    const dispatches = receipts.filter((r) => r.kind === 'dispatch');
    expect(dispatches).toHaveLength(2);
    expect(dispatches[0]!.providerKey).not.toBe(dispatches[1]!.providerKey);
    const rec = await ledger.get(first.businessOperationId);
    expect(rec?.resolution).toMatchObject({ action: 'supersede', revision: 2 });
    expect(rec?.attemptCount).toBe(1);
    // the corrected request is now the operation: the old params are a conflict, the new ones adopt
    await expect(runner.run(a, OP, { params: { ref: 'o-3', note: 'x'.repeat(20) } })).rejects.toSatisfy(
      ConflictError.isInstance,
    );
    const again = await runner.run(a, OP, { params: { ref: 'o-3', note: 'short' } });
    expect(again.status === 'done' && again.adopted).toBe(true);
  });

  it("resend-with reads the intent as run() does: an operation run with the caller's own intent takes a person's corrected params", async () => {
    const { provider, adapter, runner } = setup();
    const a = declared(adapter, { includesErrors: true });
    const rejectedFirst = async (ref: string) => {
      provider.failNext({ kind: 'rejected', message: 'note too long' });
      const r = await runner.run(a, OP, { params: { ref, note: 'x'.repeat(20) }, intent: { order: ref } });
      expect(r.status).toBe('handed-off');
      return r.businessOperationId;
    };
    // run() with the same intent takes the corrected params as a new revision ...
    await rejectedFirst('o-21');
    const byRun = await runner.run(a, OP, { params: { ref: 'o-21', note: 'short' }, intent: { order: 'o-21' } });
    expect(byRun.status).toBe('done');
    // ... and so does a person's resend-with of the same correction
    const id = await rejectedFirst('o-22');
    const fixed = { action: 'resend-with', params: { ref: 'o-22', note: 'short' } } as const;
    const byPerson = await runner.resolve(id, fixed, { adapters: [a] });
    expect(byPerson.status).toBe('done');
    expect(provider.count()).toBe(2);
    // params naming another intent than the stored ones are still refused
    const other = await rejectedFirst('o-23');
    const moved = { action: 'resend-with', params: { ref: 'o-99', note: 'short' } } as const;
    await expect(runner.resolve(other, moved, { adapters: [a] })).rejects.toSatisfy(ConflictError.isInstance);
    expect(provider.count()).toBe(2);
  });

  it('the same corrected call made twice at once: one revision, one effect, and both callers get its result', async () => {
    const { provider, adapter, runner } = setup();
    provider.failNext({ kind: 'rejected' });
    const first = await runner.run(adapter, OP, { params: { ref: 'o-11', note: 'bad' } });
    expect(first.status).toBe('handed-off');
    const both = await Promise.allSettled([
      runner.run(adapter, OP, { params: { ref: 'o-11', note: 'good' } }),
      runner.run(adapter, OP, { params: { ref: 'o-11', note: 'good' } }),
    ]);
    expect(both.map((r) => (r.status === 'fulfilled' ? r.value.status : String(r.reason)))).toEqual(['done', 'done']);
    expect(provider.count()).toBe(1);
  });

  it('keeps the key when the card says the provider stores no errors', async () => {
    const { provider, adapter, ledger, runner } = setup();
    provider.failNext({ kind: 'rejected' });
    const first = await runner.run(adapter, OP, { params: { ref: 'o-4', note: 'a' } });
    await runner.run(adapter, OP, { params: { ref: 'o-4', note: 'b' } });
    const keys = (await ledger.receipts(first.businessOperationId))
      .filter((r) => r.kind === 'dispatch')
      .map((r) => r.providerKey);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBe(keys[1]);
  });

  it('never while an attempt may have been applied: a conflict naming the path, no second effect', async () => {
    const { provider, adapter, runner } = setup({ lookup: 'none', replays: false, retentionMs: null });
    provider.failNext({ kind: 'unknown-after-commit' });
    const first = await runner.run(adapter, OP, { params: { ref: 'o-5', note: 'a' } });
    expect(first.status).toBe('handed-off');
    expect(first.status === 'handed-off' && first.packet.safeNextActions.map((x) => x.action)).toEqual([
      'resume',
      'mark-done',
      'abandon',
    ]);
    const err = await runner.run(adapter, OP, { params: { ref: 'o-5', note: 'b' } }).catch((e) => e);
    expect(ConflictError.isInstance(err) && err.paths).toEqual(['note']);
    expect((err as Error).message).toMatch(/cannot be superseded/);
    expect(provider.count()).toBe(1);
    await expect(
      runner.resolve(
        first.businessOperationId,
        { action: 'resend-with', params: { ref: 'o-5', note: 'b' } },
        { adapters: [adapter] },
      ),
    ).rejects.toSatisfy(ConflictError.isInstance);
    expect(provider.count()).toBe(1);
  });

  it('never after a provider call that left no outcome on record (its worker stopped after sending): resend-with is not offered, the corrected call is a conflict, one effect', async () => {
    const { provider, adapter: plain, ledger, clock } = setup({ lookup: 'none' });
    const adapter = declared(plain, { includesErrors: true });
    // The provider applies the first request; the write of its outcome fails, as a crash there would leave it.
    const dying = failingOnce(ledger, 'setState');
    const params = { ref: 'o-12', note: 'a' };
    await expect(
      createRunner({ ledger: dying, clock, random: () => 0.5 }).run(adapter, OP, { params }),
    ).rejects.toSatisfy(LedgerError.isInstance);
    expect(provider.count()).toBe(1);
    // The next run re-sends with the same key and is throttled until its budget is spent: retry-exhausted.
    clock.advance(60_000);
    provider.failNext({ kind: 'not-applied', retryAfterMs: 10 }, 2);
    const runner = createRunner({ ledger, clock, random: () => 0.5, policy: { maxAttempts: 2 } });
    const r = await runner.run(adapter, OP, { params });
    expect(r.status === 'handed-off' && r.packet.reason).toBe('retry-exhausted');
    expect(r.status === 'handed-off' && r.packet.safeNextActions.map((x) => x.action)).not.toContain('resend-with');
    const err = await runner.run(adapter, OP, { params: { ref: 'o-12', note: 'b' } }).catch((e: unknown) => e);
    expect(ConflictError.isInstance(err) && err.message).toMatch(/cannot be superseded/);
    expect(provider.count()).toBe(1);
  });

  it('never after a conflict rejection: the key is already stored with other params (an effect may exist under it)', async () => {
    const { provider, adapter, runner } = setup({ parameterMatching: 'mismatch-error' });
    // another worker, with a ledger of its own, already performed this intent under the same key
    const other = createRunner({ ledger: createMemoryLedger(), clock: createVirtualClock(), random: () => 0.5 });
    await other.run(adapter, OP, { params: { ref: 'o-10', note: 'first' } });
    const mine = await runner.run(adapter, OP, { params: { ref: 'o-10', note: 'second' } });
    expect(mine.status).toBe('handed-off');
    const err = await runner.run(adapter, OP, { params: { ref: 'o-10', note: 'third' } }).catch((e) => e);
    expect(ConflictError.isInstance(err)).toBe(true);
    expect((err as Error).message).toMatch(/conflict with what the provider already holds/);
    expect(provider.count()).toBe(1);
  });

  it('an operator resends a corrected request with resolve(resend-with); another intent is refused', async () => {
    const { provider, adapter, runner } = setup();
    provider.failNext({ kind: 'rejected' });
    const first = await runner.run(adapter, OP, { params: { ref: 'o-6', note: 'bad' } });
    await expect(
      runner.resolve(
        first.businessOperationId,
        { action: 'resend-with', params: { ref: 'o-7', note: 'good' } },
        { adapters: [adapter] },
      ),
    ).rejects.toSatisfy((e) => ConflictError.isInstance(e) && e.field === 'intent');
    await expect(
      runner.resolve(first.businessOperationId, { action: 'resend-with', params: { ref: 5 } }, { adapters: [adapter] }),
    ).rejects.toSatisfy(InvalidParamsError.isInstance);
    const r = await runner.resolve(
      first.businessOperationId,
      { action: 'resend-with', params: { ref: 'o-6', note: 'good' } },
      { adapters: [adapter] },
    );
    expect(r.status).toBe('done');
    expect(provider.count()).toBe(1);
  });

  it('resend-with naming another intent where the stored request may have applied (handed off unknown, or done): the conflict says so, never "run them as a new operation" (a second record)', async () => {
    const { provider, adapter, runner } = setup({ replays: false, lookup: 'none' });
    provider.failNext({ kind: 'unknown-after-commit' });
    const lost = await runner.run(adapter, OP, { params: { ref: 'o-31', note: 'typo' } });
    expect(lost.status).toBe('handed-off');
    const done = await runner.run(adapter, OP, { params: { ref: 'o-32', note: 'typo' } });
    for (const id of [lost.businessOperationId, done.businessOperationId]) {
      const moved = { action: 'resend-with', params: { ref: 'o-39', note: 'fixed' } } as const;
      const err = await runner.resolve(id, moved, { adapters: [adapter] }).catch((e: unknown) => e);
      expect(ConflictError.isInstance(err) && err.field === 'intent' && err.storedMayApply).toBe(true);
      expect((err as Error).message).not.toMatch(/run them as a new operation instead/);
    }
    expect(provider.count()).toBe(2);
  });
});

describe('the provider’s field errors reach the packet and the agent, redacted (issue 16)', () => {
  it('a rejection naming fields: packet.lastKnown.fields and the needs-human answer carry them, sensitive values blanked', async () => {
    const { toAgentResult } = await import('@retrysafe/core/agent');
    const { provider, adapter, runner } = setup({}, {}, { sensitiveFields: ['email'] });
    provider.failNext({
      kind: 'rejected',
      fields: [
        { path: 'email', message: 'jane@example.test is not deliverable' },
        { path: 'amount', message: 'must be positive' },
      ],
    });
    const r = await runner.run(adapter, OP, { params: { ref: 'o-8', email: 'jane@example.test', amount: -1 } });
    expect(r.status).toBe('handed-off');
    if (r.status !== 'handed-off') return;
    expect(r.packet.lastKnown.fields).toEqual([
      { path: 'email', message: '[redacted] is not deliverable' },
      { path: 'amount', message: 'must be positive' },
    ]);
    const answer = toAgentResult(r);
    expect(answer.status).toBe('needs-human');
    expect(JSON.stringify(answer)).not.toContain('jane@example.test');
    expect(answer.message).toMatch(/amount \(must be positive\)/);
    expect(answer.businessOperationId).toBe(r.businessOperationId);
    expect(provider.count()).toBe(0);
  });
});
