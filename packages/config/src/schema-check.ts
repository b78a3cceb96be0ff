/**
 * Checks a value against the config's JSON Schema (the same object that is published as
 * `@retrysafe/config/schema.json`), so the file an editor completes and the file the loader accepts
 * are described once. Only the keywords that schema uses are implemented: type, properties,
 * required, additionalProperties, propertyNames-free objects, enum, const, items, minItems, minProperties,
 * minimum, exclusiveMinimum, minLength, pattern, oneOf, anyOf and local `$ref`s. Problems name
 * the path; an unknown key gets a "did you mean" when a known key is close.
 */

export interface SchemaNode {
  readonly $ref?: string;
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, SchemaNode>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | SchemaNode;
  readonly enum?: readonly unknown[];
  readonly const?: unknown;
  readonly default?: unknown;
  readonly items?: SchemaNode;
  readonly minItems?: number;
  readonly minProperties?: number;
  readonly minimum?: number;
  readonly exclusiveMinimum?: number;
  readonly minLength?: number;
  readonly pattern?: string;
  readonly oneOf?: readonly SchemaNode[];
  readonly anyOf?: readonly SchemaNode[];
  readonly description?: string;
  readonly markdownDescription?: string;
  readonly $defs?: Readonly<Record<string, SchemaNode>>;
  readonly [other: string]: unknown;
}

/** Edit distance (insert, delete, substitute, swap of neighbours). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** The closest candidate, when it is close enough to be a typo (case differences count as none). */
export function didYouMean(word: string, candidates: Iterable<string>): string | null {
  let best: string | null = null;
  let bestScore = Infinity;
  for (const c of candidates) {
    const score = c.toLowerCase() === word.toLowerCase() ? 0 : editDistance(word.toLowerCase(), c.toLowerCase());
    if (score < bestScore) {
      best = c;
      bestScore = score;
    }
  }
  if (best === null) return null;
  const limit = Math.max(1, Math.min(3, Math.floor(Math.max(word.length, best.length) / 3)));
  return bestScore <= limit ? best : null;
}

export const suggest = (word: string, candidates: Iterable<string>): string => {
  const s = didYouMean(word, candidates);
  return s ? ` (did you mean "${s}"?)` : '';
};

const typeOf = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v;
const typeMatches = (v: unknown, t: string): boolean => {
  const actual = typeOf(v);
  return actual === t || (t === 'number' && actual === 'integer');
};
const show = (v: unknown): string => {
  // Only a short, plain token is echoed (an enum typo like "FULLL"); anything else may be a credential.
  if (typeof v === 'string' && !/^[A-Za-z0-9_.:-]{0,32}$/.test(v)) return 'the value (not shown)';
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? s.slice(0, 57) + '…' : s;
};
const join = (path: string, key: string | number) =>
  typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key;

