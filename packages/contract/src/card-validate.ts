import type { JsonSchema as Schema } from './adapter.js';
import { CARD_VALUES, type RetrySafetyCard, UNKNOWN } from './card.js';
import { budgetProblems } from './card-rules.js';
import { DURATION_PATTERN, durationMs, isDuration } from './duration.js';
import { CardValidationError, type FieldError } from './errors.js';
import { charsetPattern } from './ids.js';
import {
  AT_PATH_STEPS,
  INDEX,
  MERGING_STEPS,
  NORMALIZATION_STEPS,
  operationNameProblem,
  withinIntent,
} from './intent.js';
import { AJV_WORDS, join, type SchemaWording, schemaProblems } from './schema-problems.js';

export type CardProblem = FieldError;

const text = { type: 'string', minLength: 1 };
const str = { type: 'string', pattern: '\\S' };
const oneOf = (...values: readonly unknown[]): Schema =>
  values.length === 1 ? { const: values[0] } : { enum: values };
const duration = { type: 'string', pattern: DURATION_PATTERN };
const posInt = { type: 'integer', minimum: 1 };
const bool = { type: 'boolean' };
const nullable = (s: Schema): Schema => ({ anyOf: [s, { type: 'null' }] });
const strings = { type: 'array', items: text };

/** An object of exactly these properties, each required unless its name ends in `?` (as in the card's type). */
const obj = (fields: Record<string, Schema>): Schema => ({
  type: 'object',
  additionalProperties: false,
  required: Object.keys(fields).filter((k) => !k.endsWith('?')),
  properties: Object.fromEntries(Object.entries(fields).map(([k, s]) => [k.replace(/\?$/, ''), s])),
});

const fact = (value: Schema): Schema => ({
  ...obj({
    value: { anyOf: [value, { const: UNKNOWN }] },
    source: { ...str, description: 'a public URL or a file that ships with the project' },
  }),
  description:
    'A provider fact: its value (or "unknown", which must then be listed in unverified[]) and where it comes from.',
});

const providerDefault = {
  description:
    "the value the provider stores when a create leaves the field out: after the steps, a value equal to it reads as the field left out (a create, send or charge only; never an intent field itself; it fits the operation's params schema there)",
};

/** A normalisation or comparison rule: a merging step (case, inner white space, …) needs the provider's evidence. */
function ruleSchema(extra: Record<string, Schema>, stepsKey: 'steps' | 'steps?'): Schema {
  const evidence = {
    type: 'string',
    pattern: '^https://\\S+$',
    description: "the provider's page that treats the values a merging step folds as one",
  };
  const steps = {
    type: 'array',
    items: { enum: [...NORMALIZATION_STEPS] },
    description:
      'applied in order to every string at or below the field; empty-array-as-absent reads an empty array at the field itself as the field left out',
  };
  const needsEvidence = { required: ['evidence'], properties: { evidence } };
  return {
    ...obj({ field: text, ...extra, [stepsKey]: steps, source: text, 'evidence?': evidence }),
    allOf: [
      {
        if: { required: ['steps'], properties: { steps: { type: 'array', contains: { enum: [...MERGING_STEPS] } } } },
        then: needsEvidence,
      },
      { if: { required: ['providerDefault'], properties: { providerDefault } }, then: needsEvidence },
    ],
  };
}

const replayIndicator = {
  ...obj({
    value: { anyOf: [{ const: 'unknown' }, { type: 'null' }, obj({ header: text, value: text })] },
    source: text,
  }),
  description: 'how the provider marks a replayed answer (e.g. Idempotent-Replayed: true), null when it sends none',
};

