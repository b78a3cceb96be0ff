/** A duration written for people and parsed exactly: `500ms`, `30s`, `5m`, `24h`, `7d`. */
export type Duration = `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** The one form of a duration, for every schema that accepts one (cards, the fence file). */
export const DURATION_PATTERN = '^\\d+(\\.\\d+)?(ms|s|m|h|d)$';
const PATTERN = new RegExp(DURATION_PATTERN);

export function isDuration(value: unknown): value is Duration {
  return typeof value === 'string' && PATTERN.test(value);
}

export function durationMs(value: Duration): number {
  const m = PATTERN.exec(value);
  if (!m) throw new RangeError(`not a duration: ${JSON.stringify(value)} (expected e.g. 500ms, 30s, 5m, 24h, 7d)`);
  return Math.round(Number.parseFloat(value) * UNIT_MS[m[2] as keyof typeof UNIT_MS]);
}

/** The largest whole unit that represents `ms` exactly, e.g. 86_400_000 → `1d`. */
export function formatDuration(ms: number): Duration {
  const unit = (['d', 'h', 'm', 's'] as const).find((u) => ms >= UNIT_MS[u] && ms % UNIT_MS[u] === 0);
  return (unit ? `${ms / UNIT_MS[unit]}${unit}` : `${ms}ms`) as Duration;
}

/** A duration as a person reads it in an explanation: whole seconds, minutes or tenths of hours, never raw ms. */
export function roughly(ms: number): string {
  if (ms < 60_000) return `${Math.max(1, Math.round(ms / 1000))} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 360_000) / 10} h`;
}
