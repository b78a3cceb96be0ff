import { type RetrySafetyCard, UNKNOWN } from './card.js';
import { isDuration } from './duration.js';
import { CardValidationError } from './errors.js';
import { MERGING_STEPS, NORMALIZATION_STEPS } from './normalize.js';

export interface CardProblem {
  /** Dotted path of the field, e.g. `lookup.consistencyDelay.value`. */
  readonly path: string;
  readonly message: string;
}

type Check = ((v: unknown) => string | null) & { readonly schema?: Readonly<Record<string, unknown>> };

/** A check together with the JSON Schema fragment that says the same (for the published card schema). */
const withSchema = (c: (v: unknown) => string | null, schema: Readonly<Record<string, unknown>>): Check =>
  Object.assign(c, { schema });

const str: Check = withSchema(
  (v) => (typeof v === 'string' && v.trim().length > 0 ? null : 'expected a non-empty string'),
  { type: 'string', pattern: '\\S' },
);
const oneOf = (...values: readonly unknown[]): Check =>
  withSchema(
    (v) => (values.includes(v) ? null : `expected one of ${values.map((x) => JSON.stringify(x)).join(', ')}`),
    values.length === 1 ? { const: values[0] } : { enum: values },
  );
const duration: Check = withSchema(
  (v) => (isDuration(v) ? null : 'expected a duration such as 500ms, 30s, 5m, 24h, 7d'),
  { type: 'string', pattern: '^\\d+(\\.\\d+)?(ms|s|m|h|d)$' },
);
const posInt: Check = withSchema(
  (v) => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? null : 'expected a positive integer'),
  { type: 'integer', minimum: 1 },
);
const bool: Check = withSchema((v) => (typeof v === 'boolean' ? null : 'expected true or false'), { type: 'boolean' });
const nullable = (c: Check): Check =>
  withSchema((v) => (v === null ? null : c(v)), { anyOf: [c.schema ?? {}, { type: 'null' }] });
const strings: Check = withSchema(
  (v) =>
    Array.isArray(v) && v.every((s) => typeof s === 'string' && s.length > 0)
      ? null
      : 'expected an array of non-empty strings',
  { type: 'array', items: { type: 'string', minLength: 1 } },
);
const nonEmptyStrings: Check = withSchema(
  (v) => strings(v) ?? ((v as unknown[]).length > 0 ? null : 'expected at least one field'),
  { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1 },
);

/** A provider fact: `{ value, source }` where value passes `c` or is 'unknown', and source is cited. */
const FACT = Symbol('fact');
type Shape = { [k: string]: Entry };
type Entry = Shape | Check | FactShape | SectionShape;
interface FactShape {
  [FACT]: Check;
}
const f = (c: Check): FactShape => ({ [FACT]: c });

/** An optional section with its own check (which may read the whole card) and its JSON Schema. */
const SECTION = Symbol('section');
interface Out {
  readonly problems: CardProblem[];
  readonly unknowns: string[];
  readonly card: Record<string, unknown>;
}
interface SectionShape {
  [SECTION]: (v: unknown, path: string, out: Out) => void;
  readonly schema: Record<string, unknown>;
}
const section = (check: SectionShape[typeof SECTION], schema: Record<string, unknown>): SectionShape => ({
  [SECTION]: check,
  schema,
});

const text = { type: 'string', minLength: 1 };

/** A normalisation or comparison rule: a merging step (case, inner white space, …) needs the provider's evidence. */
function ruleSchema(required: string[], extra: Record<string, unknown>): Record<string, unknown> {
  const evidence = {
    type: 'string',
    pattern: '^https://\\S+$',
    description: "the provider's page that treats the values a merging step folds as one",
  };
  const steps = {
    type: 'array',
    items: { enum: [...NORMALIZATION_STEPS] },
    description: 'applied in order to every string at or below the field',
  };
  return {
    type: 'object',
    additionalProperties: false,
    required,
    properties: { field: text, ...extra, steps, source: text, evidence },
    if: { required: ['steps'], properties: { steps: { type: 'array', contains: { enum: [...MERGING_STEPS] } } } },
    then: { required: ['evidence'], properties: { evidence } },
  };
}

