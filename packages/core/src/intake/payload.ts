import { canonicalJson, InvalidIntentError, PayloadLimitError, RetrysafeError, sha256Hex } from '@retrysafe/contract';
import { PAYLOAD_LIMITS } from '@retrysafe/contract/ledger';
import type { Redactor } from '../redact.js';

export type CheckedPayload = ReturnType<typeof checkedPayload>;

/** The limits every ledger can store, then canonical JSON; returns that JSON. */
function checkPayload(part: 'params' | 'intent', value: unknown): string {
  const depth = depthOver(value, PAYLOAD_LIMITS.maxDepth);
  if (depth !== null) throw new PayloadLimitError(part, 'depth', depth, PAYLOAD_LIMITS.maxDepth);
  const json = canonicalJson(value);
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > PAYLOAD_LIMITS.maxBytes) throw new PayloadLimitError(part, 'bytes', bytes, PAYLOAD_LIMITS.maxBytes);
  return json;
}

/**
 * The payload checks run before the claim (a refusal after it would leave a row that never finishes) of
 * an operation's params and intent (null when not derived here): the ledgers' depth and size limits,
 * canonical JSON, then the redactor and the redacted copy's fingerprint, as receipts carry it.
 */
export function checkedPayload(params: unknown, intent: unknown, makeRedactor: () => Redactor) {
  if (intent !== null) checkPayload('intent', intent);
  const json = checkPayload('params', params);
  let redactor: Redactor;
  let redactedJson: string;
  try {
    redactor = makeRedactor();
    const redacted = redactor.params(params);
    redactedJson = redacted === params ? json : canonicalJson(redacted);
  } catch (err) {
    if (RetrysafeError.isInstance(err) && !InvalidIntentError.isInstance(err)) throw err;
    throw new InvalidIntentError(
      '(params)',
      `the redacted copy of the params cannot be canonicalised (${err instanceof Error ? err.message : String(err)}); nothing claimed, nothing sent`,
    );
  }
  const paramsFingerprint = `sha256:${sha256Hex(json)}`;
  // Nothing redacted (the usual case): the same text, so the same fingerprint.
  const requestFingerprint = redactedJson === json ? paramsFingerprint : `sha256:${sha256Hex(redactedJson)}`;
  return { paramsFingerprint, requestFingerprint, redactor };
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
      for (const child of Array.isArray(v) ? v : Object.values(v)) {
        const over = visit(child, level + 1);
        if (over !== null) return over;
      }
      return null;
    } finally {
      ancestors.delete(v);
    }
  };
  return visit(value, 1);
}