/** The card's shape; `validateCard` checks it and `cardJsonSchema` publishes it, so the two cannot drift. */
const CARD = obj({
  cardVersion: oneOf(1),
  provider: str,
  operation: str,
  sideEffect: obj({
    kind: fact(oneOf(...CARD_VALUES.sideEffect)),
    idempotentByNature: fact(bool),
    rejectionMayCreate: fact(bool),
  }),
  businessOperationId: obj({
    rule: str,
    intentFields: { ...strings, minItems: 1 },
    'optionalIntentFields?': {
      ...strings,
      description: 'intent fields a call may leave out (never an array item): left out, the intent has no such field',
    },
    'normalize?': { type: 'array', items: ruleSchema({ 'providerDefault?': providerDefault }, 'steps') },
  }),
  ids: obj({ run: str, attempt: str, request: fact(str) }),
  providerKey: obj({
    travels: fact(oneOf(...CARD_VALUES.travels)),
    name: fact(nullable(str)),
    maxLength: fact(nullable(posInt)),
    charset: fact(nullable(str)),
    scope: fact(str),
    'caseSensitive?': fact(bool),
  }),
  keyReuse: fact(str),
  parameterMatching: fact(oneOf(...CARD_VALUES.parameterMatching)),
  storedResult: obj({
    semantics: fact(oneOf(...CARD_VALUES.storedResult)),
    includesErrors: fact(bool),
    'replayIndicator?': replayIndicator,
  }),
  lookup: obj({
    method: fact(oneOf(...CARD_VALUES.lookup)),
    consistencyDelay: fact(nullable(duration)),
    'lateApplyBound?': fact(duration),
  }),
  retention: obj({ minimum: fact(nullable(duration)) }),
  concurrency: fact(oneOf(...CARD_VALUES.concurrency)),
  retryableErrors: fact(strings),
  nonRetryableErrors: fact(strings),
  backoff: obj({
    strategy: oneOf('exponential-full-jitter'),
    base: duration,
    cap: duration,
    retryAfterCap: duration,
  }),
  limits: obj({ maxAttempts: posInt, maxElapsed: duration, lookupWindow: duration, 'clockSkewMargin?': duration }),
  retryLayer: obj({ layer: oneOf('runner'), sdkRetries: oneOf('disabled'), how: str }),
  reconciler: str,
  handoff: obj({ condition: str, destination: str }),
  duplicateTest: str,
  receipts: str,
  unverified: { type: 'array', items: obj({ field: str, condition: str, source: str }) },
  'paramComparison?': {
    type: 'array',
    description: 'how params other than the intent are compared with the stored ones (default exact)',
    items: ruleSchema({ compare: { enum: ['exact', 'normalized'] }, 'providerDefault?': providerDefault }, 'steps?'),
  },
});

const TYPES: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  boolean: 'true or false',
  array: 'an array',
  object: 'an object',
};
const PATTERNS: Record<string, string> = {
  '\\S': 'a non-empty string',
  [DURATION_PATTERN]: 'a duration such as 500ms, 30s, 5m, 24h, 7d',
};
const MISSING = 'every field is required; write "unknown" with a source when it is not known';
const show = (values: readonly unknown[]) => values.map((x) => JSON.stringify(x)).join(', ');
const schemas = (list: unknown) => (Array.isArray(list) ? (list as Schema[]) : []);

/** "unknown" last; undefined when its value is open. */
function factChoices(fact: Schema): string | undefined {
  const [value] = schemas(((fact.properties ?? {}) as Record<string, Schema>).value?.anyOf);
  const closed =
    value?.type === 'boolean' ? [true, false] : (value?.enum ?? (value?.const !== undefined && [value.const]));
  return Array.isArray(closed) ? show([...closed, UNKNOWN]) : undefined;
}

const WORDING: SchemaWording = {
  root: '(card)',
  conditionals: true,
  say: {
    type: (s) => `expected ${TYPES[String(s.type)]}`,
    const: (s) => `expected one of ${show([s.const])}`,
    enum: (s) => `expected one of ${show(s.enum as unknown[])}`,
    minLength: () => 'expected a non-empty string',
    pattern: (s) => `expected ${s.description ?? PATTERNS[String(s.pattern)] ?? `a string matching ${s.pattern}`}`,
    minimum: (s) => `expected a number ≥ ${s.minimum}`,
    minItems: (s) => `expected at least ${s.minItems} item(s)`,
    contains: () => 'expected a listed item',
    required: (s, key) => {
      const sub = (s.properties as Record<string, Schema>)[key as string]!;
      if (sub.type === 'string') return `missing (${sub.description ?? MISSING})`;
      const choices = factChoices(sub);
      return `missing (${MISSING}${choices ? `; its value is one of ${choices}` : ''})`;
    },
    additionalProperties: () => 'unexpected field',
  },
  // A failed anyOf is reported against its alternative that is neither a constant nor null, at the anyOf's path.
  branches: (s, _v, path, results) => {
    const main = schemas(s.anyOf).findIndex((b) => b.const === undefined && b.type !== 'null');
    return (results[main] ?? []).map((p) => ({
      path: path || '(card)',
      message: p.path === path ? p.message : `${p.path.slice(path.length).replace(/^\./, '')}: ${p.message}`,
    }));
  },
};

