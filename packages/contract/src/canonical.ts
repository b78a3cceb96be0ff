import { hash } from 'node:crypto';
import { InvalidIntentError } from './errors.js';

/** Canonical JSON: sorted keys, shortest round-trip numbers, strings as given (a provider may keep `café` composed and
 * decomposed apart). What JSON cannot carry faithfully is an InvalidIntentError with its path. */
export function canonicalJson(value: unknown): string {
  return write(value, new Set());
}

function write(value: unknown, seen: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return stringText(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      // ECMAScript's shortest round trip; `-0` is written `0`.
      if (!Number.isFinite(value)) throw new InvalidIntentError('', `number ${value} is not representable in JSON`);
      return String(value);
    case 'object':
      break;
    default:
      throw new InvalidIntentError('', `a ${typeof value} cannot be part of an intent`);
  }
  const obj = value as object;
  if (obj instanceof Date) {
    if (Number.isNaN(obj.getTime())) throw new InvalidIntentError('', 'invalid Date');
    return JSON.stringify(obj.toISOString());
  }
  if (seen.has(obj)) throw new InvalidIntentError('', 'cycle');
  seen.add(obj);
  try {
    if (Array.isArray(obj)) {
      // A hole reads as undefined and is refused like an undefined item (never written as `[1,,3]`).
      let out = '[';
      for (let i = 0; i < obj.length; i++) out += (i === 0 ? '' : ',') + member(`[${i}]`, obj[i], seen);
      return out + ']';
    }
    const proto = Object.getPrototypeOf(obj);
    if (proto !== Object.prototype && proto !== null) {
      throw new InvalidIntentError('', `${proto?.constructor?.name ?? 'exotic'} objects cannot be part of an intent`);
    }
    const record = obj as Record<string, unknown>;
    // Undefined members are left out.
    let out = '{';
    for (const k of Object.keys(record).sort()) {
      const v = record[k];
      if (v !== undefined) out += (out === '{' ? '' : ',') + stringText(k) + ':' + member(k, v, seen);
    }
    return out + '}';
  } finally {
    seen.delete(obj);
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

/** Printable ASCII without a quote or backslash: its JSON text is itself in quotes. */
const PLAIN = /^[ !#-[\]-~]*$/;

/** Plain ASCII (most ids, times and hashes) needs no escaping. */
function stringText(s: string): string {
  return PLAIN.test(s) ? `"${s}"` : JSON.stringify(s);
}

export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

/** The fingerprint used for intents and requests. */
export function fingerprint(value: unknown): string {
  return 'sha256:' + sha256Hex(canonicalJson(value));
}
