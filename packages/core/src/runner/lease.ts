/** Lease keeping: renewals between steps, the heartbeat during provider calls, and the check before every send. */
import { LeaseExpiredError } from '@retrysafe/contract';
import type { Lease, LogSubject, RunnerContext } from './context.js';

/** Extends the lease when less than half of it is left. */
export async function renew(ctx: RunnerContext, lease: Lease): Promise<void> {
  const now = ctx.clock.now();
  if (lease.expiresAt - now > lease.leaseMs / 2) return;
  await ctx.ledger.renewLease(lease.ref, lease.leaseMs, now);
  lease.expiresAt = now + lease.leaseMs;
}

/** Keeps the lease alive (heartbeat.ts) while a call is in flight, so a slow call is never taken over and sent again. */
export async function withHeartbeat<T>(ctx: RunnerContext, lease: Lease, fn: () => Promise<T>): Promise<T> {
  // A quarter of the lease, however short: a floor above that would let a short lease run out mid-call.
  const beat = { item: lease, every: Math.max(1, Math.floor(lease.leaseMs / 4)), last: performance.now() };
  ctx.heartbeat.add(beat);
  try {
    return await fn();
  } finally {
    ctx.heartbeat.delete(beat);
  }
}

/** Sleeps in slices shorter than the lease, renewing it (a long backoff keeps the claim); an abort ends the next slice. */
export async function wait(ctx: RunnerContext, lease: Lease, ms: number, signal?: AbortSignal): Promise<void> {
  let remaining = Math.max(0, ms);
  const slice = Math.max(1, Math.floor(lease.leaseMs / 3));
  while (remaining > 0 && !signal?.aborted) {
    const step = Math.min(remaining, slice);
    await ctx.clock.sleep(step);
    remaining -= step;
    await renew(ctx, lease);
  }
}

/**
 * Before every send: never on a lease run out (or under a tenth left), as a takeover takes the dead owner's lease end
 * as its last possible send (docs/runbook.md). A lookup only reads: a lost lease refuses the write after it.
 */
/** How long before its lease end a worker stops sending: a tenth of the lease, at most 2 s. */
export const leaseCheckMs = (leaseMs: number): number => Math.min(2000, Math.floor(leaseMs / 10));

export function checkOwnLease(ctx: RunnerContext, lease: Lease, op: LogSubject): void {
  const now = ctx.clock.now();
  if (now < lease.expiresAt - leaseCheckMs(lease.leaseMs)) return;
  ctx.log(
    'warn',
    'lease-expired-before-send',
    `own lease ends at ${new Date(lease.expiresAt).toISOString()}, now ${new Date(now).toISOString()}: not sending`,
    op,
  );
  throw new LeaseExpiredError(op.id, lease.expiresAt, now);
}
