import { createHash } from 'node:crypto';
import { DECODINGS, DETECTORS, looksLikeCardNumber, REDACTED } from './redact-detectors.js';
import { keyVerdict } from './redact-keys.js';

export interface RedactOptions {
  /** Field names or dot paths (e.g. `email`, `card.number`) whose values never reach receipts, packets or logs. A bare name matches at any depth. */
  readonly fields?: readonly string[];
  /** Patterns to blank out of any string (params values and messages). */
  readonly patterns?: readonly RegExp[];
  /** `false` turns the PII detectors off (email addresses; `email`, `phone`, `dob`… keys), e.g. when an email is the
   * operation's public reference. Secret detectors (credentials, card numbers) cannot be turned off. */
  readonly pii?: boolean;
}

/** A person named in `resolve --by` as receipts and logs show them. */
export function personRef(by: string): string {
  return `person#${createHash('sha256').update(by, 'utf8').digest('hex').slice(0, 12)}`;
}

/** `e` as a copy of its class with every own field walked (message, stack, cause, an AggregateError's errors, enumerable
 * or not), or `e` itself when none changes. A copy, as a frozen error cannot change and the caller's must not. */
function errorWalked(e: Error, walkField: (value: unknown, key: string) => unknown): Error {
  const keys = new Set<PropertyKey>(['message', ...Reflect.ownKeys(e)]);
  const fields = [...keys].map((k) => {
    const value = (e as unknown as Record<PropertyKey, unknown>)[k];
    return [k, value, typeof k === 'string' ? walkField(value, k) : value] as const;
  });
  if (fields.every(([, value, walked]) => walked === value)) return e;
  const copy = Object.create(Object.getPrototypeOf(e)) as Error;
  for (const [k, , value] of fields)
    Object.defineProperty(copy, k, {
      value,
      writable: true,
      configurable: true,
      enumerable: Object.getOwnPropertyDescriptor(e, k)?.enumerable ?? false,
    });
  return copy;
}

/** Where a runner keeps its `redact` options, for what the agent surfaces show of its errors (`Symbol.for`: the agent
 * subpath is built apart from the root). */
export const RUNNER_REDACT = Symbol.for('retrysafe.runner.redact');

export interface Redactor {
  /** `value` with sensitive fields and secret-looking strings replaced by `[redacted]`: a copy where anything
   * changes, `value` itself where nothing does (read it, do not change it). An error is walked whole, class kept. */
  params(value: unknown): unknown;
  /** `text` with secret-looking strings, caller patterns and any known sensitive value blanked. */
  text(text: string): string;
  /** A redactor that also blanks, in any text, the values the sensitive fields hold in `params`. */
  withValuesFrom(params: unknown): Redactor;
}

// A long known value that is not a number (a password, a token) is its own text wherever it stands; a short one or a
// number is blanked only whole: a known `500` leaves `1500` as it is. Scripts written without spaces make no runs.
const ownText = (v: string) => v.length >= 8 && !/^[\d.,+-]*$/.test(v);
const IN_RUN =
  /(?![\p{sc=Han}\p{sc=Hira}\p{sc=Kana}\p{sc=Thai}\p{sc=Lao}\p{sc=Khmr}\p{sc=Mymr}\p{sc=Tibt}\p{sc=Java}\p{sc=Bali}\p{sc=Bugi}\p{sc=Lana}\p{sc=Tale}\p{sc=Talu}\p{sc=Tavt}\p{sc=Yi}])[\p{L}\p{M}\p{N}]/u;
const RUN_START = new RegExp(`^${IN_RUN.source}`, 'u');
const RUN_END = new RegExp(`${IN_RUN.source}$`, 'u');
const joins = (a: string, b: string) => RUN_END.test(a) && RUN_START.test(b);
/** Whether the known value `v` at `at` in `t` (to `end`, where a clip cut it) goes on the run of letters or digits there. */
const inRun = (t: string, at: number, v: string, end = at + v.length) =>
  !ownText(v) && (joins(t.slice(Math.max(0, at - 2), at), v) || joins(v, t.slice(end, end + 2)));