/** Problems of `value` against `node`; `root` resolves `#/$defs/...` references. Empty when valid. */
export function checkSchema(value: unknown, node: SchemaNode, root: SchemaNode, path = ''): string[] {
  const at = path || '(top level)';
  if (node.$ref) {
    const name = node.$ref.replace(/^#\/\$defs\//, '');
    const target = root.$defs?.[name];
    if (!target) throw new Error(`schema: unresolved $ref ${node.$ref}`);
    return checkSchema(value, target, root, path);
  }
  if (node.oneOf || node.anyOf) {
    const branches = (node.oneOf ?? node.anyOf)!.map((b) =>
      b.$ref ? root.$defs![b.$ref.replace(/^#\/\$defs\//, '')]! : b,
    );
    // A branch picked by a discriminating `const` property (e.g. lookup.method) reports its own problems.
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      const rec = value as Record<string, unknown>;
      for (const key of Object.keys(branches[0]?.properties ?? {})) {
        const consts = branches.map((b) => b.properties?.[key]?.const);
        if (consts.every((c) => c !== undefined)) {
          // a branch whose discriminator has a default is the one an absent key selects
          const given = rec[key] ?? branches.map((b) => b.properties?.[key]?.default).find((d) => d !== undefined);
          const i = consts.indexOf(given as (typeof consts)[number]);
          if (i >= 0) return checkSchema(value, branches[i]!, root, path);
          return [
            `${join(path, key)}: expected one of ${consts.map(show).join(', ')}, got ${show(rec[key])}${typeof rec[key] === 'string' ? suggest(rec[key] as string, consts.map(String)) : ''}`,
          ];
        }
      }
    }
    let best: string[] | null = null;
    for (const b of branches) {
      const p = checkSchema(value, b, root, path);
      if (p.length === 0) return [];
      // prefer the branch of the right type with the fewest problems
      const typed =
        !b.type ||
        (Array.isArray(b.type) ? (b.type as string[]) : [b.type as string]).some((t) => typeMatches(value, t));
      if (typed && (best === null || p.length < best.length)) best = p;
    }
    return best ?? [`${at}: expected ${branches.map((b) => describe(b)).join(' or ')}, got ${show(value)}`];
  }
  if (node.const !== undefined && value !== node.const)
    return [`${at}: expected ${show(node.const)}, got ${show(value)}`];
  if (node.enum && !node.enum.includes(value)) {
    return [
      `${at}: expected one of ${node.enum.map(show).join(', ')}, got ${show(value)}${typeof value === 'string' ? suggest(value, node.enum.map(String)) : ''}`,
    ];
  }
  if (node.type) {
    const types = Array.isArray(node.type) ? (node.type as string[]) : [node.type as string];
    if (!types.some((t) => typeMatches(value, t)))
      return [
        `${at}: expected ${types.join(' or ')}, got ${typeOf(value) === 'integer' ? 'number' : typeOf(value)} ${show(value)}`,
      ];
  }
  const problems: string[] = [];
  if (typeof value === 'string') {
    if (node.minLength !== undefined && value.length < node.minLength) problems.push(`${at}: must not be empty`);
    // The value is not repeated: a field with a pattern (an env-var name, a URL) is where a pasted secret lands.
    if (node.pattern !== undefined && !new RegExp(node.pattern).test(value))
      problems.push(
        `${at}: the value does not have the expected form${node.description ? ` (${node.description})` : ''}; it is not shown`,
      );
  }
  if (typeof value === 'number') {
    if (node.minimum !== undefined && value < node.minimum)
      problems.push(`${at}: must be ≥ ${node.minimum}, got ${value}`);
    if (node.exclusiveMinimum !== undefined && value <= node.exclusiveMinimum)
      problems.push(`${at}: must be > ${node.exclusiveMinimum}, got ${value}`);
  }
  if (Array.isArray(value)) {
    if (node.minItems !== undefined && value.length < node.minItems)
      problems.push(`${at}: needs at least ${node.minItems} item${node.minItems === 1 ? '' : 's'}`);
    if (node.items) value.forEach((v, i) => problems.push(...checkSchema(v, node.items!, root, join(path, i))));
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const rec = value as Record<string, unknown>;
    const props = node.properties ?? {};
    if (node.minProperties !== undefined && Object.keys(rec).length < node.minProperties)
      problems.push(`${at}: needs at least ${node.minProperties} entr${node.minProperties === 1 ? 'y' : 'ies'}`);
    for (const r of node.required ?? []) if (!Object.hasOwn(rec, r)) problems.push(`${join(path, r)}: required`);
    for (const [k, v] of Object.entries(rec)) {
      const p = Object.hasOwn(props, k) ? props[k] : undefined;
      if (p) problems.push(...checkSchema(v, p, root, join(path, k)));
      else if (node.additionalProperties === false)
        problems.push(
          `${join(path, k)}: unknown key${suggest(k, Object.keys(props))}${Object.keys(props).length <= 12 ? ` — known: ${Object.keys(props).join(', ')}` : ''}`,
        );
      else if (typeof node.additionalProperties === 'object')
        problems.push(...checkSchema(v, node.additionalProperties, root, join(path, k)));
    }
  }
  return problems;
}

function describe(n: SchemaNode): string {
  if (n.const !== undefined) return show(n.const);
  if (n.type) return Array.isArray(n.type) ? (n.type as string[]).join('/') : String(n.type);
  return 'a value';
}
