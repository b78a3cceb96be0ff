// An operation's intent: picked from its params, normalised, digested into its id, and compared with a stored one.
import { fingerprint, sameJson } from './canonical.js';
import { InvalidIdError, InvalidIntentError } from './errors.js';
import { asBusinessOperationId, type BusinessOperationId } from './ids.js';

// `<provider>.<name>`: the name as an MCP tool may be named (a fenced `2fa_enable`); it holds no `:`, which ends it in an id.
const OPERATION_PATTERN = /^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z0-9_.-]+)?$/;

const badIntent = (why: string) => new InvalidIntentError('', why);
/** A path part that names an array item by its index (`lines.0`); any other part crosses every item. */
export const INDEX = /^(0|[1-9]\d*)$/;

/** Why no business-operation id can start with `operation` (`<operation>:` + 32 hex, at most 200 characters), or null. */
export function operationNameProblem(operation: string): string | null {
  if (typeof operation !== 'string' || !OPERATION_PATTERN.test(operation))
    return 'expected <provider>.<name> such as stripe.paymentIntents.create (the name: letters, digits, _ - and .)';
  if (operation.length > 167) return 'longer than 167 characters: its ids would pass the 200 an id may have';
  return null;
}

/** Why `account` cannot name an adapter's account, or null: absent, or a short name of printable characters. */
export function accountProblem(account: unknown): string | null {
  if (account === undefined) return null;
  if (typeof account !== 'string' || account.length === 0) return 'account must be a non-empty string';
  if (account.length > 200) return `account is ${account.length} characters, over 200`;
  if (/[\u0000-\u001f\u007f]/.test(account)) return 'account has control characters';
  return null;
}

/** `<operation>:<32 hex of SHA-256 of the canonical intent>`. */
export function businessOperationId(
  operation: string,
  intent: Record<string, unknown>,
  account?: string,
): BusinessOperationId {
  return intentIdentity(operation, intent, account).id;
}

/** One digest for both; an account, when given, is digested too. */
export function intentIdentity(operation: string, intent: Record<string, unknown>, account?: string) {
  const problem = operationNameProblem(operation);
  if (problem) throw new InvalidIdError('operation name', operation, problem);
  if (typeof intent !== 'object' || intent === null || Array.isArray(intent))
    throw badIntent('intent must be a plain object of the declared intent fields');
  if (Object.keys(intent).length === 0)
    throw badIntent('intent is empty: an id derived from no fields would fold every call into one operation');
  const intentFingerprint = intentFingerprintOf(operation, intent, account);
  const digest = intentFingerprint.slice('sha256:'.length);
  return { id: asBusinessOperationId(`${operation}:${digest.slice(0, 32)}`), intentFingerprint };
}

/** A derived id's digest, and what a caller's id is held to. */
export function intentFingerprintOf(operation: string, intent: Record<string, unknown>, account?: string): string {
  return fingerprint(account === undefined ? { operation, intent } : { operation, intent, account });
}

/** `out[key] = value`, keeping an own `__proto__` key as data: assigned, it is dropped and two intents become one. */
function put(out: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

/** An intent field, or a path beneath one (a member or an item: `blocks.0`, `blocks[0]`). */
export function withinIntent(path: string, intentFields: readonly unknown[]): boolean {
  return intentFields.some(
    (f) => typeof f === 'string' && (path === f || path.startsWith(`${f}.`) || path.startsWith(`${f}[`)),
  );
}

/** A missing intent field is an error (it would fold distinct intents into one); one of `optional` may be left out. */
export function pickIntent(
  params: unknown,
  fields: readonly string[],
  optional: readonly string[] = [],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of fields)
    if (!optional.includes(field) || !leftOut(params, field.split('.')))
      put(out, field, readAt(params, field.split('.'), field));
  return out;
}