/** An anyOf with a `{ const: "unknown" }` branch holds it. */
function unknownsOf(s: Schema, v: unknown, path: string, out: string[]): string[] {
  if (v === UNKNOWN && schemas(s.anyOf).some((b) => b.const === UNKNOWN)) out.push(path.replace(/\.value$/, ''));
  else if (typeof v === 'object' && v !== null && !Array.isArray(v))
    for (const [k, sub] of Object.entries((s.properties ?? {}) as Record<string, Schema>))
      unknownsOf(sub, (v as Record<string, unknown>)[k], join(path, k), out);
  return out;
}

export interface CardValidation {
  readonly ok: boolean;
  readonly problems: readonly CardProblem[];
  readonly unknowns: readonly string[];
}

export function validateCard(card: unknown): CardValidation {
  const problems = schemaProblems(CARD, card, WORDING);
  const unknowns = unknownsOf(CARD, card, '', []);
  if (typeof card === 'object' && card !== null) checkBeyondSchema(card as Record<string, unknown>, problems, unknowns);
  return { ok: problems.length === 0, problems, unknowns };
}

const hasSteps = (v: unknown) =>
  Array.isArray(v) && v.length > 0 && v.every((s) => (NORMALIZATION_STEPS as readonly unknown[]).includes(s));
const STEPS = `a non-empty list of ${NORMALIZATION_STEPS.join(', ')}`;

function eachRule(list: unknown, path: string, check: (rule: Record<string, unknown>, at: string) => void): void {
  if (!Array.isArray(list)) return;
  for (const [i, r] of list.entries()) if (typeof r === 'object' && r !== null) check(r, `${path}[${i}]`);
}

/** A key charset as the runner and adapters read it (`^[body]*$`): a class body that compiles, neither negated nor
 * closed early by an unescaped `]`. */
function isClassBody(body: string): boolean {
  if (body === '' || body.startsWith('^') || /(^|[^\\])(\\\\)*\]/.test(body)) return false;
  try {
    charsetPattern(body);
    return true;
  } catch {
    return false;
  }
}

const PATH = 'expected a dot path such as lines.0.ref (one item) or lines.ref (every item), without [i] or empty parts';
/** A field path as pickIntent and the normalisation read it: names joined by dots, an item by its index (`lines.0`). */
const isDotPath = (path: unknown) =>
  typeof path !== 'string' || path.split('.').every((part) => part !== '' && !/\[\d*\]/.test(part));

