import type { JsonSchema } from './adapter.js';
import type { FieldError } from './errors.js';

/**
 * The frame's params check without a schema compiler (the contract has no dependencies): it reads the keywords
 * the adapters use and passes every other, so it never rejects what the runner's full check allows. No values.
 */
export function schemaErrors(schema: JsonSchema, params: unknown): FieldError[] {
  const out: FieldError[] = [];
  check(schema, params, '', out);
  const seen = new Set<string>();
  return out.filter((e) => {
    const k = `${e.path}\u0000${e.message}`;
    return seen.has(k) ? false : (seen.add(k), true);
  });
}

function join(path: string, key: string | number): string {
  return typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key;
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function hasType(v: unknown, t: string): boolean {
  const actual = typeOf(v);
  if (t === 'integer') return actual === 'number' && Number.isInteger(v);
  return actual === t;
}

const isSchema = (s: unknown): s is JsonSchema => typeof s === 'object' && s !== null && !Array.isArray(s);
const valid = (s: unknown, v: unknown): boolean => !isSchema(s) || schemaErrors(s, v).length === 0;

function check(schema: unknown, v: unknown, path: string, out: FieldError[]): void {
  if (schema === false) return void out.push({ path: path || '(root)', message: 'is not allowed' });
  if (!isSchema(schema)) return;
  const at = path || '(root)';
  const s = schema as Record<string, unknown>;
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    if (!types.some((t) => hasType(v, t))) return void out.push({ path: at, message: `must be ${types.join(' or ')}` });
  }
  if (s.const !== undefined && JSON.stringify(s.const) !== JSON.stringify(v))
    out.push({ path: at, message: 'must be the constant value' });
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v)))
    out.push({ path: at, message: 'must be one of the allowed values' });
  if (s.not !== undefined && valid(s.not, v)) out.push({ path: at, message: 'must not match the excluded schema' });
  if (Array.isArray(s.allOf)) for (const sub of s.allOf) check(sub, v, path, out);
  if (Array.isArray(s.anyOf) && !s.anyOf.some((sub) => valid(sub, v)))
    out.push({ path: at, message: 'must match a schema in anyOf' });
  if (Array.isArray(s.oneOf) && s.oneOf.filter((sub) => valid(sub, v)).length !== 1)
    out.push({ path: at, message: 'must match exactly one schema in oneOf' });

  if (typeof v === 'string') {
    const length = [...v].length;
    if (typeof s.minLength === 'number' && length < s.minLength)
      out.push({ path: at, message: `must NOT have fewer than ${s.minLength} characters` });
    if (typeof s.maxLength === 'number' && length > s.maxLength)
      out.push({ path: at, message: `must NOT have more than ${s.maxLength} characters` });
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(v))
      out.push({ path: at, message: `must match pattern "${s.pattern}"` });
  }
  if (typeof v === 'number') {
    if (typeof s.minimum === 'number' && v < s.minimum) out.push({ path: at, message: `must be >= ${s.minimum}` });
    if (typeof s.maximum === 'number' && v > s.maximum) out.push({ path: at, message: `must be <= ${s.maximum}` });
    if (typeof s.exclusiveMinimum === 'number' && v <= s.exclusiveMinimum)
      out.push({ path: at, message: `must be > ${s.exclusiveMinimum}` });
    if (typeof s.exclusiveMaximum === 'number' && v >= s.exclusiveMaximum)
      out.push({ path: at, message: `must be < ${s.exclusiveMaximum}` });
  }
  if (Array.isArray(v)) {
    if (typeof s.minItems === 'number' && v.length < s.minItems)
      out.push({ path: at, message: `must NOT have fewer than ${s.minItems} items` });
    if (typeof s.maxItems === 'number' && v.length > s.maxItems)
      out.push({ path: at, message: `must NOT have more than ${s.maxItems} items` });
    if (isSchema(s.items)) v.forEach((item, i) => check(s.items, item, join(path, i), out));
  }
  if (typeOf(v) === 'object') {
    const obj = v as Record<string, unknown>;
    const keys = Object.keys(obj);
    if (typeof s.minProperties === 'number' && keys.length < s.minProperties)
      out.push({ path: at, message: `must NOT have fewer than ${s.minProperties} properties` });
    if (typeof s.maxProperties === 'number' && keys.length > s.maxProperties)
      out.push({ path: at, message: `must NOT have more than ${s.maxProperties} properties` });
    if (Array.isArray(s.required))
      for (const r of s.required)
        if (typeof r === 'string' && !Object.hasOwn(obj, r)) out.push({ path: join(path, r), message: 'is required' });
    const props = isSchema(s.properties) ? (s.properties as Record<string, unknown>) : {};
    for (const k of keys) {
      if (s.propertyNames !== undefined && !valid(s.propertyNames, k))
        out.push({ path: join(path, k), message: 'is not an allowed property name' });
      if (Object.hasOwn(props, k)) check(props[k], obj[k], join(path, k), out);
      else if (s.patternProperties !== undefined)
        continue; // not read here: never reject what it might allow
      else if (s.additionalProperties === false)
        out.push({ path: join(path, k), message: 'is not a field of this operation' });
      else if (isSchema(s.additionalProperties)) check(s.additionalProperties, obj[k], join(path, k), out);
    }
  }
}
