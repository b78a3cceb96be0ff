/** Lease keeping: renewals between steps, the heartbeat during provider calls, and the check before every send. */
import { LeaseExpiredError } from '@retrysafe/contract';
import { type Stop, untilStopped } from '../clock.js';
import type { Operation } from '../intake/operation.js';
import type { Lease, LogSubject, RunnerContext } from './context.js';

/** Extends the lease when less than half of it is left. */
export async function renew(ctx: RunnerContext, lease: Lease): Promise<void> {
  const now = ctx.clock.now();
  if (lease.expiresAt - now > lease.leaseMs / 2) return;
  await ctx.ledger.renewLease(lease.ref, lease.leaseMs, now);
  lease.expiresAt = now + lease.leaseMs;
}

/** `call` with the lease kept alive (heartbeat.ts), so a slow call is never taken over and sent again; `stopped(why)`
 * once the call has run the run's maxElapsed or the caller aborts (untilStopped). The heartbeat's tick ends the call. */
export function withHeartbeat<T>(
  ctx: RunnerContext,
  op: Pick<Operation, 'policy' | 'signal'>,
  lease: Lease,
  call: (signal: AbortSignal) => Promise<T>,
  stopped: (why: Stop) => T,
): Promise<T> {
  // A quarter of the lease, however short: a floor above that would let a short lease run out mid-call.
  const every = Math.max(1, Math.floor(lease.leaseMs / 4));
  return untilStopped(op.policy.maxElapsedMs, op.signal, call, stopped, (ms, run) => {
    const last = performance.now();
    const beat = { item: lease, every, last, stop: { at: last + ms, run } };
    ctx.heartbeat.add(beat);
    return () => ctx.heartbeat.delete(beat);
  });
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

/** How long before its lease end a worker stops sending: a tenth of the lease, at most 2 s. */
export const leaseCheckMs = (leaseMs: number): number => Math.min(2000, Math.floor(leaseMs / 10));

/** Before every send: never on a lease run out (or under a tenth left), as a takeover takes the dead owner's lease end
 * as its last possible send (docs/runbook.md). A lookup only reads: a lost lease refuses the write after it. */
export function checkOwnLease(ctx: RunnerContext, lease: Lease, op: LogSubject): void {
  const now = ctx.clock.now();
  if (now < lease.expiresAt - leaseCheckMs(lease.leaseMs)) return;
  const why = `own lease ends at ${new Date(lease.expiresAt).toISOString()}, now ${new Date(now).toISOString()}`;
  ctx.log('warn', 'lease-expired-before-send', `${why}: not sending`, op);
  throw new LeaseExpiredError(op.id, lease.expiresAt, now);
}