/** What the schema cannot say: the operation's prefix, unknown facts listed, a key charset, rules under intent fields. */
function checkBeyondSchema(card: Record<string, unknown>, problems: CardProblem[], unknowns: string[]): void {
  const bad = (path: string, message: string) => problems.push({ path, message });
  const { operation, provider, unverified } = card;
  if (typeof operation === 'string' && typeof provider === 'string' && !operation.startsWith(`${provider}.`))
    bad('operation', `must start with the provider name "${provider}."`);
  // Every id derived for the operation starts with its name.
  const named = typeof operation === 'string' ? operationNameProblem(operation) : null;
  if (named) bad('operation', named);
  if (Array.isArray(unverified)) {
    const listed = new Set(unverified.map((u: { field?: unknown } | null) => u?.field));
    for (const path of unknowns.filter((p) => !listed.has(p)))
      bad(path, 'value is "unknown" but the field is not listed in unverified[] with its source');
  }
  const charset = (card.providerKey as { charset?: { value?: unknown } } | undefined)?.charset?.value;
  if (typeof charset === 'string' && charset !== UNKNOWN && !isClassBody(charset))
    bad(
      'providerKey.charset.value',
      'expected the body of a character class, e.g. A-Za-z0-9_- (ranges in order, not negated, ] escaped)',
    );
  checkBudget(card, problems);
  const bo = (card.businessOperationId ?? {}) as Record<string, unknown>;
  const kind = (card.sideEffect as { kind?: { value?: unknown } } | undefined)?.kind?.value;
  const intentFields: unknown[] = Array.isArray(bo.intentFields) ? bo.intentFields : [];
  /** Either list: a default the operation can have; nothing read as left out names an array item (the rest would move). */
  const checkLeftOut = (r: Record<string, unknown>, p: string) => {
    const why = hasDefault(r) && defaultProblem(r, kind, intentFields);
    if (why) bad(`${p}.providerDefault`, why);
    const step = atPath(r) ?? (hasDefault(r) ? 'providerDefault' : undefined);
    if (step && typeof r.field === 'string' && INDEX.test(r.field.split('.').at(-1) ?? ''))
      bad(`${p}.field`, `${step} names a field, not an array item (${r.field})`);
  };
  for (const [i, f] of intentFields.entries()) if (!isDotPath(f)) bad(`businessOperationId.intentFields[${i}]`, PATH);
  // Never an array item: leaving a field out of one item would merge two lists (pickIntent reads a path that meets an
  // array as a required one).
  for (const [i, f] of (Array.isArray(bo.optionalIntentFields) ? bo.optionalIntentFields : []).entries())
    if (!intentFields.includes(f) || String(f).split('.').some(isIndex))
      bad(
        `businessOperationId.optionalIntentFields[${i}]`,
        'expected one of the intent fields, not an array item (no index in its path)',
      );
  eachRule(bo.normalize, 'businessOperationId.normalize', (r, p) => {
    const { field } = r;
    if (!isDotPath(field)) bad(`${p}.field`, PATH);
    else if (typeof field === 'string' && !withinIntent(field, intentFields))
      bad(`${p}.field`, 'expected one of the intent fields (or a path beneath one)');
    if (Array.isArray(r.steps) && !stepsListed(r)) bad(`${p}.steps`, `expected ${STEPS}`);
    else if (atPath(r) && intentFields.includes(field))
      bad(
        `${p}.steps`,
        `${atPath(r)} goes beneath an intent field, not on one: an intent field left out is refused, so [] cannot mean the same`,
      );
    checkLeftOut(r, p);
  });
  eachRule(card.paramComparison, 'paramComparison', (r, p) => {
    const { field } = r;
    if (!isDotPath(field)) bad(`${p}.field`, PATH);
    // The comparison applies the intent's own rules after these, so such a rule could not hold.
    else if (typeof field === 'string' && withinIntent(field, intentFields))
      bad(
        `${p}.field`,
        'is (or is beneath) an intent field: intent fields are compared by businessOperationId.normalize',
      );
    if (r.compare === 'normalized' && !stepsListed(r))
      bad(`${p}.steps`, `a normalized comparison lists its steps: ${STEPS}`);
    checkLeftOut(r, p);
  });
}

const isIndex = (part: string) => INDEX.test(part);
const atPath = ({ steps }: Record<string, unknown>) =>
  Array.isArray(steps) ? AT_PATH_STEPS.find((s) => steps.includes(s)) : undefined;

const hasDefault = (r: object) => Object.hasOwn(r, 'providerDefault');
/** A rule lists its steps, unless it only names a provider's default (no steps, or []). */
const stepsListed = ({ steps, ...r }: Record<string, unknown>) =>
  hasSteps(steps) || (hasDefault(r) && (steps === undefined || (Array.isArray(steps) && steps.length === 0)));
const DEFAULT_KINDS: readonly unknown[] = ['create', 'send', 'charge'];

/** Why a rule cannot name a provider's default, or null: an update leaves a field left out as it was, so the two
 * spellings are two intents there. */
function defaultProblem(r: Record<string, unknown>, kind: unknown, intentFields: unknown[]): string | null {
  if (r.compare === 'exact') return 'an exact comparison reads no default: compare normalized';
  if (!DEFAULT_KINDS.includes(kind))
    return `only on a create, send or charge: on a ${JSON.stringify(kind)} operation a field left out is not given the provider's default (an update leaves it as it was)`;
  return intentFields.includes(r.field)
    ? 'goes beneath an intent field, not on one: an intent field left out is refused'
    : null;
}

/** A part that is not an index crosses an array's items. */
function schemaAt(schema: unknown, parts: readonly string[]): Schema | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const s = schema as Schema;
  const [part, ...rest] = parts;
  if (part === undefined) return s;
  if (s.type === 'array') return schemaAt(s.items, INDEX.test(part) ? rest : parts);
  const props = (s.properties ?? {}) as Record<string, unknown>;
  return Object.hasOwn(props, part) ? schemaAt(props[part], rest) : undefined;
}

