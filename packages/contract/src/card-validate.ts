import { isDuration } from './duration.js';
import { UNKNOWN, type RetrySafetyCard } from './card.js';
import { CardValidationError } from './errors/card-validation-error.js';

export interface CardProblem {
  /** Dotted path of the field, e.g. `lookup.consistencyDelay.value`. */
  readonly path: string;
  readonly message: string;
}

type Check = (v: unknown) => string | null;

const str: Check = (v) => (typeof v === 'string' && v.trim().length > 0 ? null : 'expected a non-empty string');
const oneOf = (...values: readonly unknown[]): Check => (v) =>
  values.includes(v) ? null : `expected one of ${values.map((x) => JSON.stringify(x)).join(', ')}`;
const duration: Check = (v) => (isDuration(v) ? null : 'expected a duration such as 500ms, 30s, 5m, 24h, 7d');
const posInt: Check = (v) => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? null : 'expected a positive integer');
const bool: Check = (v) => (typeof v === 'boolean' ? null : 'expected true or false');
const nullable = (c: Check): Check => (v) => (v === null ? null : c(v));
const strings: Check = (v) =>
  Array.isArray(v) && v.every((s) => typeof s === 'string' && s.length > 0) ? null : 'expected an array of non-empty strings';
const nonEmptyStrings: Check = (v) => strings(v) ?? ((v as unknown[]).length > 0 ? null : 'expected at least one field');

/** A provider fact: `{ value, source }` where value passes `c` or is 'unknown', and source is cited. */
const FACT = Symbol('fact');
type Shape = { [k: string]: Shape | Check | FactShape };
interface FactShape { [FACT]: Check }
const f = (c: Check): FactShape => ({ [FACT]: c });

const SHAPE: Shape = {
  cardVersion: oneOf(1),
  provider: str,
  operation: str,
  sideEffect: {
    kind: f(oneOf('create', 'send', 'set', 'upsert', 'delete', 'charge', 'async-job', 'none')),
    idempotentByNature: f(bool),
  },
  businessOperationId: { rule: str, intentFields: nonEmptyStrings },
  ids: { run: str, attempt: str, request: f(str) },
  providerKey: {
    travels: f(oneOf('header', 'body', 'query', 'none')),
    name: f(nullable(str)),
    maxLength: f(nullable(posInt)),
    charset: f(nullable(str)),
    scope: f(str),
  },
  keyReuse: f(str),
  parameterMatching: f(oneOf('mismatch-error', 'replay-anyway', 'none')),
  storedResult: { semantics: f(oneOf('replays', 'rejects-duplicate', 'none')), includesErrors: f(bool) },
  lookup: {
    method: f(oneOf('get-by-key', 'status-url', 'search', 'resend-same-key', 'none')),
    consistencyDelay: f(nullable(duration)),
    lateApplyBound: f(duration),
  },
  retention: { minimum: f(nullable(duration)) },
  concurrency: f(oneOf('rejects-in-progress', 'waits-then-replays', 'duplicates', 'last-write-wins')),
  retryableErrors: f(strings),
  nonRetryableErrors: f(strings),
  backoff: { strategy: oneOf('exponential-full-jitter'), base: duration, cap: duration, retryAfterCap: duration },
  limits: { maxAttempts: posInt, maxElapsed: duration, lookupWindow: duration, clockSkewMargin: duration },
  retryLayer: { layer: oneOf('runner'), sdkRetries: oneOf('disabled'), how: str },
  reconciler: str,
  handoff: { condition: str, destination: str },
  duplicateTest: str,
  receipts: str,
  unverified: (v) => null, // checked separately below (array of objects)
};

/** Fields added after cardVersion 1 shipped: absent means unknown (lateApplyBound) or the default (clockSkewMargin). */
const OPTIONAL: ReadonlySet<string> = new Set(['lookup.lateApplyBound', 'limits.clockSkewMargin']);

