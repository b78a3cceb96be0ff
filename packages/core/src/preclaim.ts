import { InvalidIntentError, PayloadLimitError, RetrysafeError, canonicalJson, sha256Hex } from '@retrysafe/contract';
import { PAYLOAD_LIMITS } from '@retrysafe/contract/ledger';
import type { Redactor } from './redact.js';

/**
 * Everything that can refuse an operation, done BEFORE the ledger claim (issue 15 item 4): once a row is
 * claimed, a refusal leaves an operation that never finishes. So a refusal here is a typed error with no
 * row written and no provider call.
 *
 * - the depth and size limits every ledger can store and patch (`PAYLOAD_LIMITS`), measured without
 *   recursion, so a params object nested 100 000 deep is a `PayloadLimitError`, not a `RangeError`;
 * - canonical JSON of the params and the intent (`InvalidIntentError` naming the path);
 * - the redacted copy that receipts fingerprint: redaction must not be able to throw after the claim.
 */
export interface PreclaimChecked {
  readonly paramsFingerprint: string;
  /** Fingerprint of the redacted params, as receipts carry it. */
  readonly requestFingerprint: string;
  readonly redactor: Redactor;
}

/** The limits every ledger can store (`PAYLOAD_LIMITS`), then canonical JSON; returns that JSON. */
export function checkPayload(part: 'params' | 'intent', value: unknown): string {
  const depth = depthOver(value, PAYLOAD_LIMITS.maxDepth);
  if (depth !== null) throw new PayloadLimitError(part, 'depth', depth, PAYLOAD_LIMITS.maxDepth);
  const json = canonicalJson(value);
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > PAYLOAD_LIMITS.maxBytes) throw new PayloadLimitError(part, 'bytes', bytes, PAYLOAD_LIMITS.maxBytes);
  return json;
}

/**
 * Runs every pre-claim check on an operation's params and intent (intent: null when it is not derived
 * here); builds the operation's redactor only once the params are known to be within the limits.
 */
export function preclaim(params: unknown, intent: unknown, makeRedactor: () => Redactor): PreclaimChecked {
  if (intent !== null) checkPayload('intent', intent);
  const json = checkPayload('params', params);
  let redactor: Redactor;
  let redactedJson: string;
  try {
    redactor = makeRedactor();
    // Nothing to blank (the usual case): the redacted copy's JSON is the params' own, so neither is built again.
    redactedJson = redactor.changes(params) ? canonicalJson(redactor.params(params)) : json;
  } catch (err) {
    if (RetrysafeError.isInstance(err) && !InvalidIntentError.isInstance(err)) throw err;
    throw new InvalidIntentError('(params)', `the redacted copy of the params cannot be canonicalised (${err instanceof Error ? err.message : String(err)}); nothing claimed, nothing sent`);
  }
  const paramsFingerprint = 'sha256:' + sha256Hex(json);
  // Nothing redacted (the usual case): the same text, so the same digest, without hashing it twice.
  return { paramsFingerprint, requestFingerprint: redactedJson === json ? paramsFingerprint : 'sha256:' + sha256Hex(redactedJson), redactor };
}

/**
 * The first nesting level above `max`, or null when within it. Recursion stops at `max + 1`, so even a
 * value nested 100 000 deep costs at most that many frames. A cycle is left to canonicalJson (it names it).
 */
function depthOver(value: unknown, max: number): number | null {
  const ancestors = new Set<object>();
  const visit = (v: unknown, level: number): number | null => {
    if (typeof v !== 'object' || v === null || v instanceof Date || ancestors.has(v)) return null;
    if (level > max) return level;
    ancestors.add(v);
    try {
      // Index loops over the array or the own keys (no array of children built per object).
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          const over = visit(v[i], level + 1);
          if (over !== null) return over;
        }
        return null;
      }
      const keys = Object.keys(v);
      for (let i = 0; i < keys.length; i++) {
        const over = visit((v as Record<string, unknown>)[keys[i]!], level + 1);
        if (over !== null) return over;
      }
      return null;
    } finally {
      ancestors.delete(v);
    }
  };
  return visit(value, 1);
}