/** Whether an optional path is left out on its way through objects; one that meets an array is read as a required one. */
function leftOut(cur: unknown, parts: readonly string[]): boolean {
  for (const part of parts) {
    if (Array.isArray(cur)) return false;
    if (typeof cur !== 'object' || cur === null || !Object.hasOwn(cur, part)) return true;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur === undefined;
}

/** The value at a path; one that crosses an array is every item's, in order (as a rule on that path reads it). */
function readAt(cur: unknown, parts: readonly string[], field: string): unknown {
  if (parts.length === 0) {
    if (cur === undefined) throw new InvalidIntentError(field, 'declared intent field is undefined');
    return cur;
  }
  const [part, ...rest] = parts as [string, ...string[]];
  if (Array.isArray(cur) && !INDEX.test(part)) return cur.map((item) => readAt(item, parts, field));
  if (typeof cur !== 'object' || cur === null || !Object.hasOwn(cur, part))
    throw new InvalidIntentError(field, 'declared intent field is missing from params');
  return readAt((cur as Record<string, unknown>)[part], rest, field);
}

/** Its intent fields, picked, in normal form (what the id digests). */
export function intentOf(
  params: unknown,
  rule: {
    readonly intentFields: readonly string[];
    readonly optionalIntentFields?: readonly string[];
    readonly normalize?: Rules;
  },
): Record<string, unknown> {
  return normalizeIntent(pickIntent(params, rule.intentFields, rule.optionalIntentFields), rule.normalize);
}

const WITH_FRACTION = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+$/;

// Simple case folding, one character for one, as the case-insensitive comparisons providers run (per character):
// never the full folding that makes 'ß' 'ss' or 'ﬁ' 'fi', which would fold two names the provider keeps apart.
function foldChar(c: string): string {
  for (const folded of [c.toUpperCase().toLowerCase(), c.toLowerCase()]) if ([...folded].length === 1) return folded;
  return c;
}

// Steps run in order on every string (and number, for `canonical-number`) at or below the declared path, for
// identity and comparison only: the params sent are the caller's, unchanged.
const STEP = {
  trim: (s: string) => s.trim(),
  'collapse-whitespace': (s: string) => s.replace(/\s+/gu, ' '),
  nfkc: (s: string) => s.normalize('NFKC'),
  'case-fold': (s: string) => Array.from(s, foldChar).join(''),
  'canonical-number': (s: string) => canonicalDecimal(s) ?? s,
  // Only trailing zeros of this one spelling's fraction (Graph returns 12:00:00.5 as 12:00:00.5000000): a zone, another
  // precision or another fraction stays as written.
  'datetime-zero-fraction': (s: string) => (WITH_FRACTION.test(s) ? s.replace(/\.?0+$/, '') : s),
};
/** A step on the value at the path itself: an empty array there reads as left out, where the provider stores a left-out
 * collection as []. */
const EMPTY_AS_ABSENT = 'empty-array-as-absent';
export type NormalizationStep = keyof typeof STEP | typeof EMPTY_AS_ABSENT;

export const NORMALIZATION_STEPS = [...Object.keys(STEP), EMPTY_AS_ABSENT] as readonly NormalizationStep[];
/** The steps that act on the value at the path, not on strings: only beneath an intent field, never on an array item. */
export const AT_PATH_STEPS: readonly NormalizationStep[] = [EMPTY_AS_ABSENT];

/** The steps that can merge values a provider may keep apart (`Ref` and `ref`, `[]` and left out): declared only with its `evidence`. */
export const MERGING_STEPS: readonly NormalizationStep[] = NORMALIZATION_STEPS.filter((step) => step !== 'trim');

export interface FieldNormalization {
  readonly field: string;
  readonly steps: readonly NormalizationStep[];
  readonly source: string;
  /** Required with one of MERGING_STEPS or a providerDefault: the provider's https page that treats such values as one. */
  readonly evidence?: string;
  /** What the provider stores when a create leaves the field out: after the steps, a value equal to it reads as left out. */
  readonly providerDefault?: unknown;
}

export interface ParamComparison extends Omit<FieldNormalization, 'steps'> {
  readonly compare: 'exact' | 'normalized';
  readonly steps?: readonly NormalizationStep[];
}

const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;
// Exponents within this reach are written out in plain digits; beyond it the canonical text keeps `e`.
const PLAIN_REACH = 40n;

/** The exact decimal a numeral spells in one canonical text (`"+1.5e0"` is `"1.5"`), or null; no float on the way. */
export function canonicalDecimal(text: string): string | null {
  const m = DECIMAL.exec(text.trim());
  if (m === null) return null;
  const [, sign, whole = '', fraction = '', exponent = '0'] = m;
  if (whole === '' && fraction === '') return null;
  const all = (whole + fraction).replace(/^0+/, '');
  if (all === '') return '0';
  const digits = all.replace(/0+$/, '');
  // value = digits × 10^exp
  const exp = BigInt(exponent) - BigInt(fraction.length) + BigInt(all.length - digits.length);
  const neg = sign === '-' ? '-' : '';
  if (exp >= 0n && exp <= PLAIN_REACH) return neg + digits + '0'.repeat(Number(exp));
  const point = BigInt(digits.length) + exp; // digits before the decimal point
  if (exp < 0n && point > -PLAIN_REACH) {
    if (point > 0n) return neg + digits.slice(0, Number(point)) + '.' + digits.slice(Number(point));
    return neg + '0.' + '0'.repeat(Number(-point)) + digits;
  }
  return `${neg}${digits}e${exp}`;
}

function stepString(s: string, steps: readonly NormalizationStep[]): string {
  return steps.reduce((out, step) => {
    if (step === EMPTY_AS_ABSENT) return out;
    if (!Object.hasOwn(STEP, step))
      throw new InvalidIntentError('', `unknown normalisation step ${JSON.stringify(step)}`);
    return STEP[step](out);
  }, s);
}

/** What reads as the field left out at a rule's own path: [] under empty-array-as-absent, the provider's default. */
function absentTest(rule: Pick<FieldNormalization, 'steps' | 'providerDefault'>): Absent {
  const empty = rule.steps.includes(EMPTY_AS_ABSENT);
  const hasDefault = Object.hasOwn(rule, 'providerDefault');
  if (!empty && !hasDefault) return null;
  const normal = hasDefault ? applySteps(rule.providerDefault, rule.steps) : undefined;
  return (v) => (empty && Array.isArray(v) && v.length === 0) || (hasDefault && sameJson(v, normal));
}
type Absent = ((value: unknown) => boolean) | null;

function applySteps(value: unknown, steps: readonly NormalizationStep[]): unknown {
  if (typeof value === 'string') return stepString(value, steps);
  // A number is its shortest round-trip text (what canonical JSON writes), then exact from there.
  if (typeof value === 'number')
    return steps.includes('canonical-number') && Number.isFinite(value)
      ? stepString(String(value), ['canonical-number'])
      : value;
  if (Array.isArray(value)) return value.map((v) => applySteps(v, steps));
  // Copied as canonical JSON reads them (a prototype-less object too): normalizeParams changes only its copy.
  const proto = typeof value === 'object' && value !== null ? Object.getPrototypeOf(value) : undefined;
  if (proto === Object.prototype || proto === null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as object)) put(out, k, applySteps(v, steps));
    return out;
  }
  return value;
}

