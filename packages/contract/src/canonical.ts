import { hash } from 'node:crypto';
import { InvalidIntentError } from './errors.js';

/** Canonical JSON: sorted keys, shortest round-trip numbers, strings as given (a provider may keep `café` composed and
 * decomposed apart). What JSON cannot carry faithfully is an InvalidIntentError with its path. */
export function canonicalJson(value: unknown): string {
  return write(value, new Set());
}

function write(value: unknown, seen: Set<object>): string {
  if (typeof value === 'string') return stringText(value);
  if (value === null || typeof value === 'boolean') return String(value);
  if (typeof value === 'number') {
    // ECMAScript's shortest round trip; `-0` is written `0`.
    if (!Number.isFinite(value)) throw new InvalidIntentError('', `number ${value} is not representable in JSON`);
    return String(value);
  }
  if (typeof value !== 'object') throw new InvalidIntentError('', `a ${typeof value} cannot be part of an intent`);
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new InvalidIntentError('', 'invalid Date');
    return JSON.stringify(value.toISOString());
  }
  if (seen.has(value)) throw new InvalidIntentError('', 'cycle');
  seen.add(value);
  try {
    // A hole reads as undefined and is refused like an undefined item (never written as `[1,,3]`).
    if (Array.isArray(value)) return `[${Array.from(value, (v, i) => member(`[${i}]`, v, seen)).join(',')}]`;
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null)
      throw new InvalidIntentError('', `${proto.constructor?.name ?? 'exotic'} objects cannot be part of an intent`);
    const record = value as Record<string, unknown>;
    // Undefined members are left out.
    const keys = Object.keys(record).filter((k) => record[k] !== undefined);
    keys.sort();
    return `{${keys.map((k) => `${stringText(k)}:${member(k, record[k], seen)}`).join(',')}}`;
  } finally {
    seen.delete(value);
  }
}

/** An error beneath it gets the member's name in front of its path (paths are built only on errors). */
function member(name: string, value: unknown, seen: Set<object>): string {
  if (value === undefined) throw new InvalidIntentError(name, 'undefined array item');
  try {
    return write(value, seen);
  } catch (err) {
    if (!InvalidIntentError.isInstance(err)) throw err;
    const below = err.path === '' ? '' : err.path.startsWith('[') ? err.path : `.${err.path}`;
    throw new InvalidIntentError(name + below, err.reason);
  }
}

/** A value JSON cannot carry equals nothing. */
export function sameJson(a: unknown, b: unknown): boolean {
  try {
    return canonicalJson(a) === canonicalJson(b);
  } catch {
    return false;
  }
}

/** Plain ASCII (most ids, times and hashes) is its own JSON text in quotes, without a JSON.stringify call. */
const stringText = (s: string) => (/^[ !#-[\]-~]*$/.test(s) ? `"${s}"` : JSON.stringify(s));

/** `from`'s `keys` that hold a value (one left undefined is no field). */
export const definedFields = <T extends object, K extends keyof T>(from: T, keys: readonly K[]) =>
  Object.fromEntries(keys.filter((k) => from[k] !== undefined).map((k) => [k, from[k]])) as Pick<T, K>;

export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

/** The fingerprint used for intents and requests. */
export function fingerprint(value: unknown): string {
  return 'sha256:' + sha256Hex(canonicalJson(value));
}
