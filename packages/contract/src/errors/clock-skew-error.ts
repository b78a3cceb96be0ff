import { markerGuard, RetrysafeError } from './retrysafe-error.js';

const marker = Symbol.for('retrysafe.error.ClockSkewError');

/**
 * This worker's clock is further from the ledger's (the database's) clock than the configured bound.
 * Leases are judged on the database clock, but a worker checks its own lease on its own clock before it
 * sends; a worker far off could send after the database let another worker take the operation over.
 * So it is refused before anything is written. Fix the machine's time sync (NTP/chrony); see the runbook.
 */
export class ClockSkewError extends RetrysafeError {
  readonly [marker] = true;
  /** Worker clock minus ledger clock, in ms (positive: the worker is ahead). */
  readonly skewMs: number;
  readonly maxSkewMs: number;
  constructor(skewMs: number, maxSkewMs: number, what: string) {
    super(
      'RETRYSAFE_CLOCK_SKEW',
      `${what} refused: this worker's clock is ${Math.abs(skewMs)} ms ${skewMs > 0 ? 'ahead of' : 'behind'} the ledger's clock, more than the ${maxSkewMs} ms allowed; nothing written, nothing sent — fix the machine's time sync`,
    );
    this.skewMs = skewMs;
    this.maxSkewMs = maxSkewMs;
  }
  static override isInstance = markerGuard<ClockSkewError>(marker);
}
