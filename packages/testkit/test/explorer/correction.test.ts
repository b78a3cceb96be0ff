import type { RetrySafetyCard } from '@retrysafe/contract';
import { supersedeCheck } from '@retrysafe/core/internal';
import { REPLAYING_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import { explore, type SupersedeCheckFn } from '@retrysafe/testkit/explorer';
import { describe, expect, it } from 'vitest';

// No lookup: a run stopped mid-call re-sends under the key (a lookup's polling would only add states).
const noLookup = { ...REPLAYING_BEHAVIOUR, lookup: 'none' } as const;
const base = sandboxCreateCard(noLookup);
/** A provider whose rejected call may leave an object (a declined create+confirm) and stores the rejection under the key. */
const card: RetrySafetyCard = {
  ...base,
  sideEffect: { ...base.sideEffect, rejectionMayCreate: { ...base.sideEffect.rejectionMayCreate, value: true } },
  storedResult: { ...base.storedResult, includesErrors: { ...base.storedResult.includesErrors, value: true } },
};
// Bounded: the provider answers every call, one crash anywhere; the correction comes at any point after the first claim.
const bounds = { workers: 1, fates: ['delivered'], maxNetworkFaults: 0, maxCrashes: 1 } as const;

/** A broken check: it does not see what a rejected call left at the provider. */
const blindToCreated: SupersedeCheckFn = (record, receipts, rule) =>
  supersedeCheck(
    record,
    receipts.map(({ created, ...r }) => r),
    rule,
  );

describe('explorer: a corrected request after a rejection', () => {
  it('supersedes a rejection that left nothing, and the correction is made once', () => {
    const r = explore({ card, ...bounds, correction: { rejection: 'plain' } });
    console.log(r.summary);
    expect(r.violation, r.violation?.story).toBeNull();
    expect(r.truncated).toBe(false);
    expect(r.endings.succeeded).toBeGreaterThan(0);
  });

  it('refuses a correction where the rejection created an object: never a second one', () => {
    const r = explore({ card, ...bounds, correction: { rejection: 'creates' } });
    console.log(r.summary);
    expect(r.violation, r.violation?.story).toBeNull();
    expect(r.truncated).toBe(false);
    expect(r.endings.succeeded).toBeUndefined();
  });

  it('catches a supersede check that lets a correction through after a rejection created an object', () => {
    const r = explore({ card, ...bounds, correction: { rejection: 'creates', supersedeCheck: blindToCreated } });
    expect(r.violation?.invariant).toBe('at-most-once');
    expect(r.violation!.message).toMatch(/second object/);
    expect(r.violation!.story).toMatch(/supersedes it as revision 2/);
  });

  it('counts the object an idempotent operation (an upsert) was refused on as the one its re-send or correction lands on', () => {
    const upsert = {
      ...card,
      sideEffect: { ...card.sideEffect, idempotentByNature: { ...card.sideEffect.idempotentByNature, value: true } },
    };
    const r = explore({ card: upsert, ...bounds, correction: { rejection: 'creates' } });
    console.log(r.summary);
    expect(r.violation, r.violation?.story).toBeNull();
    expect(r.truncated).toBe(false);
  });

  // The first request applied, its answer lost, the budget spent (handed off): a correction under its key
  // would be answered with the first request's result.
  const lost = {
    card: base,
    workers: 1,
    fates: ['delivered', 'lost-after'],
    maxCrashes: 0,
    policy: { maxAttempts: 1 },
  } as const;

  it('never adopts an applied first request as the correction done', () => {
    const r = explore({ ...lost, correction: { rejection: 'none' } });
    console.log(r.summary);
    expect(r.violation, r.violation?.story).toBeNull();
    expect(r.truncated).toBe(false);
    expect(r.endings['handed-off:retry-exhausted']).toBeGreaterThan(0);
  });

  // A lost rejection may have left an object, and the key stores no error: a re-send under it is processed afresh.
  it('never re-sends after a lost answer whose rejection may have created an object the key does not hold', () => {
    const unstored: RetrySafetyCard = {
      ...base,
      sideEffect: { ...base.sideEffect, rejectionMayCreate: { ...base.sideEffect.rejectionMayCreate, value: true } },
      storedResult: { ...base.storedResult, includesErrors: { ...base.storedResult.includesErrors, value: false } },
    };
    const r = explore({
      card: unstored,
      workers: 1,
      fates: ['delivered', 'lost-after'],
      maxNetworkFaults: 1,
      maxCrashes: 0,
      correction: { rejection: 'creates' },
    });
    console.log(r.summary);
    expect(r.violation, r.violation?.story).toBeNull();
    expect(r.truncated).toBe(false);
    expect(r.endings['handed-off:unknown-no-safe-resend']).toBeGreaterThan(0);
  });

  it('catches a supersede check that lets a correction replace a request that may have applied', () => {
    const r = explore({ ...lost, correction: { rejection: 'none', supersedeCheck: () => ({ ok: true }) } });
    expect(r.violation?.invariant).toBe('honest-terminal');
    expect(r.violation!.message).toMatch(/correction is done, but the provider never applied it/);
  });
});
