export const REDACTED = '[redacted]';

export interface RedactOptions {
  /** Field names or dot paths (e.g. `email`, `card.number`) whose values never reach receipts, packets or logs. A bare name matches at any depth. */
  readonly fields?: readonly string[];
  /** Patterns to blank out of any string (params values and messages). */
  readonly patterns?: readonly RegExp[];
}

/** Keys whose values are secrets whatever the caller declares. */
const SECRET_KEY = /^(authorization|proxy-authorization|cookie|set-cookie|password|passwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|id[_-]?token|token|private[_-]?key|x-api-key)$/i;

/** Strings that look like credentials whatever field they are in. */
const SECRET_VALUE: readonly RegExp[] = [
  /\b(?:sk|rk|pk|whsec)_(?:test|live)_[A-Za-z0-9]{4,}/g,
  /\bBearer\s+[A-Za-z0-9\-._~+/]+=*/gi,
  /\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}/g,
  /\b(?:ghp|gho|ghs|github_pat|xox[abprs])[-_A-Za-z0-9]{10,}/g,
  /\bpat-[a-z0-9]{2,4}-[0-9a-f-]{20,}/gi,
];

function global(re: RegExp): RegExp {
  return re.flags.includes('g') ? new RegExp(re.source, re.flags) : new RegExp(re.source, re.flags + 'g');
}

export interface Redactor {
  /** A deep copy of `value` with sensitive fields and secret-looking strings replaced by `[redacted]`. */
  params(value: unknown): unknown;
  /** `text` with secret-looking strings, caller patterns and any known sensitive value blanked. */
  text(text: string): string;
  /** A redactor that also blanks, in any text, the values the sensitive fields hold in `params`. */
  withValuesFrom(params: unknown): Redactor;
}

/** Builds the redactor from the caller's options plus an operation's declared sensitive fields. */
export function createRedactor(options: RedactOptions = {}, sensitiveFields: readonly string[] = []): Redactor {
  const fields = [...(options.fields ?? []), ...sensitiveFields];
  for (const f of fields) if (typeof f !== 'string' || f.length === 0) throw new TypeError('redact.fields: expected non-empty strings');
  const patterns = [...SECRET_VALUE, ...(options.patterns ?? []).map(global)];
  const exact = new Set(fields.filter((f) => f.includes('.')));
  const anywhere = new Set(fields.filter((f) => !f.includes('.')).map((f) => f.toLowerCase()));
  const isSensitive = (path: readonly string[]) => {
    const leaf = path[path.length - 1] ?? '';
    return SECRET_KEY.test(leaf) || anywhere.has(leaf.toLowerCase()) || exact.has(path.join('.'));
  };
  return build([]);

  function build(values: readonly string[]): Redactor {
    const text = (s: string): string => {
      let out = s;
      for (const v of values) out = out.split(v).join(REDACTED);
      for (const p of patterns) out = out.replace((p.lastIndex = 0, p), REDACTED);
      return out;
    };
    const walk = (v: unknown, path: string[], seen: Set<object>): unknown => {
      if (isSensitive(path) && path.length > 0) return v === undefined ? undefined : REDACTED;
      if (typeof v === 'string') return text(v);
      if (typeof v !== 'object' || v === null) return v;
      if (seen.has(v)) return '[cycle]';
      seen.add(v);
      try {
        if (Array.isArray(v)) return v.map((x) => walk(x, path, seen));
        if (v instanceof Date) return v.toISOString();
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v)) out[k] = walk(x, [...path, k], seen);
        return out;
      } finally {
        seen.delete(v);
      }
    };
    return {
      params: (v) => walk(v, [], new Set()),
      text,
      withValuesFrom(params: unknown): Redactor {
        const found = new Set(values);
        const collect = (v: unknown, path: string[], inSensitive: boolean, seen: Set<object>) => {
          const here = inSensitive || (path.length > 0 && isSensitive(path));
          if (here && (typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint')) {
            const s = String(v);
            if (s.length >= 3) found.add(s);
          }
          if (typeof v !== 'object' || v === null || seen.has(v)) return;
          seen.add(v);
          if (Array.isArray(v)) v.forEach((x) => collect(x, path, here, seen));
          else for (const [k, x] of Object.entries(v)) collect(x, [...path, k], here, seen);
        };
        collect(params, [], false, new Set());
        // Longest first, so a value containing another is blanked whole.
        return build([...found].sort((a, b) => b.length - a.length));
      },
    };
  }
}
