/**
 * Retry-After (RFC 9110) as a wait in ms, or `undefined` for no hint: seconds (fractions rounded up, as some
 * providers send them), or an HTTP-date only when it has a letter: `Date.parse` also reads a bare `1.5` as a date.
 */
export function parseRetryAfter(
  value: string | readonly string[] | null | undefined,
  now: number = Date.now(),
): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (typeof raw !== 'string') return undefined;
  const v = raw.trim();
  if (v === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(v)) {
    const ms = Math.ceil(Number(v) * 1000);
    return Number.isFinite(ms) ? ms : undefined;
  }
  if (!/[a-z]/i.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
