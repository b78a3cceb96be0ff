// Issue 15 item 1 (runner part): a worker checks its own lease immediately before every provider call
// and never sends once it has run out — a paused worker (GC, suspended VM) whose operation another
// worker may have taken over does not add a late second send.

import { LeaseExpiredError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, type LogEntry } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { pauseAfter, sandboxOn } from './helpers.js';

describe('own lease checked before every provider call', () => {
  it('a pause longer than the lease between the claim and the first send: LeaseExpiredError, nothing sent, a log line', async () => {
    const { clock, provider, adapter } = sandboxOn();
    const inner = createMemoryLedger();
    const logs: LogEntry[] = [];
    const runner = createRunner({
      ledger: pauseAfter(inner, 'claim', clock, 45_000),
      clock,
      random: () => 0.5,
      logger: (e) => void logs.push(e),
      policy: { leaseMs: 30_000 },
    });
    const err = await runner.run(adapter, 'records.create', { params: { ref: 'paused-1' } }).catch((e: unknown) => e);
    expect(LeaseExpiredError.isInstance(err)).toBe(true);
    expect(err).toMatchObject({ code: 'RETRYSAFE_LEASE_EXPIRED' });
    expect(provider.calls()).toBe(0);
    expect(logs.some((l) => l.event === 'lease-expired-before-send')).toBe(true);
    // A recovery reconciles it (looks up first) to exactly one record.
    clock.advance(60_000);
    const reports = await createRunner({ ledger: inner, clock, random: () => 0.5 }).recover({ adapters: [adapter] });
    expect(reports.map((r) => r.action)).toEqual(['completed']);
    expect(provider.count()).toBe(1);
  });

  it('a recover() pass paused past its lease before the send: left open for the next pass, not handed off', async () => {
    const { clock, provider, adapter } = sandboxOn();
    const inner = createMemoryLedger();
    const paused = pauseAfter(inner, 'claim', clock, 45_000);
    const policy = { leaseMs: 30_000 };
    const first = await createRunner({ ledger: paused, clock, random: () => 0.5, policy })
      .run(adapter, 'records.create', { params: { ref: 'paused-3' } })
      .catch((e: unknown) => e);
    expect(LeaseExpiredError.isInstance(first)).toBe(true);
    clock.advance(60_000);
    // The recover pass pauses between its write of `dispatched` and the send: nothing sent, nothing to hand a person.
    const again = pauseAfter(inner, 'markDispatched', clock, 45_000);
    const reports = await createRunner({ ledger: again, clock, random: () => 0.5, policy }).recover({
      adapters: [adapter],
    });
    expect(reports).toMatchObject([{ action: 'failed', error: { code: 'RETRYSAFE_LEASE_EXPIRED' } }]);
    expect(provider.calls()).toBe(0);
    clock.advance(60_000);
    const next = await createRunner({ ledger: inner, clock, random: () => 0.5, policy }).recover({
      adapters: [adapter],
    });
    expect(next.map((r) => r.action)).toEqual(['completed']);
    expect(provider.count()).toBe(1);
  });

  it('a pause between a 429 and the re-send that outlasts the lease: no re-send', async () => {
    const { clock, provider, adapter } = sandboxOn();
    provider.failNext({ kind: 'not-applied', retryAfterMs: 1 });
    const ledger = pauseAfter(createMemoryLedger(), 'markDispatched', clock, 40_000);
    const err = await createRunner({ ledger, clock, random: () => 0.5, policy: { leaseMs: 30_000 } })
      .run(adapter, 'records.create', { params: { ref: 'paused-2' } })
      .catch((e: unknown) => e);
    expect(LeaseExpiredError.isInstance(err)).toBe(true);
    expect(provider.calls()).toBe(1);
  });

  it('a short pause inside the lease does not stop the send', async () => {
    const { clock, provider, adapter } = sandboxOn();
    const ledger = pauseAfter(createMemoryLedger(), 'claim', clock, 5_000);
    const r = await createRunner({ ledger, clock, random: () => 0.5, policy: { leaseMs: 30_000 } }).run(
      adapter,
      'records.create',
      { params: { ref: 'short' } },
    );
    expect(r.status).toBe('done');
    expect(provider.count()).toBe(1);
  });

  it('the check keeps a margin: a tenth of the lease, at most 2 s (a send that would start inside it is refused)', async () => {
    // [lease, pause after the claim, sent?]: 30 s lease → 2 s margin (not 3 s); 1 s lease → 100 ms margin.
    const cases = [
      [30_000, 27_900, true],
      [30_000, 28_100, false],
      [1_000, 850, true],
      [1_000, 950, false],
    ] as const;
    for (const [leaseMs, pause, sent] of cases) {
      const { clock, provider, adapter } = sandboxOn();
      const ledger = pauseAfter(createMemoryLedger(), 'claim', clock, pause);
      const out = await createRunner({ ledger, clock, random: () => 0.5, policy: { leaseMs } })
        .run(adapter, 'records.create', { params: { ref: `margin-${leaseMs}-${pause}` } })
        .catch((e: unknown) => e);
      expect([leaseMs, pause, provider.calls(), LeaseExpiredError.isInstance(out)]).toEqual([
        leaseMs,
        pause,
        sent ? 1 : 0,
        !sent,
      ]);
    }
  });
});