const longestFirst = (parts: Iterable<string>) => [...parts].sort((a, b) => b.length - a.length);

function blankEach(text: string, parts: readonly string[]): string {
  let out = text;
  for (const part of parts)
    for (let at = part === '' ? -1 : out.indexOf(part); at !== -1; at = out.indexOf(part, at + 1))
      if (!inRun(out, at, part)) {
        out = out.slice(0, at) + REDACTED + out.slice(at + part.length);
        at += REDACTED.length - 1;
      }
  return out;
}

/** Known values that must not show, shorter than this, are not looked for (nor what a clip left of one). */
const MIN_VALUE = 3;

/** The start of a known value that a clip (`…`, as adapters shorten a provider's message) cut off, blanked. */
function blankClipped(text: string, values: readonly string[]): string {
  let out = text;
  for (let at = out.indexOf('…'); at !== -1; at = out.indexOf('…', at + 1)) {
    let cut = 0;
    for (const v of values)
      for (let n = Math.min(v.length - 1, at); n > cut && n >= MIN_VALUE; n--)
        if (out.startsWith(v.slice(0, n), at - n) && !inRun(out, at - n, v, at)) {
          cut = n;
          break;
        }
    if (cut === 0) continue;
    out = out.slice(0, at - cut) + REDACTED + out.slice(at);
    at += REDACTED.length - cut;
  }
  return out;
}

/** A string as JSON text holds it (quotes, backslashes, line breaks escaped), with or without `\u` escapes for non-ASCII. */
function jsonSpellings(s: string): string[] {
  const json = JSON.stringify(s).slice(1, -1);
  const ascii = json.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return [json, ascii, JSON.stringify(json).slice(1, -1)];
}

/** The texts a redactor remembers the answer for: how many, and how long each may be. */
const SCANNED_MAX = 1024;
const SCANNED_MAX_LENGTH = 256;

