/**
 * canonicalJson's key texts (`"key":`), cached: the same few keys recur in every operation (a
 * receipt's, a record's, the params'), and each costs two string concatenations and a pattern test.
 * Bounded: emptied when full, so a stream of one-off keys cannot grow it. Internal (not exported by
 * the package): canonical.ts uses it, its test reads the bound.
 */

/** Printable ASCII without a quote or backslash: JSON writes it as it is. */
export const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

export const KEY_CACHE_MAX = 2048;
const keyTexts = new Map<string, string>();

/** `"key":` exactly as the full writer writes a key (keys are not normalised). */
export function keyText(k: string): string {
  let t = keyTexts.get(k);
  if (t === undefined) {
    t = (PLAIN_ASCII.test(k) ? '"' + k + '"' : JSON.stringify(k)) + ':';
    if (keyTexts.size >= KEY_CACHE_MAX) keyTexts.clear();
    keyTexts.set(k, t);
  }
  return t;
}

/** How many key texts are cached now. */
export function keyCacheSize(): number {
  return keyTexts.size;
}
