/** The worker's heartbeat: one timer renewing the leases of its provider calls in flight and ending those past their bound (lease.ts). */

/** A call in flight: what to renew (its operation), how often (ms), when it last was and when to stop waiting for it (performance.now()). */
export interface Beat<T> {
  readonly item: T;
  readonly every: number;
  last: number;
  readonly stop?: { readonly at: number; readonly run: () => void };
}

/** One unref'd timer per runner renews or stops every call in flight, at a quarter of the shortest period or bound; idle, it stops. */
export function createHeartbeat<T>(renew: (item: T) => void) {
  const calls = new Set<Beat<T>>();
  let timer: ReturnType<typeof setInterval> | null = null;
  let period = Infinity;
  const tick = () => {
    if (calls.size === 0) {
      clearInterval(timer!);
      timer = null;
      period = Infinity;
      return;
    }
    const t = performance.now();
    for (const b of calls) {
      if (b.stop && t >= b.stop.at) {
        calls.delete(b);
        b.stop.run();
      } else if (t - b.last >= b.every - period) {
        b.last = t;
        renew(b.item);
      }
    }
  };
  return {
    add(beat: Beat<T>) {
      calls.add(beat);
      const shortest = Math.min(beat.every, beat.stop ? beat.stop.at - beat.last : Infinity);
      const p = Math.max(Math.min(25, shortest), Math.floor(shortest / 4)); // never slower than `every` or the bound
      if (timer !== null && period <= p) return;
      if (timer !== null) clearInterval(timer);
      period = p;
      timer = setInterval(tick, p);
      timer.unref?.();
    },
    delete(beat: Beat<T>) {
      calls.delete(beat);
    },
    /** Whether the timer is armed (tests). */
    get running() {
      return timer !== null;
    },
  };
}