const REPLAY_INDICATOR_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['value', 'source'],
  description: 'how the provider marks a replayed answer (e.g. Idempotent-Replayed: true), null when it sends none',
  properties: {
    value: {
      anyOf: [
        { const: 'unknown' },
        { type: 'null' },
        {
          type: 'object',
          additionalProperties: false,
          required: ['header', 'value'],
          properties: { header: text, value: text },
        },
      ],
    },
    source: text,
  },
};

const SHAPE: Shape = {
  cardVersion: oneOf(1),
  provider: str,
  operation: str,
  sideEffect: {
    kind: f(oneOf('create', 'send', 'set', 'upsert', 'delete', 'charge', 'async-job', 'none')),
    idempotentByNature: f(bool),
    rejectionMayCreate: f(bool),
  },
  businessOperationId: {
    rule: str,
    intentFields: nonEmptyStrings,
    normalize: section(checkNormalize, { type: 'array', items: ruleSchema(['field', 'steps', 'source'], {}) }),
  },
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
  storedResult: {
    semantics: f(oneOf('replays', 'rejects-duplicate', 'none')),
    includesErrors: f(bool),
    replayIndicator: section((v, _p, out) => checkReplayIndicator(v, out), REPLAY_INDICATOR_SCHEMA),
  },
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
  unverified: section(checkUnverified, {
    type: 'array',
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['field', 'condition', 'source'],
      properties: {
        field: { type: 'string', pattern: '\\S' },
        condition: { type: 'string', pattern: '\\S' },
        source: { type: 'string', pattern: '\\S' },
      },
    },
  }),
  paramComparison: section(checkParamComparison, {
    type: 'array',
    description: 'how params other than the intent are compared with the stored ones (default exact)',
    items: ruleSchema(['field', 'compare', 'source'], { compare: { enum: ['exact', 'normalized'] } }),
  }),
};

/** Optional fields: absent means unknown (lateApplyBound), false (rejectionMayCreate), the default or none. */
const OPTIONAL: ReadonlySet<string> = new Set([
  'sideEffect.rejectionMayCreate',
  'businessOperationId.normalize',
  'storedResult.replayIndicator',
  'lookup.lateApplyBound',
  'limits.clockSkewMargin',
  'paramComparison',
]);

function isFactShape(s: unknown): s is FactShape {
  return typeof s === 'object' && s !== null && FACT in s;
}

function isSection(s: unknown): s is SectionShape {
  return typeof s === 'object' && s !== null && SECTION in s;
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

function walk(shape: Shape, value: unknown, path: string, out: Out): void {
  const { problems } = out;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push({ path: path || '(card)', message: 'expected an object' });
    return;
  }
  const obj = value as Record<string, unknown>;
  for (const [key, sub] of Object.entries(shape)) {
    const p = join(path, key);
    if (!(key in obj) || obj[key] === undefined) {
      if (OPTIONAL.has(p)) continue;
      problems.push({
        path: p,
        message: 'missing (every field is required; write "unknown" with a source when it is not known)',
      });
      continue;
    }
    const v = obj[key];
    if (typeof sub === 'function') {
      const msg = sub(v);
      if (msg) problems.push({ path: p, message: msg });
    } else if (isSection(sub)) sub[SECTION](v, p, out);
    else if (isFactShape(sub)) checkFact(sub[FACT], v, p, out);
    else walk(sub, v, p, out);
  }
  for (const key of Object.keys(obj)) {
    if (!(key in shape)) problems.push({ path: join(path, key), message: 'unexpected field' });
  }
}

/** A provider fact: `{ value, source }`, the value checked unless it is "unknown", the source cited. */
function checkFact(check: Check, v: unknown, p: string, { problems, unknowns }: Out): void {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return void problems.push({ path: p, message: 'expected a fact { value, source }' });
  const fv = v as Record<string, unknown>;
  if (!('value' in fv)) problems.push({ path: `${p}.value`, message: 'missing (use "unknown" when it is not known)' });
  else if (fv.value === UNKNOWN) unknowns.push(p);
  else {
    const msg = check(fv.value);
    if (msg) problems.push({ path: `${p}.value`, message: msg });
  }
  if (str(fv.source)) problems.push({ path: `${p}.source`, message: 'every fact cites its source' });
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
  const obj = (typeof card === 'object' && card !== null ? card : {}) as Record<string, unknown>;
  walk(SHAPE, card, '', { problems, unknowns, card: obj });
  const { operation, provider } = obj;
  if (typeof operation === 'string' && typeof provider === 'string' && !operation.startsWith(provider + '.'))
    problems.push({ path: 'operation', message: `must start with the provider name "${provider}."` });
  return { ok: problems.length === 0, problems, unknowns };
}

