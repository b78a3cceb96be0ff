/**
 * The part of Stripe's search query language the sandbox understands: exact-match clauses
 * `field:'value'` and `metadata['key']:'value'`, joined by AND or by OR (Stripe does not allow
 * mixing them). Anything else is a 400, as on Stripe.
 */
export interface Clause {
  /** `metadata.<key>` or a top-level field name. */
  readonly field: string;
  readonly value: string;
}

export interface ParsedQuery {
  readonly join: 'AND' | 'OR';
  readonly clauses: readonly Clause[];
}

export class SearchQueryError extends Error {}

export function parseSearchQuery(query: string): ParsedQuery {
  let i = 0;
  const s = query.trim();
  const clauses: Clause[] = [];
  const joins = new Set<'AND' | 'OR'>();

  const skipSpace = () => {
    while (s[i] === ' ') i++;
  };
  const quoted = (): string => {
    const q = s[i];
    if (q !== "'" && q !== '"') throw new SearchQueryError(`expected a quoted string at position ${i}`);
    i++;
    let out = '';
    while (i < s.length && s[i] !== q) {
      if (s[i] === '\\' && i + 1 < s.length) i++;
      out += s[i];
      i++;
    }
    if (s[i] !== q) throw new SearchQueryError('unterminated string');
    i++;
    return out;
  };

  for (;;) {
    skipSpace();
    const m = /^[a-z_][a-z0-9_]*/i.exec(s.slice(i));
    if (!m) throw new SearchQueryError(`expected a field at position ${i}`);
    let field = m[0];
    i += field.length;
    if (field === 'metadata') {
      if (s[i] !== '[') throw new SearchQueryError("metadata must be followed by ['key']");
      i++;
      field = `metadata.${quoted()}`;
      if (s[i] !== ']') throw new SearchQueryError("expected ] after metadata['key'");
      i++;
    }
    if (s[i] !== ':') throw new SearchQueryError(`only exact match (:) is supported, at position ${i}`);
    i++;
    clauses.push({ field, value: quoted() });
    skipSpace();
    if (i >= s.length) break;
    const j = /^(AND|OR)\b/.exec(s.slice(i));
    if (!j) throw new SearchQueryError(`expected AND or OR at position ${i}`);
    joins.add(j[1] as 'AND' | 'OR');
    i += j[1]!.length;
  }
  if (joins.size > 1) throw new SearchQueryError('AND and OR cannot be combined in one query');
  return { join: joins.has('OR') ? 'OR' : 'AND', clauses };
}

/** Lower-case words: Stripe's string match is case insensitive and word-based. */
const words = (s: string) =>
  s
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);

/** Stripe's string "exact match": the value holds all the query's words, in the same order (`one two` matches `one two three`). */
function stringMatch(value: string, query: string): boolean {
  const v = words(value).join(' ');
  const q = words(query).join(' ');
  return q === '' ? v === '' : ` ${v} `.includes(` ${q} `);
}

export function matches(record: Record<string, unknown>, q: ParsedQuery): boolean {
  const test = (c: Clause): boolean => {
    if (c.field.startsWith('metadata.')) {
      const md = record.metadata as Record<string, string> | undefined;
      const v = md?.[c.field.slice('metadata.'.length)];
      return v !== undefined && stringMatch(v, c.value);
    }
    const v = record[c.field];
    return v !== undefined && v !== null && String(v) === c.value;
  };
  return q.join === 'AND' ? q.clauses.every(test) : q.clauses.some(test);
}