type Rules = readonly Pick<FieldNormalization, 'field' | 'steps' | 'providerDefault'>[];
/** `steps` null: an `exact` comparison, which keeps its path as written even beneath a normalised one. */
type PathRule = {
  readonly parts: readonly string[];
  readonly steps: readonly NormalizationStep[] | null;
  readonly absent?: Absent;
};

/** One field's rules as paths into its value: a rule at or above it applies to all of it, one beneath at the rest. */
function rulesWithin(field: string, rules: Rules): PathRule[] {
  const out: PathRule[] = [];
  for (const r of rules) {
    // At or above the field: its string steps reach all of it; what acts at the rule's own path does not (an intent
    // field left out is refused, so no value can read as absent there).
    if (field === r.field || field.startsWith(`${r.field}.`))
      out.push({ parts: [], steps: r.steps.filter((s) => !AT_PATH_STEPS.includes(s)) });
    else if (r.field.startsWith(`${field}.`))
      out.push({ parts: r.field.slice(field.length + 1).split('.'), steps: r.steps, absent: absentTest(r) });
  }
  return out;
}

/** `value` in normal form: a deep copy when anything applies; rules outermost first, else in the order declared. */
function normalizeAt(value: unknown, rules: readonly PathRule[]): unknown {
  const active = rules.filter((r) => r.steps === null || r.steps.length > 0 || r.absent);
  if (active.length === 0) return value;
  const holder = { value: applySteps(value, []) }; // a deep copy
  for (const r of active.toSorted((a, b) => a.parts.length - b.parts.length))
    if (r.steps === null) restoreAt(holder, { value }, ['value', ...r.parts]);
    else applyAt(holder, ['value', ...r.parts], r.steps, r.absent ?? null);
  return holder.value;
}

