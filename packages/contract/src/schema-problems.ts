import type { JsonSchema } from './adapter.js';
import { sameJson } from './canonical.js';
import type { FieldError } from './errors.js';

/** A failed keyword's message; `value` is the value checked (for `required`, `propertyNames`, `additionalProperties`: the key). */
export type Say = (node: JsonSchema, value: unknown) => string;

/** ajv's words (the runner's full check), which the frame's params check shares; a caller may word a keyword its own way. */
export const AJV_WORDS = {
  false: () => 'is not allowed',
  type: (s) => `must be ${[s.type].flat().join(' or ')}`,
  const: () => 'must be the constant value',
  enum: () => 'must be one of the allowed values',
  not: () => 'must not match the excluded schema',
  anyOf: () => 'must match a schema in anyOf',
  oneOf: () => 'must match exactly one schema in oneOf',
  minLength: (s) => `must NOT have fewer than ${s.minLength} characters`,
  maxLength: (s) => `must NOT have more than ${s.maxLength} characters`,
  pattern: (s) => `must match pattern "${s.pattern}"`,
  minimum: (s) => `must be >= ${s.minimum}`,
  maximum: (s) => `must be <= ${s.maximum}`,
  exclusiveMinimum: (s) => `must be > ${s.exclusiveMinimum}`,
  exclusiveMaximum: (s) => `must be < ${s.exclusiveMaximum}`,
  minItems: (s) => `must NOT have fewer than ${s.minItems} items`,
  maxItems: (s) => `must NOT have more than ${s.maxItems} items`,
  contains: () => 'must contain at least 1 valid item(s)',
  minProperties: (s) => `must NOT have fewer than ${s.minProperties} properties`,
  maxProperties: (s) => `must NOT have more than ${s.maxProperties} properties`,
  required: () => 'is required',
  propertyNames: () => 'is not an allowed property name',
  additionalProperties: () => 'is not a field of this operation',
} satisfies Record<string, Say>;

/** How one caller reads a JSON Schema: it reads exactly the keywords it words, so each caller keeps its own subset. */
export interface SchemaWording {
  readonly root: string;
  readonly say: Readonly<Partial<Record<keyof typeof AJV_WORDS, Say>>>;
  /** `#/$defs/<name>` targets; without them `$ref` is not read. */
  readonly defs?: Readonly<Record<string, JsonSchema>>;
  readonly conditionals?: boolean;
  /** Never stricter than a full checker (the frame's params check): a `not` or `oneOf` branch holding a keyword this
   * wording does not read is not judged, as reading it leniently would turn into a refusal there. */
  readonly neverStricter?: boolean;
  /** The problems of a failed anyOf / oneOf from each branch's; without it, the keyword's message. */
  readonly branches?: (node: JsonSchema, value: unknown, path: string, results: FieldError[][]) => FieldError[];
}

/** Every problem of `value` against `schema` (the root's path is `wording.root`), without repeats; empty when valid. */
export function schemaProblems(schema: unknown, value: unknown, wording: SchemaWording): FieldError[] {
  const out = problemsAt(schema, value, '', wording);
  return out.length < 2 ? out : [...new Map(out.map((e) => [`${e.path}\u0000${e.message}`, e])).values()];
}

const isNode = (s: unknown): s is JsonSchema => typeof s === 'object' && s !== null && !Array.isArray(s);
export const join = (path: string, key: string | number) =>
  typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key;
/** Equal as JSON values, as the runner's ajv compares `const` and `enum` (a value not JSON: refused there already). */
const same = (a: unknown, b: unknown) => a === b || (typeof a === 'object' && a !== null && sameJson(a, b));

function hasType(v: unknown, t: unknown): boolean {
  if (Array.isArray(t)) return t.some((one) => hasType(v, one));
  if (t === 'integer') return Number.isInteger(v);
  if (t === 'null') return v === null;
  if (t === 'array') return Array.isArray(v);
  if (t === 'object') return isNode(v);
  return typeof v === t;
}

function problemsAt(schema: unknown, value: unknown, path: string, w: SchemaWording, out: FieldError[] = []) {
  walk(schema, value, path, w, out);
  return out;
}

const valid = (s: unknown, v: unknown, path: string, w: SchemaWording) => problemsAt(s, v, path, w).length === 0;

function fail(out: FieldError[], say: Say | undefined, node: JsonSchema, value: unknown, path: string): void {
  if (say) out.push({ path, message: say(node, value) });
}

// Read by walk whatever the wording, or said about a schema rather than checked.
const ALWAYS_READ = new Set([
  ...['properties', 'additionalProperties', 'items', 'allOf', '$schema', '$id', '$comment', '$defs', 'definitions'],
  ...['title', 'description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly'],
]);
// The keywords whose values are schemas (`properties`: a map of them), walked in turn.
const SUBSCHEMAS = new Set([
  ...['additionalProperties', 'items', 'allOf', 'anyOf', 'oneOf', 'not', 'contains', 'propertyNames', 'if', 'then'],
]);

const judgedBy = (w: SchemaWording, schema: unknown) => !w.neverStricter || judged(schema, w);

