import type { FieldError, JsonSchema } from '@retrysafe/contract';
import { type SchemaWording, schemaProblems } from '@retrysafe/contract/provider';
import { detectSensitive } from '@retrysafe/core/internal';
import { suggest } from '@retrysafe/core/suggest';
import { safeMessage } from './credentials.js';

// The config's JSON Schema check in its words: an unknown key or value gets a "did you mean" when a known one is
// close, and a value is echoed only when it is short and plain.

const typeOf = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v;
const typesOf = (n: JsonSchema) => [n.type ?? []].flat() as string[];
/** Whether every string in `v` (an object's keys too) is a short, plain token that detects as nothing. */
const plain = (v: unknown): boolean =>
  typeof v === 'string'
    ? /^[A-Za-z0-9_.:-]{0,32}$/.test(v) && detectSensitive(v) === null
    : typeof v !== 'object' || v === null || Object.entries(v).every(([k, x]) => plain(k) && plain(x));
const show = (v: unknown): string => {
  // Only short, plain tokens are echoed (an enum typo like "FULLL", a list of them); anything else may be a credential.
  if (!plain(v) || (typeof v === 'object' && detectSensitive(JSON.stringify(v)) !== null))
    return 'the value (not shown)';
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? s.slice(0, 57) + '…' : s;
};
const oneOfShown = (values: readonly unknown[], v: unknown) =>
  `expected one of ${values.map(show).join(', ')}, got ${show(v)}${typeof v === 'string' ? suggest(v, values.map(String)) : ''}`;
const describe = (n: JsonSchema) => (n.const !== undefined ? show(n.const) : n.type ? typesOf(n).join('/') : 'a value');

const WORDING: Omit<SchemaWording, 'defs'> = {
  root: '(top level)',
  say: {
    type: (n, v) =>
      `expected ${typesOf(n).join(' or ')}, got ${typeOf(v) === 'integer' ? 'number' : typeOf(v)} ${show(v)}`,
    const: (n, v) => `expected ${show(n.const)}, got ${show(v)}`,
    enum: (n, v) => oneOfShown(n.enum as unknown[], v),
    minLength: () => 'must not be empty',
    // Not repeated: a field with a pattern (an env-var name, a URL) is where a pasted secret lands.
    pattern: (n) =>
      `the value does not have the expected form${n.description ? ` (${n.description})` : ''}; it is not shown`,
    minimum: (n, v) => `must be ≥ ${n.minimum}, got ${v}`,
    exclusiveMinimum: (n, v) => `must be > ${n.exclusiveMinimum}, got ${v}`,
    minItems: ({ minItems: m }) => `needs at least ${m} item${m === 1 ? '' : 's'}`,
    minProperties: ({ minProperties: m }) => `needs at least ${m} entr${m === 1 ? 'y' : 'ies'}`,
    required: () => 'required',
    additionalProperties: (n, k) => {
      const known = Object.keys((n.properties ?? {}) as object);
      return `unknown key${suggest(k as string, known)}${known.length <= 12 ? ` — known: ${known.join(', ')}` : ''}`;
    },
  },
};

/** Problems of `value` as `path: message` lines; `#/$defs/...` references resolve in `schema`. Empty when valid. */
export function checkSchema(value: unknown, schema: JsonSchema): string[] {
  const defs = (schema.$defs ?? {}) as Record<string, JsonSchema>;
  const resolve = (b: JsonSchema) => (typeof b.$ref === 'string' ? defs[b.$ref.replace(/^#\/\$defs\//, '')]! : b);
  const wording: SchemaWording = {
    ...WORDING,
    defs,
    branches: (n, v, path, results) => branchProblems(n, v, path, results, resolve),
  };
  // A path holds the file's keys: a credential pasted as one is blanked as in any message.
  return schemaProblems(schema, value, wording).map((p) => `${safeMessage(p.path)}: ${p.message}`);
}

/** A failed oneOf / anyOf: the branch a discriminating `const` property (e.g. lookup.method) picks, else the closest one of the right type. */
function branchProblems(
  node: JsonSchema,
  value: unknown,
  path: string,
  results: FieldError[][],
  resolve: (b: JsonSchema) => JsonSchema,
): FieldError[] {
  const branches = ((node.oneOf ?? node.anyOf) as JsonSchema[]).map(resolve);
  const props = (b: JsonSchema | undefined) => (b?.properties ?? {}) as Record<string, JsonSchema>;
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const rec = value as Record<string, unknown>;
    for (const key of Object.keys(props(branches[0]))) {
      const consts = branches.map((b) => props(b)[key]?.const);
      if (consts.every((c) => c !== undefined)) {
        // a branch whose discriminator has a default is the one an absent key selects
        const given = rec[key] ?? branches.map((b) => props(b)[key]?.default).find((d) => d !== undefined);
        const i = consts.findIndex((c) => c === given);
        if (i >= 0) return results[i]!;
        return [{ path: path ? `${path}.${key}` : key, message: oneOfShown(consts, rec[key]) }];
      }
    }
  }
  let best: FieldError[] | null = null;
  for (const [i, b] of branches.entries()) {
    const p = results[i]!;
    if (p.length === 0) return [];
    // prefer the branch of the right type with the fewest problems
    const typed =
      !b.type || typesOf(b).some((t) => t === typeOf(value) || (t === 'number' && typeOf(value) === 'integer'));
    if (typed && (best === null || p.length < best.length)) best = p;
  }
  return (
    best ?? [
      { path: path || '(top level)', message: `expected ${branches.map(describe).join(' or ')}, got ${show(value)}` },
    ]
  );
}
