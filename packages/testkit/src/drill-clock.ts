/** The virtual time the drill's runner and sandbox share, from `start` (default: now); only `sleep` and `advance` move it. */
export function createDrillClock(start: number = Date.now()) {
  let t = start;
  return {
    now: () => t,
    async sleep(ms: number): Promise<void> {
      t += Math.max(0, Number.isFinite(ms) ? ms : 0);
      // yield to the event loop so sockets and timers make progress between polls
      await new Promise<void>((resolve) => setImmediate(resolve));
    },
    advance(ms: number): void {
      t += Math.max(0, ms);
    },
  };
}

/** mulberry32: a small seeded PRNG for the runner's jitter and the crash drill's choices. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** Resolves after `n` turns of the event loop, each reading pending I/O: what a stalled process has still to see. */
export async function loopTurns(n = 10): Promise<void> {
  for (let i = 0; i < n; i += 1) await new Promise(setImmediate);
}