/** Whether walk reads every keyword of `schema` (and of its subschemas) under this wording. */
function judged(schema: unknown, w: SchemaWording): boolean {
  if (!isNode(schema)) return true;
  for (const [k, sub] of Object.entries(schema)) {
    if (k === '$ref') {
      if (!w.defs) return false;
      continue; // a target is judged where it is walked
    }
    if (k === 'if' || k === 'then') {
      if (!w.conditionals) return false;
    } else if (!ALWAYS_READ.has(k) && !w.say[k as keyof typeof AJV_WORDS]) return false;
    if (k === 'items' && Array.isArray(sub)) return false; // a draft-07 tuple: not read
    const subs = k === 'properties' ? Object.values(sub ?? {}) : SUBSCHEMAS.has(k) ? [sub].flat() : [];
    if (!subs.every((x) => judged(x, w))) return false;
  }
  return true;
}

function walk(schema: unknown, v: unknown, path: string, w: SchemaWording, out: FieldError[]): void {
  const { say } = w;
  const at = path || w.root;
  if (schema === false) return void fail(out, say.false, {}, v, at);
  if (!isNode(schema)) return;
  const s = schema;
  if (typeof s.$ref === 'string' && w.defs) {
    const target = w.defs[s.$ref.replace(/^#\/\$defs\//, '')];
    if (!target) throw new Error(`schema: unresolved $ref ${s.$ref}`);
    walk(target, v, path, w, out);
  }
  if (s.type !== undefined && say.type && !hasType(v, s.type)) return void fail(out, say.type, s, v, at);
  if (s.const !== undefined && say.const && !same(s.const, v)) fail(out, say.const, s, v, at);
  if (Array.isArray(s.enum) && say.enum && !s.enum.some((e) => same(e, v))) fail(out, say.enum, s, v, at);
  if (s.not !== undefined && say.not && judgedBy(w, s.not) && valid(s.not, v, path, w)) fail(out, say.not, s, v, at);
  if (Array.isArray(s.allOf)) for (const sub of s.allOf) walk(sub, v, path, w, out);
  for (const kind of ['anyOf', 'oneOf'] as const) {
    const branches = s[kind];
    if (!Array.isArray(branches) || !(say[kind] || w.branches)) continue;
    if (kind === 'oneOf' && !branches.every((b) => judgedBy(w, b))) continue;
    const ok = (b: unknown) => valid(b, v, path, w);
    if (kind === 'anyOf' ? branches.some(ok) : branches.filter(ok).length === 1) continue;
    if (!w.branches) fail(out, say[kind], s, v, at);
    else {
      const results = branches.map((sub: unknown) => problemsAt(sub, v, path, w));
      out.push(...w.branches(s, v, path, results));
    }
  }
  if (w.conditionals && s.if !== undefined && valid(s.if, v, path, w)) walk(s.then, v, path, w, out);

  if (typeof v === 'string') {
    if (typeof s.minLength === 'number' && say.minLength && [...v].length < s.minLength)
      fail(out, say.minLength, s, v, at);
    if (typeof s.maxLength === 'number' && say.maxLength && [...v].length > s.maxLength)
      fail(out, say.maxLength, s, v, at);
    if (typeof s.pattern === 'string' && say.pattern && !new RegExp(s.pattern, 'u').test(v))
      fail(out, say.pattern, s, v, at);
  } else if (typeof v === 'number') {
    if (typeof s.minimum === 'number' && v < s.minimum) fail(out, say.minimum, s, v, at);
    if (typeof s.maximum === 'number' && v > s.maximum) fail(out, say.maximum, s, v, at);
    if (typeof s.exclusiveMinimum === 'number' && v <= s.exclusiveMinimum) fail(out, say.exclusiveMinimum, s, v, at);
    if (typeof s.exclusiveMaximum === 'number' && v >= s.exclusiveMaximum) fail(out, say.exclusiveMaximum, s, v, at);
  } else if (Array.isArray(v)) {
    if (typeof s.minItems === 'number' && v.length < s.minItems) fail(out, say.minItems, s, v, at);
    if (typeof s.maxItems === 'number' && v.length > s.maxItems) fail(out, say.maxItems, s, v, at);
    if (s.contains !== undefined && say.contains && !v.some((x) => valid(s.contains, x, path, w)))
      fail(out, say.contains, s, v, at);
    if (isNode(s.items)) for (let i = 0; i < v.length; i++) walk(s.items, v[i], join(path, i), w, out);
  } else if (isNode(v)) {
    // Keys in the value's order, then the required ones it lacks (an undefined value counts as absent).
    const keys = Object.keys(v);
    if (typeof s.minProperties === 'number' && keys.length < s.minProperties) fail(out, say.minProperties, s, v, at);
    if (typeof s.maxProperties === 'number' && keys.length > s.maxProperties) fail(out, say.maxProperties, s, v, at);
    const props = isNode(s.properties) ? s.properties : {};
    for (const k of keys) {
      if (s.propertyNames !== undefined && say.propertyNames && !valid(s.propertyNames, k, path, w))
        fail(out, say.propertyNames, s, k, join(path, k));
      if (Object.hasOwn(props, k)) {
        if (v[k] !== undefined) walk(props[k], v[k], join(path, k), w, out);
      } else if (s.patternProperties !== undefined)
        continue; // not read: never reject what it might allow
      else if (s.additionalProperties === false) fail(out, say.additionalProperties, s, k, join(path, k));
      else if (isNode(s.additionalProperties)) walk(s.additionalProperties, v[k], join(path, k), w, out);
    }
    if (Array.isArray(s.required))
      for (const r of s.required)
        if (typeof r === 'string' && (v[r] === undefined || !Object.hasOwn(v, r)))
          fail(out, say.required, s, r, join(path, r));
  }
}
