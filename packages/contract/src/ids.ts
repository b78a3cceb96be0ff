import { randomUUID } from 'node:crypto';
import { canonicalJson, sha256Hex } from './canonical.js';
import { InvalidIdError, InvalidIntentError } from './errors.js';

declare const brand: unique symbol;
/** A string that the type system keeps apart from every other kind of id. */
export type Brand<T, B extends string> = T & { readonly [brand]: B };

/** One business intent; stable across every retry, run and process. */
export type BusinessOperationId = Brand<string, 'BusinessOperationId'>;
/** One orchestration run; new each time; only in receipts. */
export type RunId = Brand<string, 'RunId'>;
/** One call to the provider; new each time; only in receipts. */
export type AttemptId = Brand<string, 'AttemptId'>;
/** The value the provider uses to fold re-sends together; derived from the business-operation id. */
export type ProviderKey = Brand<string, 'ProviderKey'>;

/** Characters allowed in a caller-supplied business-operation id. */
const BOID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:\-/]*$/;
const BUSINESS_OPERATION_ID_MAX_LENGTH = 200;
const OPERATION_PATTERN = /^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)*$/;

/** Validates a caller-supplied business-operation id (1–200 chars of `A-Z a-z 0-9 . _ : - /`, starting alphanumeric). */
export function asBusinessOperationId(value: string): BusinessOperationId {
  const problem =
    typeof value !== 'string' || value.length === 0
      ? 'must be a non-empty string'
      : value.length > BUSINESS_OPERATION_ID_MAX_LENGTH
        ? `longer than ${BUSINESS_OPERATION_ID_MAX_LENGTH} characters`
        : BOID_PATTERN.test(value)
          ? null
          : 'only A-Z a-z 0-9 . _ : - / are allowed, starting with a letter or digit';
  if (problem) throw new InvalidIdError('business-operation id', String(value), problem);
  return value as BusinessOperationId;
}

/**
 * A stable business-operation id from an operation name and its intent: `<operation>:<32 hex of SHA-256 of the
 * canonical intent>`. Never derive it from an LLM tool-call id or a run id.
 */
export function businessOperationId(operation: string, intent: Record<string, unknown>): BusinessOperationId {
  return intentIdentity(operation, intent).id;
}

/** The derived id and the intent's fingerprint (`sha256:` + the digest the id is cut from): one digest for both. */
export function intentIdentity(
  operation: string,
  intent: Record<string, unknown>,
): { id: BusinessOperationId; intentFingerprint: string } {
  if (!OPERATION_PATTERN.test(operation))
    throw new InvalidIdError(
      'operation name',
      operation,
      'expected dotted identifiers such as stripe.paymentIntents.create',
    );
  if (typeof intent !== 'object' || intent === null || Array.isArray(intent))
    throw new InvalidIntentError('', 'intent must be a plain object of the declared intent fields');
  if (Object.keys(intent).length === 0)
    throw new InvalidIntentError(
      '',
      'intent is empty: an id derived from no fields would fold every call into one operation',
    );
  const digest = sha256Hex(canonicalJson({ operation, intent }));
  return { id: asBusinessOperationId(`${operation}:${digest.slice(0, 32)}`), intentFingerprint: `sha256:${digest}` };
}

/** Picks the declared intent fields (dot paths) out of the params; a missing one is an error (it would fold intents). */
export function pickIntent(params: unknown, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of fields) {
    let cur: unknown = params;
    for (const part of field.split('.')) {
      if (typeof cur !== 'object' || cur === null || !(part in (cur as object)))
        throw new InvalidIntentError(field, 'declared intent field is missing from params');
      cur = (cur as Record<string, unknown>)[part];
    }
    if (cur === undefined) throw new InvalidIntentError(field, 'declared intent field is undefined');
    out[field] = cur;
  }
  return out;
}

export function newRunId(): RunId {
  return `run_${randomUUID()}` as RunId;
}

export function newAttemptId(): AttemptId {
  return `att_${randomUUID()}` as AttemptId;
}

/** A run or attempt id given back to us (e.g. read from a receipt). */
function recordedId<T>(kind: string, value: string): T {
  if (typeof value !== 'string' || !/^[A-Za-z0-9._:-]{1,128}$/.test(value))
    throw new InvalidIdError(kind, String(value), 'expected 1–128 chars of A-Z a-z 0-9 . _ : -');
  return value as T;
}

export function asRunId(value: string): RunId {
  return recordedId('run id', value);
}

export function asAttemptId(value: string): AttemptId {
  return recordedId('attempt id', value);
}

export interface ProviderKeyRule {
  /** Maximum length the provider accepts. */
  maxLength: number;
  /** Characters the provider accepts, as a character-class body, e.g. `A-Za-z0-9_-`. */
  charset: string;
  /** Prefix added in front, e.g. `rs-`. Counted in maxLength. */
  prefix?: string;
}

/** The provider key for an id under the provider's rule: the id itself when it fits, else prefix + SHA-256 digest, cut to fit. */
export function deriveProviderKey(id: BusinessOperationId, rule: ProviderKeyRule): ProviderKey {
  const prefix = rule.prefix ?? '';
  const allowed = new RegExp(`^[${rule.charset}]*$`);
  if (!allowed.test(prefix))
    throw new InvalidIdError('provider key prefix', prefix, `not within charset [${rule.charset}]`);
  const readable = prefix + id;
  if (readable.length <= rule.maxLength && allowed.test(readable)) return readable as ProviderKey;
  const digest = sha256Hex(id);
  const room = rule.maxLength - prefix.length;
  if (room < 16)
    throw new InvalidIdError(
      'provider key',
      readable,
      `maxLength ${rule.maxLength} leaves under 16 characters for the digest`,
    );
  if (!allowed.test('0123456789abcdef'))
    throw new InvalidIdError('provider key', readable, `charset [${rule.charset}] cannot carry a hex digest`);
  return (prefix + digest.slice(0, Math.min(room, 64))) as ProviderKey;
}

/** What revision `n`'s provider key is derived from: the id, or the id plus `#r<n>` (`#` is never in an id). */
export function revisionKeySource(id: BusinessOperationId, revision = 1): BusinessOperationId {
  return (revision <= 1 ? id : `${id}#r${revision}`) as BusinessOperationId;
}

/** Marks a string that an adapter has already validated against its provider's key rules. */
export function asProviderKey(value: string): ProviderKey {
  if (typeof value !== 'string' || value.length === 0)
    throw new InvalidIdError('provider key', String(value), 'must be a non-empty string');
  return value as ProviderKey;
}
