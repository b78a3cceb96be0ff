/**
 * `@retrysafe/contract/internal`: helpers the retrysafe packages share that are not part of the
 * contract's API (no compatibility promise; may change in any release). This module imports
 * nothing, so loading it beside the bundled entry duplicates no state.
 */

/**
 * Whether Object.prototype has gained an enumerable property. A for-in over plain data sees own keys
 * only while it has none: canonical JSON's fast pass and the memory ledger's copy rely on that, and
 * take their exact path when this is true.
 */
export function prototypePolluted(): boolean {
  for (const _ in {}) return true;
  return false;
}

const PLAIN_BY_PATTERN_FROM = 24;
/** A code unit that is not plain: outside 0x20–0x7e, a quote or a backslash. */
const NOT_PLAIN = /[^ !#-[\]-~]/;

/**
 * Printable ASCII (0x20–0x7e) without a quote or backslash: JSON writes it as it is, and it is its own
 * NFC form. A loop over the code units rather than a pattern: no call into the regexp engine for
 * each of the short strings canonical JSON writes.
 */
export function plainAscii(s: string): boolean {
  // From about 24 code units the regexp engine's compiled loop costs less than this one (~11
  // instructions a character against ~32, plus ~450 a call; callgrind): ids, hashes, times.
  if (s.length >= PLAIN_BY_PATTERN_FROM) return !NOT_PLAIN.test(s);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

/**
 * Canonical JSON's string rule, its one owner (canonicalJson and core's receipt writer call it): the
 * NFC form, JSON-escaped; plain ASCII (the common case: ids, keys, times) is written as it is,
 * without normalize() and the JSON encoder.
 */
export function stringText(s: string): string {
  return plainAscii(s) ? '"' + s + '"' : JSON.stringify(s.normalize('NFC'));
}

/**
 * Canonical JSON's number rule, its one owner: a finite number's JSON text is its ECMAScript
 * ToString (shortest round trip, `1e+21`, and `-0` as `0`). `undefined` for NaN and ±Infinity, which
 * JSON cannot carry (the caller decides: an error, or its full path).
 */
export function numberText(n: number): string | undefined {
  return Number.isFinite(n) ? '' + n : undefined;
}