/** Every `unverified[]` entry is well-formed, and every "unknown" fact (all walked before it) is listed there. */
function checkUnverified(unverified: unknown, _path: string, { problems, unknowns }: Out): void {
  if (!Array.isArray(unverified)) return void problems.push({ path: 'unverified', message: 'expected an array' });
  for (const [i, u] of unverified.entries()) {
    if (typeof u !== 'object' || u === null) {
      problems.push({ path: `unverified[${i}]`, message: 'expected { field, condition, source }' });
      continue;
    }
    for (const k of ['field', 'condition', 'source'] as const) {
      const m = str((u as Record<string, unknown>)[k]);
      if (m) problems.push({ path: `unverified[${i}].${k}`, message: m });
    }
  }
  const listed = new Set(unverified.map((u) => (u as { field?: unknown })?.field));
  for (const path of unknowns.filter((p) => !listed.has(p)))
    problems.push({ path, message: 'value is "unknown" but the field is not listed in unverified[] with its source' });
}

const hasSteps = (v: unknown) =>
  Array.isArray(v) && v.length > 0 && v.every((s) => (NORMALIZATION_STEPS as readonly unknown[]).includes(s));
const EVIDENCE = /^https:\/\/\S+$/;

/** A step that can merge values the provider keeps apart is declared only with the provider's evidence (an https page). */
function checkEvidence(r: Record<string, unknown>, p: string, problems: CardProblem[]): void {
  const merging = Array.isArray(r.steps)
    ? r.steps.filter((s) => (MERGING_STEPS as readonly unknown[]).includes(s))
    : [];
  const cited = typeof r.evidence === 'string' && EVIDENCE.test(r.evidence);
  if (merging.length > 0 && !cited)
    problems.push({
      path: `${p}.evidence`,
      message: `${merging.join(', ')} can merge values the provider keeps apart: cite the provider's page (https) that treats them as one`,
    });
  else if (r.evidence !== undefined && !cited)
    problems.push({ path: `${p}.evidence`, message: 'expected an https URL' });
}

/** Checks each rule of an optional list (normalisation or param comparison), then its evidence. */
function checkRules(
  list: unknown,
  path: string,
  expected: string,
  problems: CardProblem[],
  check: (r: Record<string, unknown>, p: string) => void,
): void {
  if (!Array.isArray(list)) return void problems.push({ path, message: `expected an array of ${expected}` });
  list.forEach((n: unknown, i: number) => {
    const r = (n ?? {}) as Record<string, unknown>;
    check(r, `${path}[${i}]`);
    checkEvidence(r, `${path}[${i}]`, problems);
  });
}

function checkNormalize(list: unknown, path: string, { problems, card }: Out): void {
  const bo = (card.businessOperationId ?? {}) as Record<string, unknown>;
  const intentFields = Array.isArray(bo.intentFields) ? (bo.intentFields as unknown[]) : [];
  const underIntent = (field: unknown) =>
    typeof field === 'string' &&
    intentFields.some((f) => field === f || (typeof f === 'string' && field.startsWith(`${f}.`)));
  checkRules(list, path, '{ field, steps, source }', problems, (r, p) => {
    if (!underIntent(r.field))
      problems.push({ path: `${p}.field`, message: 'expected one of the intent fields (or a path beneath one)' });
    if (!hasSteps(r.steps))
      problems.push({ path: `${p}.steps`, message: `expected a non-empty list of ${NORMALIZATION_STEPS.join(', ')}` });
    if (str(r.source))
      problems.push({
        path: `${p}.source`,
        message: 'every normalisation cites why the provider treats these values as the same',
      });
  });
}

