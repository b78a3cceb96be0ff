import { ClockSkewError } from '@retrysafe/contract';
import type { Statements } from './statements.js';
import type { Db } from './tx.js';

/** How long a probe of the database clock is trusted. */
const PROBE_EVERY_MS = 10_000;

/** Refuses a claim whose `now` is surely more than `maxSkew` ms off the database's clock: a probe brackets that clock
 * between two local readings, so a slow round trip widens the interval instead of looking like skew. */
export function createSkewCheck(db: Db, st: Statements, maxSkew: number) {
  let probedAt = -Infinity;
  /** This process's clock minus the database's, bracketed: [lo, hi] ms. */
  let offset = { lo: 0, hi: 0 };

  async function probe(): Promise<void> {
    const t0 = Date.now();
    const { rows } = await db.query<{ db: string }>('clock', st.clockProbe, []);
    const t1 = Date.now();
    const dbNow = Number(rows[0]!.db);
    offset = { lo: t0 - dbNow, hi: t1 - dbNow };
    probedAt = t1;
  }

  return async function checkSkew(now: number, claimOf: string): Promise<void> {
    const entry = Date.now();
    if (entry - probedAt >= PROBE_EVERY_MS || entry < probedAt) await probe();
    const caller = now - entry; // the caller's clock may differ from this process's
    const lo = offset.lo + caller;
    const hi = offset.hi + caller;
    if (lo > maxSkew) throw new ClockSkewError(Math.round(lo), maxSkew, `claim of ${claimOf}`);
    if (hi < -maxSkew) throw new ClockSkewError(Math.round(hi), maxSkew, `claim of ${claimOf}`);
  };
}
