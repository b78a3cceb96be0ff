import { FORGETFUL_BEHAVIOUR, REPLAYING_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import { type ExploreOptions, explore } from '@retrysafe/testkit/explorer';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { lookupOnly, trustsEveryNotFound } from './broken-rules.js';

// The explorer must run the runner's own rules, so a change to one of them is explored: each is broken here in turn.
const broken = vi.hoisted(() => ({ rule: '' }));
vi.mock('@retrysafe/core/internal', async (importOriginal) => {
  const core = await importOriginal<typeof import('@retrysafe/core/internal')>();
  return {
    ...core,
    // A timeout recorded as "claimed", as if nothing had been sent: a recovery sends again.
    observationPatch: (...a: Parameters<typeof core.observationPatch>) => {
      const real = core.observationPatch(...a);
      if (broken.rule === 'trusts not-found' && a[2].kind === 'not-found')
        return { maybeApplied: false, patch: { state: 'claimed' as const, lastOutcome: 'not-found' as const } };
      if (broken.rule !== 'observationPatch' || real.patch?.state !== 'unknown') return real;
      return { maybeApplied: false, patch: { ...real.patch, state: 'claimed' as const } };
    },
    // A takeover that forgets when the old owner's lease ended, bounding its last send by the claim: its late send
    // is no longer waited out.
    startState: (...a: Parameters<typeof core.startState>) => {
      const real = core.startState(...a);
      if (broken.rule !== 'startState') return real;
      const claimed = real.lastDispatchedAt === null ? null : a[2].record.updatedAt;
      return { ...real, takenOverLeaseEnd: null, windowStartedAt: null, lastDispatchedAt: claimed };
    },
    // Every send decided again after its wait, as if the key were always gone: the run never sends.
    keyGoneBeforeSend: (...a: Parameters<typeof core.keyGoneBeforeSend>) =>
      broken.rule === 'keyGoneBeforeSend' ? a[1].action === 'send' : core.keyGoneBeforeSend(...a),
    // A recovery that cannot tell, handed off as if no worker had stopped after dispatching.
    handoffReason: (...a: Parameters<typeof core.handoffReason>) =>
      broken.rule === 'handoffReason' ? a[1].reason : core.handoffReason(...a),
    // decide() and observationPatch told no takeover: the old owner's late send is not waited out.
    decisionState: (...a: Parameters<typeof core.decisionState>) => {
      const real = core.decisionState(...a);
      return broken.rule === 'decisionState' ? { ...real, lastDispatchedAt: real.firstDispatchedAt } : real;
    },
    // Only the last call read: a call that may have landed, then a refused one, is given back as never sent.
    givesBack: (...a: Parameters<typeof core.givesBack>) =>
      broken.rule === 'givesBack'
        ? a[0].action === 'handoff' && a[0].reason === 'retry-exhausted' && a[2].at(-1)?.neverSent === true
        : core.givesBack(...a),
  };
});
afterEach(() => {
  broken.rule = '';
});

const lookupCard = sandboxCreateCard({ ...FORGETFUL_BEHAVIOUR, lookup: 'get-by-key', lateApplyMs: 0 });
const crashWorld: ExploreOptions = {
  card: lookupCard,
  workers: 1,
  maxCrashes: 1,
  maxNetworkFaults: 1,
  fates: ['delivered', 'lost-after'],
};
// Leases judged on the workers' clocks, B's 20 s ahead of A's; A pauses past its lease and resumes after B took over.
const skewWorld: ExploreOptions = {
  card: lookupCard,
  workers: 2,
  clockSkewMs: 20_000,
  maxCrashes: 0,
  maxPauses: 1,
  maxNetworkFaults: 0,
};

describe("the explorer runs core's own rules", () => {
  it.each([
    ['observationPatch', crashWorld],
    ['startState', skewWorld],
    ['decisionState', skewWorld],
  ] as const)('a broken %s is explored to a second effect', (rule, world) => {
    expect(explore(world).violation).toBeNull();
    broken.rule = rule;
    const r = explore(world);
    expect(r.violation?.invariant, r.summary).toBe('at-most-once');
    if (rule === 'decisionState')
      expect(r.violation!.story).toMatch(/takes it over[\s\S]*not-found[\s\S]*A resumes\n.*A: calls the provider/);
  });

  it('a broken givesBack is explored to a give-back after a call that may have landed', () => {
    // No lookup: an unknown call, then a refused one, spends the budget (retry-exhausted); only the receipts tell.
    const world: ExploreOptions = {
      card: sandboxCreateCard({ ...REPLAYING_BEHAVIOUR, lookup: 'none' }),
      policy: { maxAttempts: 2 },
      workers: 1,
      maxCrashes: 1,
      fates: ['delivered', 'refused', 'lost-after'],
      maxNetworkFaults: 2,
    };
    expect(explore(world).violation).toBeNull();
    broken.rule = 'givesBack';
    const r = explore(world);
    expect(r.violation?.invariant, r.summary).toBe('honest-terminal');
    expect(r.violation!.story).toMatch(/answer is lost[\s\S]*connection refused[\s\S]*hand off \(retry-exhausted\)/);
  });

  it('a broken keyGoneBeforeSend is explored to a run that decides on without sending', () => {
    expect(explore(crashWorld).violation).toBeNull();
    broken.rule = 'keyGoneBeforeSend';
    const r = explore(crashWorld);
    expect(r.violation?.invariant, r.summary).toBe('stuck');
    expect(r.violation!.message).toMatch(/decided again 2 times without a call or lookup/);
  });

  it('a broken handoffReason shows in how the explored runs end', () => {
    const world = { ...crashWorld, card: sandboxCreateCard(FORGETFUL_BEHAVIOUR) };
    const crashed = 'handed-off:crash-recovery-inconclusive';
    expect(explore(world).endings).toHaveProperty(crashed);
    broken.rule = 'handoffReason';
    expect(explore(world).endings).not.toHaveProperty(crashed);
  });

  it('a not-found trusted whenever it was asked, by decide and by observationPatch: the shortest trace as a story', () => {
    broken.rule = 'trusts not-found';
    const r = explore({ card: lookupOnly, decide: trustsEveryNotFound, workers: 1, maxCrashes: 0 });
    expect(r.violation?.invariant, r.summary).toBe('at-most-once');
    const story = r.violation!.story;
    expect(story).toMatch(/held in the network/);
    expect(story).toMatch(/late apply/);
    expect(story).toMatch(/BROKEN: trusts every not-found/);
    expect(story).toMatch(/effect #2/);
    // BFS: the shortest trace. One call held, one lookup, the re-send: nothing longer is needed.
    expect(r.violation!.trace.length).toBeLessThanOrEqual(14);
  });
});
