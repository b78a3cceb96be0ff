/** The fence's reading of an upstream tool's JSON Schema: which arguments it takes, the key argument hidden, local
 * references kept resolvable, the MCP dialect. */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { OperationSpec, RetrySafetyCard } from '@retrysafe/contract';
import { checkParamsSchema } from '@retrysafe/core/internal';

type ObjectSchema = { readonly properties?: Record<string, object>; readonly required?: readonly string[] };

const NUMBER_OR_FLAG = ['number', 'integer', 'boolean', 'null'];

/** Whether an argument's schema takes only numbers, flags or null: by its `type`, else by every branch of its `anyOf`
 * or `oneOf` (a Python tool's `Optional[int]`). */
function numeric(s: object): boolean {
  const { type, anyOf, oneOf } = s as { type?: unknown; anyOf?: unknown; oneOf?: unknown };
  const types = [type ?? []].flat();
  if (type !== undefined) return types.length > 0 && types.every((x) => NUMBER_OR_FLAG.includes(x as string));
  const branches = [anyOf ?? [], oneOf ?? []].flat();
  return branches.length > 0 && branches.every((b) => typeof b === 'object' && b !== null && numeric(b));
}

/** The arguments whose values are blanked in any text the fence keeps or shows (its `sensitiveFields`): which hold
 * personal data only the upstream knows. Not those that are only numbers or flags: blanked, they would take the
 * runner's own counts and waits out of its text. */
export function textArguments(schema: ObjectSchema, intent: readonly string[]): string[] {
  // A listing that is a `$ref` (a model under `$defs`) lists them where it points.
  const listed = Object.entries((followed(schema, schema) as ObjectSchema).properties ?? {});
  const names = listed.filter(([, s]) => !numeric(s)).map(([name]) => name);
  // An intent path the schema does not list (it lists no properties): its value too.
  return [...new Set([...names, ...intent.filter((p) => !listed.some(([name]) => name === p.split('.')[0]))])];
}

/** A fenced tool's input schema as its callers are shown it and checked by: without the key argument the fence sets,
 * and with the intent arguments a call must give required (an upstream's default for one does not stand for it: a call
 * that leaves one out names no operation, and is refused). */
export function shownInput<S extends ObjectSchema>(schema: S, card: RetrySafetyCard): S {
  const key = card.providerKey.name.value;
  const shown = typeof key === 'string' ? hideProperty(schema, key) : schema;
  const { intentFields, optionalIntentFields = [] } = card.businessOperationId;
  const heads = intentFields.filter((f) => !optionalIntentFields.includes(f)).map((f) => f.split('.')[0]!);
  const required = [...new Set([...(shown.required ?? []), ...heads])];
  return required.length === (shown.required ?? []).length ? shown : { ...shown, required };
}

/** The input schema without the argument at `path` (the fence's key, which the fence sets). A `$ref` elsewhere to it
 * (`#/properties/request_id`, as the SDK writes a zod schema used twice) is given the schema it pointed at. */
export function hideProperty<S extends ObjectSchema>(schema: S, path: string): S {
  const at = `#${path
    .split('.')
    .map((p) => `/properties/${p.replaceAll('~', '~0').replaceAll('/', '~1')}`)
    .join('')}`;
  const inline = (s: unknown, seen: ReadonlySet<string>): unknown =>
    mapRefs(s, (node) => {
      const { $ref, ...rest } = node;
      const target = $ref === at || $ref.startsWith(`${at}/`) ? pointedAt(schema, $ref) : undefined;
      if (target === undefined || seen.has($ref)) return node;
      return withBranch(rest, inline(target, new Set([...seen, $ref])));
    });
  const inlined = inline(schema, new Set()) as S;
  return withoutProperty(inlined, inlined, path.split('.'), new Set()) as S;
}

/** `node` with `branch` as one more of its `allOf`. */
const withBranch = (node: Record<string, unknown>, branch: unknown) =>
  Object.keys(node).length === 0
    ? branch
    : { ...node, allOf: [...(Array.isArray(node.allOf) ? node.allOf : []), branch] };

/** Keywords whose schemas all apply where they sit: an argument is hidden in each. */
const BRANCHES = ['allOf', 'anyOf', 'oneOf'];

/** `schema` without the argument at `parts`, wherever it is declared or required: in its properties, each branch, and
 * a local `$ref` (a pydantic model under `$defs`), copied in as a branch to hide it there; `$defs` stay as they are for
 * the other references to them. */
function withoutProperty(root: unknown, schema: unknown, parts: readonly string[], seen: ReadonlySet<string>): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema;
  if (isResource(schema)) root = schema;
  const node = schema as Record<string, unknown> & ObjectSchema;
  const found = typeof node.$ref === 'string' && !seen.has(node.$ref) ? pointedAt(root, node.$ref) : undefined;
  // A copy of a resource (its own `$id`) is a resource of its own, without the argument: under the `$id` it copies,
  // the schema would hold two resources of one URI, which does not compile.
  const target = isResource(found)
    ? { ...(found as object), $id: withoutKeyId((found as { $id: string }).$id) }
    : found;
  if (target !== undefined) {
    const { $ref, ...rest } = node;
    return withoutProperty(root, withBranch(rest, target), parts, new Set([...seen, $ref as string]));
  }
  const out: Record<string, unknown> = { ...node };
  for (const k of BRANCHES)
    if (Array.isArray(node[k])) out[k] = node[k].map((b) => withoutProperty(root, b, parts, seen));
  const [name = '', ...rest] = parts;
  const { [name]: inner, ...others } = node.properties ?? {};
  if (rest.length > 0) {
    if (inner) out.properties = { ...node.properties, [name]: withoutProperty(root, inner, rest, seen) };
    return out;
  }
  if (node.properties) out.properties = others;
  if (node.required) out.required = node.required.filter((r) => r !== name);
  return out;
}

