import { hash } from 'node:crypto';
import { InvalidIntentError } from './errors/invalid-intent-error.js';

/**
 * Canonical JSON: object keys sorted by code unit, no whitespace, numbers in ECMAScript's shortest
 * round-trip form (so `1e2`, `100` and `100.0` are one value once parsed), `-0` folded to `0`.
 * Rejects what JSON cannot carry faithfully (functions, symbols, bigint, NaN, ±Infinity, cycles,
 * non-plain objects other than Date) with a typed error that names the path.
 * `undefined` object members are dropped (as JSON does); `undefined` array items are an error.
 */
export function canonicalJson(value: unknown): string {
  return write(value, '', new Set());
}

function write(value: unknown, path: string, seen: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value.normalize('NFC'));
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      // ECMAScript's shortest round trip; `-0` is written `0`.
      if (!Number.isFinite(value)) throw new InvalidIntentError(path, `number ${value} is not representable in JSON`);
      return String(value);
    case 'object':
      break;
    default:
      throw new InvalidIntentError(path, `a ${typeof value} cannot be part of an intent`);
  }
  const obj = value as object;
  if (obj instanceof Date) {
    if (Number.isNaN(obj.getTime())) throw new InvalidIntentError(path, 'invalid Date');
    return JSON.stringify(obj.toISOString());
  }
  if (seen.has(obj)) throw new InvalidIntentError(path, 'cycle');
  seen.add(obj);
  try {
    if (Array.isArray(obj)) {
      return '[' + obj.map((item, i) => {
        if (item === undefined) throw new InvalidIntentError(`${path}[${i}]`, 'undefined array item');
        return write(item, `${path}[${i}]`, seen);
      }).join(',') + ']';
    }
    const proto = Object.getPrototypeOf(obj);
    if (proto !== Object.prototype && proto !== null) {
      throw new InvalidIntentError(path, `${proto?.constructor?.name ?? 'exotic'} objects cannot be part of an intent`);
    }
    const record = obj as Record<string, unknown>;
    const keys = Object.keys(record).filter((k) => record[k] !== undefined).sort();
    // Keys are written as given (not normalised): they are names, not values.
    return '{' + keys.map((k) => JSON.stringify(k) + ':' + write(record[k], path ? `${path}.${k}` : k, seen)).join(',') + '}';
  } finally {
    seen.delete(obj);
  }
}

/** SHA-256 of a UTF-8 string, lowercase hex. */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

/** `sha256:` + hex digest of the canonical JSON of `value`: the fingerprint used for intents and requests. */
export function fingerprint(value: unknown): string {
  return 'sha256:' + sha256Hex(canonicalJson(value));
}
