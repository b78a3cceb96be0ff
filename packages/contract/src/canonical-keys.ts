import { plainAscii } from './internal.js';
/**
 * canonicalJson's key texts (`"key":`), cached: the same few keys recur in every operation (a
 * receipt's, a record's, the params'), and each costs two string concatenations and a pattern test.
 * Bounded: emptied when full, so a stream of one-off keys cannot grow it. Internal (not exported by
 * the package): canonical.ts uses it, its test reads the bound.
 */

export const KEY_CACHE_MAX = 2048;
const keyTexts = new Map<string, string>();

/** `"key":` exactly as the full writer writes a key (keys are not normalised). */
export function keyText(k: string): string {
  let t = keyTexts.get(k);
  if (t === undefined) {
    t = (plainAscii(k) ? '"' + k + '"' : JSON.stringify(k)) + ':';
    if (keyTexts.size >= KEY_CACHE_MAX) keyTexts.clear();
    keyTexts.set(k, t);
  }
  return t;
}

const commaKeyTexts = new Map<string, string>();

/** `,"key":`, the text of every key after an object's first (one string added per member, not two). */
export function commaKeyText(k: string): string {
  let t = commaKeyTexts.get(k);
  if (t === undefined) {
    t = ',' + keyText(k);
    if (commaKeyTexts.size >= KEY_CACHE_MAX) commaKeyTexts.clear();
    commaKeyTexts.set(k, t);
  }
  return t;
}

/**
 * How to write an object with these keys (those with a value, in enumeration order): `order`, the
 * indices in code-unit order (as Array#sort orders strings), and `texts`, what precedes each member
 * in that order (`{"a":`, then `,"b":` …). Remembered for the next object with the same key list —
 * a receipt, a record: the same few shapes in every operation. Looked up by the first key; another
 * list under it replaces it. Bounded as the key texts are.
 */
export interface KeyOrder {
  readonly keys: readonly string[];
  readonly order: readonly number[];
  readonly texts: readonly string[];
}
const keyOrders = new Map<string, KeyOrder>();

export function keyOrder(keys: readonly string[]): KeyOrder {
  const n = keys.length;
  const hit = keyOrders.get(keys[0]!);
  if (hit !== undefined && hit.keys.length === n) {
    let same = true;
    for (let i = 1; i < n; i++) {
      if (hit.keys[i] !== keys[i]) {
        same = false;
        break;
      }
    }
    if (same) return hit;
  }
  // Insertion sort of the indices: most objects have few keys.
  const order: number[] = [];
  for (let i = 0; i < n; i++) {
    const k = keys[i]!;
    let j = i;
    while (j > 0 && keys[order[j - 1]!]! > k) {
      order[j] = order[j - 1]!;
      j--;
    }
    order[j] = i;
  }
  const texts = order.map((o, i) => (i === 0 ? '{' : ',') + keyText(keys[o]!));
  const entry: KeyOrder = { keys: keys.slice(), order, texts };
  if (keyOrders.size >= KEY_CACHE_MAX) keyOrders.clear();
  keyOrders.set(keys[0]!, entry);
  return entry;
}

/** How many key texts are cached now. */
export function keyCacheSize(): number {
  return keyTexts.size;
}
