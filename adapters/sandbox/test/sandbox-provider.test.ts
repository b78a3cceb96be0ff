import { validateCard } from '@retrysafe/contract';
import {
  createSandboxAdapter,
  createSandboxProvider,
  type SandboxBehaviour,
  sandboxCreateCard,
} from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';

const base: SandboxBehaviour = {
  replays: true,
  retentionMs: 60_000,
  parameterMatching: 'mismatch-error',
  concurrency: 'rejects-in-progress',
  lookup: 'get-by-key',
};
function make(b: Partial<SandboxBehaviour> = {}) {
  let t = 1_000_000;
  const clock = () => t;
  const provider = createSandboxProvider({
    ...base,
    ...b,
    clock,
    sleep: async (ms) => {
      t += ms;
    },
  });
  return { provider, advance: (ms: number) => (t += ms) };
}

describe('sandbox provider behaviour', () => {
  it('replays the stored result for the same key and params, counting one record', async () => {
    const { provider } = make();
    const a = await provider.execute({ key: 'k1', params: { ref: 'a' } });
    const b = await provider.execute({ key: 'k1', params: { ref: 'a' } });
    expect(a.type).toBe('created');
    expect(b.type).toBe('replayed');
    expect(provider.count()).toBe(1);
    expect(provider.calls()).toBe(2);
  });

  it('without replay, every request is a new record', async () => {
    const { provider } = make({ replays: false });
    await provider.execute({ key: 'k1', params: { ref: 'a' } });
    await provider.execute({ key: 'k1', params: { ref: 'a' } });
    expect(provider.count()).toBe(2);
  });

  it('prunes a key past retention: the same key then creates a NEW record', async () => {
    const { provider, advance } = make();
    await provider.execute({ key: 'k1', params: { ref: 'a' } });
    advance(60_000);
    expect((await provider.execute({ key: 'k1', params: { ref: 'a' } })).type).toBe('created');
    expect(provider.count()).toBe(2);
  });

  // A second request with the same key: its payload (`ref`) and the provider's behaviour decide the answer.
  it.each([
    [
      'parameter matching mismatch-error ⇒ 422-like',
      { parameterMatching: 'mismatch-error' },
      'b',
      'created',
      'mismatch',
      1,
    ],
    [
      'parameter matching replay-anyway ⇒ stored',
      { parameterMatching: 'replay-anyway' },
      'b',
      'created',
      'replayed',
      1,
    ],
    ['parameter matching none ⇒ new record', { parameterMatching: 'none' }, 'b', 'created', 'created', 2],
    [
      'while processing, rejects-in-progress ⇒ 409-like',
      { concurrency: 'rejects-in-progress', processingMs: 5000 },
      'a',
      'accepted',
      'in-progress',
      1,
    ],
    [
      'while processing, waits-then-replays ⇒ replay after waiting',
      { concurrency: 'waits-then-replays', processingMs: 5000 },
      'a',
      'accepted',
      'replayed',
      1,
    ],
    [
      'while processing, duplicates ⇒ second record',
      { concurrency: 'duplicates', processingMs: 5000 },
      'a',
      'accepted',
      'accepted',
      2,
    ],
  ] as const)('%s', async (_name, over, ref, first, second, count) => {
    const { provider } = make(over);
    expect((await provider.execute({ key: 'k', params: { ref: 'a' } })).type).toBe(first);
    expect((await provider.execute({ key: 'k', params: { ref } })).type).toBe(second);
    expect(provider.count()).toBe(count);
  });

  it('lookup sees records by key (past retention too) only after the consistency delay', async () => {
    const { provider, advance } = make({ lookupDelayMs: 2000 });
    await provider.execute({ key: 'k', params: { ref: 'a' } });
    expect(provider.lookup('k')).toEqual([]);
    advance(2000);
    expect(provider.lookup('k').map((r) => r.id)).toEqual(['rec_0001']);
    advance(120_000);
    expect(provider.lookup('k').map((r) => r.status)).toEqual(['done']);
    expect(provider.lookup('other')).toEqual([]);
    provider.failNextLookup(2, 500);
    expect(provider.answerLookup('k')).toEqual({ type: 'unavailable', retryAfterMs: 500 });
    expect(provider.answerLookup('k')).toEqual({ type: 'unavailable', retryAfterMs: 500 });
    expect(provider.answerLookup('k')).toMatchObject({ type: 'found', record: { id: 'rec_0001' } });
    expect(provider.answerLookup('other')).toEqual({ type: 'not-found' });
  });

  it('scripted faults: not-applied and rejected store nothing; unknown-after-commit stores; unknown-before-commit does not', async () => {
    const { provider } = make();
    provider.failNext({ kind: 'not-applied', retryAfterMs: 3000 });
    provider.failNext({ kind: 'rejected' });
    provider.failNext({ kind: 'unknown-before-commit' });
    provider.failNext({ kind: 'unknown-after-commit' });
    expect(await provider.execute({ key: 'k', params: {} })).toEqual({ type: 'throttled', retryAfterMs: 3000 });
    expect((await provider.execute({ key: 'k', params: {} })).type).toBe('rejected');
    expect(await provider.execute({ key: 'k', params: {} })).toEqual({
      type: 'server-error',
      status: 503,
      committed: false,
    });
    expect(provider.count()).toBe(0);
    expect(await provider.execute({ key: 'k', params: {} })).toEqual({
      type: 'server-error',
      status: 500,
      committed: true,
    });
    expect(provider.count()).toBe(1);
    expect((await provider.execute({ key: 'k', params: {} })).type).toBe('replayed');
  });

  it('rejects a nonsense behaviour with a clear error', () => {
    expect(() => createSandboxProvider({ ...base, retentionMs: -1 })).toThrow(/retentionMs/);
    expect(() => createSandboxProvider({ ...base, concurrency: 'maybe' as never })).toThrow(/concurrency/);
  });
});

