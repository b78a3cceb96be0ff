import type { AdapterV1, LookupContext, Outcome } from '@retrysafe/contract';
import { agentTools } from '@retrysafe/core/agent';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

// Core's callers of the card rules (contract card-rules.ts), issue 17 item 3.

describe('agent tools: idempotentHint is the card rule agentIdempotentHint', () => {
  const hint = (b: Partial<typeof REPLAYING_BEHAVIOUR>) =>
    agentTools([createSandboxAdapter({ provider: createSandboxProvider({ ...REPLAYING_BEHAVIOUR, ...b }) })])[0]!
      .annotations.idempotentHint;

  it('24 h retention, replays, refuses in-progress duplicates ⇒ true', () => {
    expect(hint({})).toBe(true);
  });

  it('a 90 s retention with the 1 min margin and an unknown late-apply bound (one more margin) ⇒ false (was true: 90 s > 1 min)', () => {
    expect(hint({ retentionMs: 90_000 })).toBe(false);
    // With a stated late-apply bound that leaves room, the provider folds a re-send again.
    expect(hint({ retentionMs: 90_000, lateApplyMs: 10_000 })).toBe(true);
  });

  it('a provider that processes concurrent same-key duplicates ⇒ false (was true: only key, semantics and retention were read)', () => {
    expect(hint({ concurrency: 'duplicates' })).toBe(false);
  });
});

describe('the runner fills LookupContext.lastDispatchedAt: a not-found is measured from the LAST dispatch', () => {
  it('after re-sends, the lookup context carries the latest dispatch, not the first', async () => {
    const { adapter, runner, clock } = setup();
    const sentAt: number[] = [];
    const contexts: LookupContext[] = [];
    const lost: Outcome = { kind: 'unknown', cause: 'timeout', message: 'response lost (test)' };
    const wrapped: AdapterV1 = {
      ...adapter,
      doExecute: async (op, params, ctx) => {
        sentAt.push(clock.now());
        await adapter.doExecute(op, params, ctx);
        return lost;
      },
      doLookup: async (op, ctx) => {
        contexts.push(ctx);
        return adapter.doLookup(op, ctx);
      },
    };
    const r = await runner.run(wrapped, Object.keys(adapter.operations)[0]!, { params: { ref: 'last-dispatch-1' } });
    expect(r.status).toBe('done');
    expect(sentAt.length).toBeGreaterThan(1);
    expect(contexts.length).toBeGreaterThan(0);
    const ctx = contexts[0]!;
    expect(ctx.firstDispatchedAt).toBe(sentAt[0]);
    expect(ctx.lastDispatchedAt).toBe(sentAt[sentAt.length - 1]);
    expect(ctx.lastDispatchedAt!).toBeGreaterThan(ctx.firstDispatchedAt!);
  });
});