export function createRedactor(options: RedactOptions = {}, sensitiveFields: readonly string[] = []): Redactor {
  const fields = [...(options.fields ?? []), ...sensitiveFields];
  for (const f of fields)
    if (typeof f !== 'string' || f.length === 0) throw new TypeError('redact.fields: expected non-empty strings');
  if (options.pii !== undefined && typeof options.pii !== 'boolean')
    throw new TypeError('redact.pii: expected a boolean');
  const pii = options.pii ?? true;
  const patterns = (options.patterns ?? []).map((p) => new RegExp(p, `${p.flags.replace('g', '')}g`));
  const exact = new Set(fields.filter((f) => f.includes('.')));
  const anywhere = new Set(fields.filter((f) => !f.includes('.')).map((f) => f.toLowerCase()));
  const isSensitive = (path: readonly string[]) => {
    const leaf = path.at(-1) ?? '';
    const key = keyVerdict(leaf);
    return (
      key.secret ||
      (pii && key.pii) ||
      (anywhere.size > 0 && anywhere.has(leaf.toLowerCase())) ||
      (exact.size > 0 && exact.has(path.join('.')))
    );
  };
  /** In a `{ name: 'X-Api-Key', value }` pair (headers as a list, HubSpot's form fields) the name says what `value` is. */
  const pairSensitive = (v: object, path: readonly string[]) => {
    const o = v as Record<string, unknown>;
    const name = o.name ?? o.key ?? o.property ?? o.field;
    return 'value' in o && typeof name === 'string' && isSensitive([...path, name]);
  };
  return build([]);

  function build(values: readonly string[]): Redactor {
    // Short texts repeat from one operation to the next (params keys, decision reasons): each is scanned once.
    const scanned = new Map<string, string>();
    const credentialsIn = (t: string): string[] => {
      const found: string[] = [];
      for (const d of DETECTORS) if ((pii || !d.pii) && d.hint(t)) d.blank(t, found);
      for (const p of patterns) found.push(...(t.match(p) ?? []));
      return found;
    };
    const text = (s: string): string => {
      const known = scanned.get(s);
      if (known !== undefined) return known;
      let out = blankEach(s, values);
      // A known value inside a credential cuts it apart before a detector sees it: what the detectors find in the
      // text as given is blanked whole, with the values, longest first.
      if (out !== s) out = blankEach(s, longestFirst([...credentialsIn(s), ...values]));
      if (values.length > 0) out = blankClipped(out, values);
      for (const d of DETECTORS) if ((pii || !d.pii) && d.hint(out)) out = d.blank(out);
      for (const p of patterns) out = out.replace(p, REDACTED);
      // Shown decoded only where the decoded text hides something (each decoding removes escapes, so this ends).
      for (const decode of DECODINGS) {
        const decoded = decode(out);
        const blanked = decoded === out ? decoded : text(decoded);
        if (blanked !== decoded) out = blanked;
      }
      if (s.length <= SCANNED_MAX_LENGTH) {
        if (scanned.size >= SCANNED_MAX) scanned.clear();
        scanned.set(s, out);
      }
      return out;
    };
    // Returns `v` itself when nothing in it changes, so the common case (nothing to redact) copies nothing.
    const walk = (v: unknown, path: string[], seen: Set<object>): unknown => {
      if (isSensitive(path) && path.length > 0) return v === undefined ? undefined : REDACTED;
      if (typeof v === 'string') return text(v);
      if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 && looksLikeCardNumber(String(v))) return REDACTED;
      if (typeof v !== 'object' || v === null) return v;
      if (seen.has(v)) return '[cycle]';
      seen.add(v);
      try {
        if (Array.isArray(v)) {
          const items = v.map((x) => walk(x, path, seen));
          return items.every((x, i) => x === v[i]) ? v : items;
        }
        if (v instanceof Date) return v.toISOString();
        if (v instanceof Error) return errorWalked(v, (x, k) => walk(x, [...path, k], seen));
        const paired = pairSensitive(v, path);
        const entries = Object.entries(v).map(
          ([k, x]) => [k, text(k), paired && k === 'value' ? REDACTED : walk(x, [...path, k], seen)] as const,
        );
        if (entries.every(([k, key, x]) => key === k && x === (v as Record<string, unknown>)[k])) return v;
        // An own `__proto__` key stays data (a plain assignment would set the prototype).
        return Object.fromEntries(entries.map(([, key, value]) => [key, value]));
      } finally {
        seen.delete(v);
      }
    };
    const self: Redactor = {
      params: (v) => walk(v, [], new Set()),
      text,
      withValuesFrom(params: unknown): Redactor {
        const found = new Set(values);
        const collect = (v: unknown, path: string[], inSensitive: boolean, seen: Set<object>) => {
          const here = inSensitive || (path.length > 0 && isSensitive(path));
          if (here && (typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint')) {
            const s = String(v);
            // Both normal forms: a provider may echo it composed or decomposed (canonical JSON holds them one value),
            // and inside JSON text (a message holding JSON, a raw body), escaped.
            if (s.length >= MIN_VALUE)
              for (const form of new Set([s, s.normalize('NFC'), s.normalize('NFD')]))
                for (const spelling of [form, ...jsonSpellings(form)]) found.add(spelling);
          }
          if (typeof v !== 'object' || v === null || seen.has(v)) return;
          seen.add(v);
          // Array items share their array's path, as in params().
          const paired = pairSensitive(v, path);
          for (const [k, x] of Object.entries(v))
            collect(x, Array.isArray(v) ? path : [...path, k], here || (paired && k === 'value'), seen);
        };
        collect(params, [], false, new Set());
        // Nothing new to blank: this redactor already is that one.
        if (found.size === values.length) return self;
        // Longest first, so a value containing another is blanked whole.
        return build(longestFirst(found));
      },
    };
    return self;
  }
}
