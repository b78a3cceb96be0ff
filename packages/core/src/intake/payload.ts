import {
  canonicalJson,
  InvalidIntentError,
  type OperationSpec,
  PayloadLimitError,
  RetrysafeError,
  sha256Hex,
} from '@retrysafe/contract';
import { PAYLOAD_LIMITS } from '@retrysafe/contract/ledger';
import { memo } from '../defined.js';
import { createRedactor, type Redactor } from '../redact.js';
import type { RunnerOptions } from '../runner/types.js';

export interface IntakeContext {
  readonly options: Pick<RunnerOptions, 'redact' | 'policy'>;
  readonly redactors: WeakMap<OperationSpec, Redactor>;
}

/** The limits every ledger can store, then canonical JSON; returns that JSON. */
function checkPayload(part: 'params' | 'intent', value: unknown): string {
  const depth = depthOver(value, PAYLOAD_LIMITS.maxDepth);
  if (depth !== null) throw new PayloadLimitError(part, 'depth', depth, PAYLOAD_LIMITS.maxDepth);
  const json = canonicalJson(value);
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > PAYLOAD_LIMITS.maxBytes) throw new PayloadLimitError(part, 'bytes', bytes, PAYLOAD_LIMITS.maxBytes);
  return json;
}

/** Params and intent (null when not derived here) checked before the claim, where a refusal leaves no row: the
 * ledgers' limits, canonical JSON, then a redactor that also blanks the sensitive values held in `valuesFrom`. */
export function checkedPayload(
  ctx: IntakeContext,
  spec: OperationSpec,
  params: unknown,
  intent: unknown,
  valuesFrom: readonly unknown[],
) {
  if (intent !== null) checkPayload('intent', intent);
  const json = checkPayload('params', params);
  let redactor: Redactor;
  let redactedJson: string;
  try {
    redactor = memo(ctx.redactors, spec, (s) => createRedactor(ctx.options.redact ?? {}, s.sensitiveFields ?? []));
    for (const v of valuesFrom) redactor = redactor.withValuesFrom(v);
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

/** The first nesting level above `max`, or null; recursion stops at `max + 1`. A cycle is left to canonicalJson. */
function depthOver(value: unknown, max: number): number | null {
  const ancestors = new Set<object>();
  const visit = (v: unknown, level: number): number | null => {
    if (typeof v !== 'object' || v === null || v instanceof Date || ancestors.has(v)) return null;
    if (level > max) return level;
    ancestors.add(v);
    let over: number | null = null;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      over = visit(child, level + 1);
      if (over !== null) break;
    }
    ancestors.delete(v);
    return over;
  };
  return visit(value, 1);
}
