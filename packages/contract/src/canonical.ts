import { hash } from 'node:crypto';
import { commaKeyText, keyOrder, keyText } from './canonical-keys.js';
import { InvalidIntentError } from './errors/invalid-intent-error.js';
import { numberText, plainAscii, prototypePolluted, stringText } from './internal.js';

/**
 * Canonical JSON: object keys sorted by code unit, no whitespace, numbers in ECMAScript's shortest
 * round-trip form (so `1e2`, `100` and `100.0` are one value once parsed), `-0` folded to `0`.
 * Rejects what JSON cannot carry faithfully (functions, symbols, bigint, NaN, ±Infinity, cycles,
 * non-plain objects other than Date) with a typed error that names the path.
 * `undefined` object members are dropped (as JSON does); `undefined` array items are an error.
 */
export function canonicalJson(value: unknown): string {
  // The common case (plain data within a sane depth) is written in one pass with no path strings or
  // cycle set; anything the fast pass does not handle byte for byte (an error to name, a sparse array,
  // a cycle or a very deep value) is written again by the full writer, whose answer or error stands.
  if (!prototypePolluted()) {
    try {
      return fast(value, 0);
    } catch (err) {
      if (err !== BAIL) throw err;
    }
  }
  return write(value, '', new Set());
}

/** Thrown by the fast pass: the full writer decides (same bytes, or the error that names the path). */
const BAIL: unique symbol = Symbol('canonicalJson: full writer');
/** Deeper than this, the fast pass hands over (a cycle also ends up here: the full writer names it). */
const FAST_DEPTH = 200;
/** From this many keys an object's order is looked up (keyOrder) rather than sorted: below, sorting costs less than the lookup. */
const SORT_CACHE_FROM = 6;

function fast(value: unknown, depth: number): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return stringText(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number': {
      const t = numberText(value);
      if (t === undefined) throw BAIL;
      return t;
    }
    case 'object':
      break;
    default:
      throw BAIL;
  }
  if (depth >= FAST_DEPTH) throw BAIL;
  const obj = value as object;
  if (obj instanceof Date) {
    if (Number.isNaN(obj.getTime())) throw BAIL;
    return JSON.stringify(obj.toISOString());
  }
  if (Array.isArray(obj)) {
    const n = obj.length;
    if (n === 0) return '[]';
    let out = '[';
    for (let i = 0; i < n; i++) {
      // A hole is written by the full writer (as Array#map and join leave it: empty).
      if (!(i in obj)) throw BAIL;
      const item: unknown = obj[i];
      if (item === undefined) throw BAIL;
      out += (i === 0 ? '' : ',') + fast(item, depth + 1);
    }
    return out + ']';
  }
  const proto = Object.getPrototypeOf(obj);
  if (proto !== Object.prototype && proto !== null) throw BAIL;
  const rec = obj as Record<string, unknown>;
  // for-in rather than Object.keys: its loads use the object's enumeration cache (no megamorphic
  // lookup per key); it sees own keys only, as Object.prototype has no enumerable ones (canonicalJson checks).
  const keys: string[] = [];
  const values: unknown[] = [];
  for (const k in rec) {
    const v = rec[k];
    if (v !== undefined) {
      keys.push(k);
      values.push(v);
    }
  }
  const n = keys.length;
  if (n === 0) return '{}';
  if (n > 24) {
    const order = keys.map((_, i) => i).sort((a, b) => (keys[a]! < keys[b]! ? -1 : 1));
    let out = '{';
    for (let i = 0; i < n; i++) {
      const k = keys[order[i]!]!;
      out += (i === 0 ? '' : ',') + keyText(k) + fast(values[order[i]!], depth + 1);
    }
    return out + '}';
  }
  if (n >= SORT_CACHE_FROM) {
    // The same key list as last time under this first key (a receipt, a record): its order and key texts are known.
    const { order, texts } = keyOrder(keys);
    let out = '';
    for (let i = 0; i < n; i++) out += texts[i]! + fast(values[order[i]!], depth + 1);
    return out + '}';
  }
  // Sorted by insertion, by code unit (as Array#sort orders strings): most objects have few keys.
  for (let i = 1; i < n; i++) {
    const k = keys[i]!;
    const v = values[i];
    let j = i;
    while (j > 0 && keys[j - 1]! > k) {
      keys[j] = keys[j - 1]!;
      values[j] = values[j - 1];
      j--;
    }
    keys[j] = k;
    values[j] = v;
  }
  let out = '{' + keyText(keys[0]!) + fast(values[0], depth + 1);
  for (let i = 1; i < n; i++) out += commaKeyText(keys[i]!) + fast(values[i], depth + 1);
  return out + '}';
}

function write(value: unknown, path: string, seen: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return stringText(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number': {
      const t = numberText(value);
      if (t === undefined) throw new InvalidIntentError(path, `number ${value} is not representable in JSON`);
      return t;
    }
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
    const keys = Object.keys(obj).filter((k) => (obj as Record<string, unknown>)[k] !== undefined).sort();
    return '{' + keys.map((k) => (plainAscii(k) ? `"${k}"` : JSON.stringify(k)) + ':' + write((obj as Record<string, unknown>)[k], path ? `${path}.${k}` : k, seen)).join(',') + '}';
  } finally {
    seen.delete(obj);
  }
}

/**
 * SHA-256 of a UTF-8 string, lowercase hex, through crypto.hash (Node >= 20.12, below this package's
 * engines: one call, no Hash object; several per operation).
 */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

/** `sha256:` + hex digest of the canonical JSON of `value`: the fingerprint used for intents and requests. */
export function fingerprint(value: unknown): string {
  return flatConcat('sha256:', sha256Hex(canonicalJson(value)));
}

/**
 * `a + b` as one flat string. V8 makes `a + b` (and a template literal) of 13 or more characters a rope
 * of its two parts, and every later read of a character walks it: an id or a fingerprint is read
 * character by character several times per operation (the SQLite body codec, canonical JSON's ASCII
 * check, redaction's scan), ~30% dearer on a rope (callgrind). Array#join copies into one string.
 */
export function flatConcat(a: string, b: string): string {
  return [a, b].join('');
}
