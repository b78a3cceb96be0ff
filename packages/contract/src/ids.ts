import { randomUUID } from 'node:crypto';
import { sha256Hex } from './canonical.js';
import { InvalidIdError } from './errors.js';

declare const brand: unique symbol;
type Brand<B extends string> = string & { readonly [brand]: B };

/** One business intent; stable across every retry, run and process. */
export type BusinessOperationId = Brand<'BusinessOperationId'>;
/** New for each run; only in receipts. */
export type RunId = Brand<'RunId'>;
/** New for each call to the provider; only in receipts. */
export type AttemptId = Brand<'AttemptId'>;
/** The value the provider folds re-sends by; derived from the business-operation id. */
export type ProviderKey = Brand<'ProviderKey'>;

/** Why `value` is no business-operation id (null: it is one). Short ASCII only: every ledger's key keeps it exactly, so
 * no store's key limit or handling of text that is not UTF-8 (a lone surrogate becoming U+FFFD) makes two ids one. */
export function businessOperationIdProblem(value: unknown): string | null {
  if (typeof value !== 'string' || value.length === 0) return 'must be a non-empty string';
  if (value.length > 200) return 'longer than 200 characters';
  if (!/^[A-Za-z0-9][A-Za-z0-9._:\-/]*$/.test(value))
    return 'only A-Z a-z 0-9 . _ : - / are allowed, starting with a letter or digit';
  return null;
}

export function asBusinessOperationId(value: string): BusinessOperationId {
  const why = businessOperationIdProblem(value);
  if (why !== null) throw new InvalidIdError('business-operation id', String(value), why);
  return value as BusinessOperationId;
}

export function newRunId(): RunId {
  return `run_${randomUUID()}` as RunId;
}

export function newAttemptId(): AttemptId {
  return `att_${randomUUID()}` as AttemptId;
}

/** E.g. read from a receipt. */
const recordedId =
  <T>(kind: string) =>
  (value: string): T => {
    if (typeof value !== 'string' || !/^[A-Za-z0-9._:-]{1,128}$/.test(value))
      throw new InvalidIdError(kind, String(value), 'expected 1–128 chars of A-Z a-z 0-9 . _ : -');
    return value as T;
  };
export const asRunId = recordedId<RunId>('run id');
export const asAttemptId = recordedId<AttemptId>('attempt id');

export interface ProviderKeyRule {
  maxLength: number;
  /** A character-class body, e.g. `A-Za-z0-9_-`. */
  charset: string;
  /** Counted in maxLength. */
  prefix?: string;
  /** The provider is known to tell keys apart by letter case; else an id with an upper-case letter is digested. */
  caseSensitive?: boolean;
}

/** Throws a SyntaxError when the character-class body does not compile. */
export function charsetPattern(charset: string): RegExp {
  return new RegExp(`^[${charset}]*$`);
}

/** The id itself when it fits the provider's rule, else prefix + SHA-256 digest, cut to fit. An id spelt like a
 * digest is digested too, so a readable key never equals another id's digest key; so is one whose case a provider
 * not known to tell case apart could fold into another id's key. */
export function deriveProviderKey(id: BusinessOperationId, rule: ProviderKeyRule): ProviderKey {
  const prefix = rule.prefix ?? '';
  const allowed = charsetPattern(rule.charset);
  if (!allowed.test(prefix))
    throw new InvalidIdError('provider key prefix', prefix, `not within charset [${rule.charset}]`);
  const readable = prefix + id;
  const digestLength = Math.min(rule.maxLength - prefix.length, 64);
  const digestShaped = id.length === digestLength && /^[0-9a-f]*$/.test(id);
  const caseSafe = rule.caseSensitive === true || !/[A-Z]/.test(id);
  if (readable.length <= rule.maxLength && allowed.test(readable) && !digestShaped && caseSafe)
    return readable as ProviderKey;
  const refuse = (why: string) => new InvalidIdError('provider key', readable, why);
  if (digestLength < 16) throw refuse(`maxLength ${rule.maxLength} leaves under 16 characters for the digest`);
  if (!allowed.test('0123456789abcdef')) throw refuse(`charset [${rule.charset}] cannot carry a hex digest`);
  return (prefix + sha256Hex(id).slice(0, digestLength)) as ProviderKey;
}

/** What revision `n`'s provider key is derived from: the id, or the id plus `#r<n>` (`#` is never in an id). */
export function revisionKeySource(id: BusinessOperationId, revision = 1): BusinessOperationId {
  return (revision <= 1 ? id : `${id}#r${revision}`) as BusinessOperationId;
}

/** A string an adapter has already checked against its provider's key rules. */
export function asProviderKey(value: string): ProviderKey {
  if (typeof value !== 'string' || value.length === 0)
    throw new InvalidIdError('provider key', String(value), 'must be a non-empty string');
  return value as ProviderKey;
}
