/** The worker's heartbeat: one timer keeping the leases of all its provider calls in flight (see lease.ts, withHeartbeat). */

/** A call in flight: what to renew (its operation), how often (ms) and when it last was (performance.now()). */
export interface Beat<T> {
  readonly item: T;
  readonly every: number;
  last: number;
}

/** One unref'd timer per runner renews every call in flight, at a quarter of the shortest period; idle, it stops. */
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
      if (t - b.last < b.every - period) continue;
      b.last = t;
      renew(b.item);
    }
  };
  return {
    add(beat: Beat<T>) {
      calls.add(beat);
      const p = Math.max(Math.min(25, beat.every), Math.floor(beat.every / 4)); // never slower than `every`
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
