/** Retry-After in ms, or `undefined`: fractions of seconds round up; a date needs a letter (`Date.parse('1.5')` is one). */
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