/** `id` as the URI of a copy of its resource without the fence's key (relative references resolve as before). */
const withoutKeyId = (id: string) =>
  id.replace(/^[^#]*/, (uri) => `${uri}${uri.includes('?') ? '&' : '?'}retrysafe-key-hidden`);

/** Keywords whose values are data, not schemas: a `$ref` inside one is not a reference. */
const DATA = new Set(['const', 'enum', 'default', 'examples']);
/** Keywords whose values map names (which may be any word, `default` too) to schemas. */
const NAMED = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies']);
type RefNode = { readonly $ref: string } & Record<string, unknown>;

/** Whether a schema is a resource of its own (an `$id` that is not a draft-07 `#anchor`): its `#…` references resolve
 * inside it, wherever it sits. */
export function isResource(schema: unknown): boolean {
  const id = (schema as { $id?: unknown } | null)?.$id;
  return typeof id === 'string' && !id.startsWith('#');
}

/** `schema` with each sub-schema that has a `$ref` replaced by what `f` makes of it (after its own sub-schemas). A
 * sub-schema with its own `$id` is left as it is: a `#…` reference inside it is into it, not into `schema`. */
export function mapRefs(schema: unknown, f: (node: RefNode) => unknown, top = true): unknown {
  if (Array.isArray(schema)) return schema.map((s) => mapRefs(s, f, false));
  if (typeof schema !== 'object' || schema === null || (!top && isResource(schema))) return schema;
  const each = (map: object) => Object.fromEntries(Object.entries(map).map(([k, v]) => [k, mapRefs(v, f, false)]));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema))
    out[k] = DATA.has(k)
      ? v
      : NAMED.has(k) && typeof v === 'object' && v !== null && !Array.isArray(v)
        ? each(v)
        : mapRefs(v, f, false);
  return typeof out.$ref === 'string' ? f(out as RefNode) : out;
}

/** What a local `$ref` (`#/properties/a~1b`) points at in `root`, or undefined. */
function pointedAt(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let at = root;
  for (const part of ref
    .slice(2)
    .split('/')
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))) {
    if (typeof at !== 'object' || at === null || !Object.hasOwn(at, part)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

export const INDEX = /^(0|[1-9]\d*)$/;
/** Keywords by which a schema takes properties it does not list itself. */
const COMPOSED = ['allOf', 'anyOf', 'oneOf', '$ref', '$dynamicRef', 'if', 'dependentSchemas', 'dependencies'];

/** Keywords beside a `$ref` that make a schema more than the one it names. */
const BESIDE_REF = [...COMPOSED, 'properties', 'additionalProperties', 'patternProperties'];

/** The schema a local `$ref` names (a pydantic model under `$defs`), followed to its end, where `schema` is only that
 * reference; any other schema as it is. */
function followed(root: unknown, schema: unknown, seen: ReadonlySet<string> = new Set()): unknown {
  const ref = (schema as { $ref?: unknown } | null)?.$ref;
  if (typeof ref !== 'string' || seen.has(ref)) return schema;
  if (Object.keys(schema as object).some((k) => k !== '$ref' && BESIDE_REF.includes(k))) return schema;
  const target = pointedAt(root, ref);
  return target === undefined ? schema : followed(root, target, new Set([...seen, ref]));
}

/** The start of an intent `path` that `schema` lists no property for where it lists properties and takes no others;
 * null where it takes it or cannot say (no properties listed, a combinator, a reference to more than a schema). */
export function undeclaredPart(schema: unknown, path: string): string | null {
  const parts = path.split('.');
  let at = schema;
  for (const [i, part] of parts.entries()) {
    at = followed(schema, at);
    if (typeof at !== 'object' || at === null) return null;
    let node = at as Record<string, unknown>;
    if (node.type === 'array') {
      const items = followed(schema, node.items);
      if (typeof items !== 'object' || items === null || Array.isArray(items)) return null;
      if (INDEX.test(part)) {
        at = items;
        continue;
      }
      node = items as Record<string, unknown>;
    }
    const properties = node.properties;
    if (typeof properties !== 'object' || properties === null || COMPOSED.some((k) => Object.hasOwn(node, k)))
      return null;
    if (Object.hasOwn(properties, part)) {
      at = (properties as Record<string, unknown>)[part];
      continue;
    }
    const others = node.additionalProperties;
    if (others === true || (typeof others === 'object' && others !== null) || node.patternProperties !== undefined)
      return null;
    return parts.slice(0, i + 1).join('.');
  }
  return null;
}

/** MCP reads a tool schema that names no dialect as JSON Schema 2020-12 (specification 2025-11-25, SEP-1613). One that
 * does not compile so was written for draft-07 before (an array of `items`) and keeps that reading. */
export function inMcpDialect(schema: Tool['inputSchema'], card: RetrySafetyCard): Tool['inputSchema'] {
  if (schema.$schema !== undefined) return schema;
  const named = { $schema: 'https://json-schema.org/draft/2020-12/schema', ...schema };
  try {
    checkParamsSchema({ card, paramsSchema: named } as unknown as OperationSpec);
    return named;
  } catch {
    return schema;
  }
}