/** Where a card's provider default does not fit the operation's params schema at its field; defineAdapter refuses it. */
export function defaultProblems(card: RetrySafetyCard, paramsSchema: Schema): CardProblem[] {
  const out: CardProblem[] = [];
  const rules = [
    ...(card.businessOperationId.normalize ?? []).map((r, i) => [r, `businessOperationId.normalize[${i}]`] as const),
    ...(card.paramComparison ?? []).map((r, i) => [r, `paramComparison[${i}]`] as const),
  ];
  for (const [r, rulePath] of rules) {
    if (!hasDefault(r)) continue;
    const path = `${rulePath}.providerDefault`;
    const schema = schemaAt(paramsSchema, r.field.split('.'));
    if (schema === undefined)
      out.push({ path, message: `the params schema declares no ${r.field}: declare it, so the default is checked` });
    else
      for (const e of schemaProblems(schema, r.providerDefault, { root: r.field, say: AJV_WORDS, neverStricter: true }))
        out.push({ path, message: `does not fit the params schema: ${e.path} ${e.message}` });
  }
  return out;
}

const BUDGET_PATHS = { maxElapsedMs: 'limits.maxElapsed', capMs: 'backoff.cap' } as const;

/** The runner's policy starts from the card's backoff and limits: the card must not ask for one it refuses. */
function checkBudget(card: Record<string, unknown>, problems: CardProblem[]): void {
  const { backoff, limits } = card as { backoff?: Record<string, unknown>; limits?: Record<string, unknown> };
  const [base, cap, maxElapsed] = [backoff?.base, backoff?.cap, limits?.maxElapsed];
  if (!isDuration(base) || !isDuration(cap) || !isDuration(maxElapsed)) return; // the schema reports those
  const budget = { baseMs: durationMs(base), capMs: durationMs(cap), maxElapsedMs: durationMs(maxElapsed) };
  for (const { field, why } of budgetProblems(budget)) problems.push({ path: BUDGET_PATHS[field], message: why });
}

/** Deep-frozen, or a CardValidationError listing every problem. */
export function defineCard<const C extends RetrySafetyCard>(card: C): C {
  return checkedCard(card, String(card.operation ?? '(unnamed)'));
}

function checkedCard<C extends RetrySafetyCard>(card: C, name: string): C {
  const { ok, problems } = validateCard(card);
  if (!ok) throw new CardValidationError(name, problems);
  return deepFreeze(card);
}

/** From JSON or YAML data, without its editor `$schema`. */
export function parseCard(data: unknown, origin = '(card data)'): RetrySafetyCard {
  const refuse = (path: string, message: string) => new CardValidationError(origin, [{ path, message }]);
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw refuse('(card)', 'expected an object (a retry safety card)');
  const { $schema: _schema, ...rest } = data as Record<string, unknown>;
  const version = rest.cardVersion;
  if (version === undefined) throw refuse('cardVersion', `missing: write cardVersion: ${CARD_SCHEMA_VERSION}`);
  if (version !== CARD_SCHEMA_VERSION)
    throw refuse(
      'cardVersion',
      `cardVersion ${JSON.stringify(version)} is not supported here (this retrysafe reads version ${CARD_SCHEMA_VERSION})`,
    );
  const card = structuredClone(rest) as unknown as RetrySafetyCard;
  return checkedCard(card, typeof rest.operation === 'string' ? rest.operation : origin);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

export const CARD_SCHEMA_VERSION = 1 as const;
export const CARD_SCHEMA_ID = `urn:retrysafe:retry-safety-card:v${CARD_SCHEMA_VERSION}`;

/** The one `validateCard` checks. */
export function cardJsonSchema(): Readonly<Record<string, unknown>> {
  return structuredClone({
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: CARD_SCHEMA_ID,
    title: `retrysafe retry safety card, version ${CARD_SCHEMA_VERSION}`,
    description:
      'What one provider operation guarantees about re-sends, as data. Every field is required; a provider fact may be "unknown" (listed in unverified[] with its source), and the runner then does not rely on it. Also checked by validateCard: every unknown fact is listed in unverified[], operation is "<provider>.<name>" (the name: letters, digits, _ - and .), at most 167 characters, providerKey.charset is the body of a character class, and field paths are dot paths (lines.0.ref for one item, lines.ref for every item; no [i]).',
    ...CARD,
    properties: {
      $schema: { type: 'string', description: 'the schema this card follows (for editors); ignored by the loader' },
      ...(CARD.properties as Schema),
    },
  });
}
