/** Lease keeping: renewals between steps, a heartbeat during provider calls, and the check before every send. */
import { LeaseExpiredError } from '@retrysafe/contract';
import { iso, type Op, type RunnerContext } from './context.js';
import type { Beat } from './heartbeat.js';

/** Extends the lease when less than half of it is left (one write saved per call on the happy path). */
export async function renew(ctx: RunnerContext, op: Op): Promise<void> {
  const now = ctx.clock.now();
  if (op.leaseExpiresAt - now > op.policy.leaseMs / 2) return;
  await ctx.ledger.renewLease(op.ref, op.policy.leaseMs, now);
  op.leaseExpiresAt = now + op.policy.leaseMs;
}

/**
 * Keeps the lease alive while a provider call or lookup is in flight, so a slow call never lets a second
 * worker take the operation over and send it again: renewed every quarter of the lease at the latest
 * (up to a sixteenth of the lease earlier), on real time, by the worker's one heartbeat (heartbeat.ts).
 */
export function withHeartbeat<T>(ctx: RunnerContext, op: Op, fn: () => Promise<T>): Promise<T> {
  const beat: Beat<Op> = { item: op, every: Math.max(100, Math.floor(op.policy.leaseMs / 4)), last: performance.now() };
  const heartbeat = ctx.heartbeat;
  heartbeat.add(beat);
  const done = () => heartbeat.delete(beat);
  // Not an async function: no second promise and resumption around the call, which nearly always
  // settles before the first renewal anyway.
  let call: Promise<T>;
  try {
    // An adapter that answers with a plain value (not a promise) is still answered.
    call = Promise.resolve(fn());
  } catch (err) {
    done();
    return Promise.reject(err);
  }
  call.then(done, done);
  return call;
}

/** Sleeps in slices shorter than the lease, renewing it, so a long backoff never loses the claim. */
export async function wait(ctx: RunnerContext, op: Op, ms: number): Promise<void> {
  let remaining = Math.max(0, ms);
  const slice = Math.max(1, Math.floor(op.policy.leaseMs / 3));
  while (remaining > 0) {
    const step = Math.min(remaining, slice);
    await ctx.clock.sleep(step);
    remaining -= step;
    await renew(ctx, op);
  }
}

/**
 * Immediately before every provider call: never send once this worker's own lease has run out (or has
 * less than a tenth of it left). A takeover treats the dead owner's lease end as the latest moment it
 * could have sent; that bound holds only if no worker sends past its lease. A pause between this check
 * and the bytes leaving (GC, suspended VM) is not covered: see docs/runbook.md, "Paused workers".
 */
export function checkOwnLease(ctx: RunnerContext, op: Op): void {
  const now = ctx.clock.now();
  const margin = Math.min(2000, Math.floor(op.policy.leaseMs / 10));
  if (now < op.leaseExpiresAt - margin) return;
  ctx.log('warn', 'lease-expired-before-send', `own lease ends at ${iso(op.leaseExpiresAt)}, now ${iso(now)}: not sending`, op);
  throw new LeaseExpiredError(op.id, op.leaseExpiresAt, now);
}