describe('the card is computed from the behaviour', () => {
  it('is valid, and says what the sandbox does', () => {
    const replaying = sandboxCreateCard(base);
    expect(validateCard(replaying).ok).toBe(true);
    expect(replaying.storedResult.semantics.value).toBe('replays');
    expect(replaying.retention.minimum.value).toBe('1m');
    const plain = sandboxCreateCard({
      replays: false,
      retentionMs: 60_000,
      parameterMatching: 'none',
      concurrency: 'duplicates',
      lookup: 'none',
      lookupDelayMs: 1500,
    });
    expect(validateCard(plain).ok).toBe(true);
    expect(plain.storedResult.semantics.value).toBe('none');
    expect(plain.retention.minimum.value).toBeNull();
    expect(plain.lookup.method.value).toBe('none');
    expect(plain.lookup.consistencyDelay.value).toBe('1500ms');
    expect(plain.concurrency.value).toBe('duplicates');
    const adapter = createSandboxAdapter({ provider: createSandboxProvider(base), limits: { maxAttempts: 7 } });
    expect(adapter.operations['records.create']!.card.limits.maxAttempts).toBe(7);
    expect(Object.isFrozen(adapter.operations['records.create']!.card)).toBe(true);
  });
});

describe('a late commit takes effect at its time, not at the next request that finds it due', () => {
  it('its record is created (and its key stored) when it was due: lookups see it after the consistency delay from then', async () => {
    const { provider, advance } = make({ lookupDelayMs: 5_000 });
    const dueAt = provider.now() + 2_000;
    provider.failNext({ kind: 'late-commit', afterMs: 2_000 });
    expect((await provider.execute({ key: 'k-late', params: { ref: 'late' } })).type).toBe('server-error');
    // Nobody asks until 7.5 s on: the request was applied at 2 s, so it is visible from 7 s.
    advance(7_500);
    expect(provider.lookup('k-late').map((r) => r.createdAt)).toEqual([dueAt]);
    // Its key was stored at 2 s too: past the 60 s retention a re-send is a new record.
    advance(60_000 - 7_500 + 2_000);
    expect((await provider.execute({ key: 'k-late', params: { ref: 'late' } })).type).toBe('created');
    expect(provider.count()).toBe(2);
  });
});