function isFactShape(s: unknown): s is FactShape {
  return typeof s === 'object' && s !== null && FACT in s;
}

function walk(shape: Shape, value: unknown, path: string, problems: CardProblem[], unknownPaths: string[]): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push({ path: path || '(card)', message: 'expected an object' });
    return;
  }
  const obj = value as Record<string, unknown>;
  for (const [key, sub] of Object.entries(shape)) {
    const p = path ? `${path}.${key}` : key;
    if (!(key in obj) || obj[key] === undefined) {
      if (OPTIONAL.has(p)) continue;
      problems.push({ path: p, message: 'missing (every field is required; write "unknown" with a source when it is not known)' });
      continue;
    }
    const v = obj[key];
    if (typeof sub === 'function') {
      const msg = sub(v);
      if (msg) problems.push({ path: p, message: msg });
    } else if (isFactShape(sub)) {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) {
        problems.push({ path: p, message: 'expected a fact { value, source }' });
        continue;
      }
      const fv = v as Record<string, unknown>;
      if (!('value' in fv)) problems.push({ path: `${p}.value`, message: 'missing (use "unknown" when it is not known)' });
      else if (fv.value === UNKNOWN) unknownPaths.push(p);
      else {
        const msg = sub[FACT](fv.value);
        if (msg) problems.push({ path: `${p}.value`, message: msg });
      }
      const sm = str(fv.source);
      if (sm) problems.push({ path: `${p}.source`, message: 'every fact cites its source' });
    } else {
      walk(sub, v, p, problems, unknownPaths);
    }
  }
  for (const key of Object.keys(obj)) {
    if (!(key in shape)) problems.push({ path: path ? `${path}.${key}` : key, message: 'unexpected field' });
  }
}

export interface CardValidation {
  readonly ok: boolean;
  readonly problems: readonly CardProblem[];
  /** Paths of facts whose value is 'unknown'. */
  readonly unknowns: readonly string[];
}

/** Validates a card and returns every problem at once, each with its field path. */
export function validateCard(card: unknown): CardValidation {
  const problems: CardProblem[] = [];
  const unknowns: string[] = [];
  walk(SHAPE, card, '', problems, unknowns);
  const obj = (typeof card === 'object' && card !== null ? card : {}) as Record<string, unknown>;
  const unverified = obj.unverified;
  if (unverified !== undefined) {
    if (!Array.isArray(unverified)) problems.push({ path: 'unverified', message: 'expected an array' });
    else
      unverified.forEach((u, i) => {
        if (typeof u !== 'object' || u === null) return problems.push({ path: `unverified[${i}]`, message: 'expected { field, condition, source }' });
        for (const k of ['field', 'condition', 'source'] as const) {
          const m = str((u as Record<string, unknown>)[k]);
          if (m) problems.push({ path: `unverified[${i}].${k}`, message: m });
        }
      });
    if (Array.isArray(unverified)) {
      const listed = new Set(unverified.map((u) => (u as { field?: unknown })?.field));
      for (const path of unknowns) {
        if (!listed.has(path)) problems.push({ path, message: 'value is "unknown" but the field is not listed in unverified[] with its source' });
      }
    }
  }
  const rawCard = obj as Partial<RetrySafetyCard>;
  if (typeof rawCard.operation === 'string' && typeof rawCard.provider === 'string' && !rawCard.operation.startsWith(rawCard.provider + '.')) {
    problems.push({ path: 'operation', message: `must start with the provider name "${rawCard.provider}."` });
  }
  return { ok: problems.length === 0, problems, unknowns };
}

/** Validates and returns the card deep-frozen; throws CardValidationError listing every problem. */
export function defineCard<const C extends RetrySafetyCard>(card: C): C {
  const result = validateCard(card);
  if (!result.ok) throw new CardValidationError(String((card as { operation?: unknown }).operation ?? '(unnamed)'), result.problems);
  return deepFreeze(card);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