export function normalizeIntent(intent: Record<string, unknown>, rules: Rules | undefined): Record<string, unknown> {
  // Not a plain object (a string, an array): left as given, for intentIdentity to refuse as it does without rules.
  if (!rules || rules.length === 0 || typeof intent !== 'object' || intent === null || Array.isArray(intent))
    return intent;
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(intent)) put(out, field, normalizeAt(value, rulesWithin(field, rules)));
  return out;
}

export type ParamsRule = Pick<FieldNormalization, 'field' | 'providerDefault'> &
  Partial<Pick<ParamComparison, 'steps' | 'compare'>>;

/** By the same rules as normalizeIntent: a deep copy when anything applies. */
export function normalizeParams(params: unknown, rules: readonly ParamsRule[]): unknown {
  if (typeof params !== 'object' || params === null) return params;
  const paths = rules.map((r) => {
    const steps = r.compare === 'exact' ? null : (r.steps ?? []);
    return { parts: r.field.split('.'), steps, absent: steps && absentTest({ ...r, steps }) };
  });
  return normalizeAt(params, paths);
}

/** In place; a path that is not there is skipped, one that crosses an array without an index reaches every item. */
function applyAt(holder: unknown, parts: readonly string[], steps: readonly NormalizationStep[], absent: Absent): void {
  const [part, ...rest] = parts as [string, ...string[]];
  if (Array.isArray(holder) && !INDEX.test(part)) {
    for (const item of holder) applyAt(item, parts, steps, absent);
    return;
  }
  if (typeof holder !== 'object' || holder === null || !Object.hasOwn(holder, part)) return;
  const h = holder as Record<string, unknown>;
  if (rest.length > 0) {
    applyAt(h[part], rest, steps, absent);
    return;
  }
  const value = applySteps(h[part], steps);
  // An array item is never dropped: that would shift the items after it.
  if (!Array.isArray(holder) && absent?.(value)) delete h[part];
  else h[part] = value;
}

/** Puts back (a copy of) what `original` holds along the path, in `copy`, its normalised copy. */
function restoreAt(copy: unknown, original: unknown, parts: readonly string[]): void {
  const [part, ...rest] = parts as [string, ...string[]];
  if (typeof copy !== 'object' || copy === null || typeof original !== 'object' || original === null) return;
  if (Array.isArray(copy) && !INDEX.test(part)) {
    for (const [i, item] of copy.entries()) restoreAt(item, (original as unknown[])[i], parts);
    return;
  }
  if (!Object.hasOwn(copy, part) || !Object.hasOwn(original, part)) return;
  const c = copy as Record<string, unknown>;
  const o = original as Record<string, unknown>;
  if (rest.length === 0) c[part] = applySteps(o[part], []);
  else restoreAt(c[part], o[part], rest);
}

/** The dot paths (`[i]` for items) where two JSON-like values differ as canonical JSON; never the values. */
export function differingPaths(a: unknown, b: unknown, path = ''): string[] {
  const plain = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
  if (plain(a) && plain(b)) {
    const ao = a as Record<string, unknown>;
    const bo = b as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(ao), ...Object.keys(bo)])]
      .filter((k) => ao[k] !== undefined || bo[k] !== undefined)
      .sort();
    return keys.flatMap((k) => differingPaths(ao[k], bo[k], path ? `${path}.${k}` : k));
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length)
    return a.flatMap((x, i) => differingPaths(x, b[i], `${path}[${i}]`));
  return sameJson(a ?? null, b ?? null) ? [] : [path || '(root)'];
}

/** `orderRef: trim, collapse-whitespace`. */
export function describeNormalization(rules: readonly (Partial<ParamComparison> & { field: string })[] | undefined) {
  if (!rules || rules.length === 0) return 'none: compared exactly as written';
  const told = (r: (typeof rules)[number]) => [
    ...(r.steps ?? []),
    ...(Object.hasOwn(r, 'providerDefault') ? [`default ${JSON.stringify(r.providerDefault)}`] : []),
  ];
  return rules.map((r) => `${r.field}: ${r.compare === 'exact' ? 'exact' : told(r).join(', ') || 'exact'}`).join('; ');
}
