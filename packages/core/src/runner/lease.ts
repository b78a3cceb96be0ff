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

/**
 * Keeps the lease alive while a provider call or lookup is in flight, so a slow call never lets a second
 * worker take the operation over and send it again: renewed every quarter of the lease at the latest,
 * on real time, by the worker's one heartbeat (heartbeat.ts).
 */
export async function withHeartbeat<T>(ctx: RunnerContext, lease: Lease, fn: () => Promise<T>): Promise<T> {
  const beat = { item: lease, every: Math.max(100, Math.floor(lease.leaseMs / 4)), last: performance.now() };
  ctx.heartbeat.add(beat);
  try {
    return await fn();
  } finally {
    ctx.heartbeat.delete(beat);
  }
}

/** Sleeps in slices shorter than the lease, renewing it, so a long backoff never loses the claim. */
export async function wait(ctx: RunnerContext, lease: Lease, ms: number): Promise<void> {
  let remaining = Math.max(0, ms);
  const slice = Math.max(1, Math.floor(lease.leaseMs / 3));
  while (remaining > 0) {
    const step = Math.min(remaining, slice);
    await ctx.clock.sleep(step);
    remaining -= step;
    await renew(ctx, lease);
  }
}

/**
 * Immediately before every provider call: never send once this worker's own lease has run out (or has
 * less than a tenth of it left). A takeover treats the dead owner's lease end as the latest moment it
 * could have sent; that bound holds only if no worker sends past its lease. A pause between this check
 * and the bytes leaving (GC, suspended VM) is not covered: see docs/runbook.md, "Paused workers".
 */
export function checkOwnLease(ctx: RunnerContext, lease: Lease, op: LogSubject): void {
  const now = ctx.clock.now();
  const margin = Math.min(2000, Math.floor(lease.leaseMs / 10));
  if (now < lease.expiresAt - margin) return;
  ctx.log(
    'warn',
    'lease-expired-before-send',
    `own lease ends at ${new Date(lease.expiresAt).toISOString()}, now ${new Date(now).toISOString()}: not sending`,
    op,
  );
  throw new LeaseExpiredError(op.id, lease.expiresAt, now);
}