function checkParamComparison(list: unknown, path: string, { problems }: Out): void {
  checkRules(list, path, '{ field, compare, steps?, source }', problems, (r, p) => {
    if (str(r.field)) problems.push({ path: `${p}.field`, message: 'expected a dot path into params' });
    if (r.compare !== 'exact' && r.compare !== 'normalized')
      problems.push({ path: `${p}.compare`, message: 'expected "exact" or "normalized"' });
    if (r.compare === 'normalized' && !hasSteps(r.steps))
      problems.push({
        path: `${p}.steps`,
        message: `a normalized comparison lists its steps (${NORMALIZATION_STEPS.join(', ')})`,
      });
    if (str(r.source)) problems.push({ path: `${p}.source`, message: 'every comparison rule cites its source' });
  });
}

function checkReplayIndicator(f: unknown, { problems, unknowns }: Out): void {
  const p = 'storedResult.replayIndicator';
  if (typeof f !== 'object' || f === null || !('value' in f))
    return void problems.push({ path: p, message: 'expected a fact { value: { header, value } | null, source }' });
  const { value, source } = f as Record<string, unknown>;
  if (value === UNKNOWN) unknowns.push(p);
  else if (value !== null) {
    const v = value as Record<string, unknown>;
    if (typeof v !== 'object' || str(v.header) || str(v.value))
      problems.push({ path: `${p}.value`, message: 'expected { header, value } or null' });
  }
  if (str(source)) problems.push({ path: `${p}.source`, message: 'every fact cites its source' });
}

/** Validates and returns the card deep-frozen; throws CardValidationError listing every problem. */
export function defineCard<const C extends RetrySafetyCard>(card: C): C {
  const result = validateCard(card);
  if (!result.ok)
    throw new CardValidationError(String((card as { operation?: unknown }).operation ?? '(unnamed)'), result.problems);
  return deepFreeze(card);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** The version of the published card schema; it follows `cardVersion`. */
export const CARD_SCHEMA_VERSION = 1 as const;
/** The `$id` of the published card schema (also the file name under `@retrysafe/contract/schema/`). */
export const CARD_SCHEMA_ID = `urn:retrysafe:retry-safety-card:v${CARD_SCHEMA_VERSION}`;

function schemaOf(shape: Entry, path: string): Record<string, unknown> {
  if (typeof shape === 'function') return { ...(shape.schema ?? {}) };
  if (isSection(shape)) return shape.schema;
  if (isFactShape(shape)) {
    return {
      type: 'object',
      description:
        'A provider fact: its value (or "unknown", which must then be listed in unverified[]) and where it comes from.',
      additionalProperties: false,
      required: ['value', 'source'],
      properties: {
        value: { anyOf: [shape[FACT].schema ?? {}, { const: UNKNOWN }] },
        source: { type: 'string', pattern: '\\S', description: 'a public URL or a file that ships with the project' },
      },
    };
  }
  return {
    type: 'object',
    additionalProperties: false,
    required: Object.keys(shape).filter((k) => !OPTIONAL.has(join(path, k))),
    properties: Object.fromEntries(Object.entries(shape).map(([k, v]) => [k, schemaOf(v, join(path, k))])),
  };
}

/**
 * The JSON Schema (draft 2020-12) of a retry safety card, derived from the shape `validateCard` checks so
 * the two cannot drift; validateCard also checks that unknown facts are listed and `operation`'s prefix.
 */
export function cardJsonSchema(): Readonly<Record<string, unknown>> {
  const body = schemaOf(SHAPE, '') as { properties: Record<string, unknown> };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: CARD_SCHEMA_ID,
    title: `retrysafe retry safety card, version ${CARD_SCHEMA_VERSION}`,
    description:
      'What one provider operation guarantees about re-sends, as data. Every field is required; a provider fact may be "unknown" (listed in unverified[] with its source), and the runner then does not rely on it. Also checked by validateCard: every unknown fact is listed in unverified[], and operation starts with "<provider>.".',
    ...body,
    properties: {
      $schema: { type: 'string', description: 'the schema this card follows (for editors); ignored by the loader' },
      ...body.properties,
    },
  };
}
