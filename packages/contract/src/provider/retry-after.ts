/**
 * Retry-After (RFC 9110 §10.2.3) as a wait in milliseconds, or `undefined` for "no hint".
 *
 * - delay-seconds: a non-negative number of seconds. RFC 9110 allows only whole seconds, but some
 *   providers send fractions (`1.5`); they mean what they say, so they are read as 1500 ms (rounded up,
 *   so a wait is never shorter than asked).
 * - HTTP-date: the wait until that instant, 0 when it has passed. Only something that looks like a date
 *   (it has a letter in it: a weekday or a month name) is read as one — `Date.parse("1.5")` is a date in
 *   2001 to V8, which turned a 1.5 s hint into 0 ms.
 * - anything else — negative numbers, `NaN`, `Infinity`, empty, garbage — is no hint, not "retry now".
 *
 * One parser for every adapter: the runner then honours the same header the same way for every provider.
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
