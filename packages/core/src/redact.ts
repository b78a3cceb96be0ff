import { createHash } from 'node:crypto';
import { isSecretKey, keyVerdict } from './redact-keys.js';

export const REDACTED = '[redacted]';

export interface RedactOptions {
  /** Field names or dot paths (e.g. `email`, `card.number`) whose values never reach receipts, packets or logs. A bare name matches at any depth. */
  readonly fields?: readonly string[];
  /** Patterns to blank out of any string (params values and messages). */
  readonly patterns?: readonly RegExp[];
  /** `false` turns the PII detectors off (email addresses; `email`, `phone`, `dob`… keys), e.g. when an email is the
   * operation's public reference. Secret detectors (credentials, card numbers) cannot be turned off. */
  readonly pii?: boolean;
}

interface Detector {
  readonly kind: string;
  /** Personal data rather than a secret: off with `pii: false`. */
  readonly pii?: true;
  /** A cheap test a string must pass before `blank` runs (most strings are short and plain). */
  readonly hint: (text: string) => boolean;
  /** The text with its matches blanked; each blanked part is pushed to `found` when given. */
  readonly blank: (text: string, found?: string[]) => string;
}

/** Blanks the matches of `pattern` that pass `accept` (e.g. a Luhn check). */
function matches(pattern: RegExp, accept?: (match: string) => boolean) {
  return (t: string, found?: string[]) =>
    t.replace(pattern, (m) => {
      if (accept && !accept(m)) return m;
      found?.push(m);
      return REDACTED;
    });
}

function has(...parts: string[]) {
  return (t: string) => parts.some((p) => t.includes(p));
}

/** Luhn-valid with a card network's leading digits and length: numeric ids and epoch-ms timestamps are left alone. */
function looksLikeCardNumber(text: string): boolean {
  const d = text.replace(/[\s+-]/g, '');
  if (!/^\d{13,19}$/.test(d) || /^(\d)\1+$/.test(d)) return false;
  let sum = 0;
  for (let i = 0; i < d.length; i++) {
    let n = d.charCodeAt(d.length - 1 - i) - 48;
    if (i % 2 === 1) {
      n *= 2;
      if (n > 9) n -= 9;
    }
    sum += n;
  }
  if (sum % 10 !== 0) return false;
  if (d.length === 13) return d.startsWith('4');
  return /^(?:4|5[1-5]|2[2-7]|3[0-9]|6)/.test(d);
}

/** Blanks card numbers in runs of digit groups as people type or paste them (any space, ` - `, a form's `+`): the
 * longest run of whole groups that is one, so a number beside its expiry or CVC (`4242… 123`) is found too. */
function blankCardNumbers(t: string, found?: string[]): string {
  return t.replace(/(?<![\p{L}\p{N}_.])\d(?:[\s+-]{0,3}\d)*(?![\p{L}\p{N}_.])/gu, (run) => {
    const parts = run.match(/\d+|\D+/g)!;
    let out = '';
    for (let i = 0; i < parts.length; i += 2) {
      let end = -1;
      for (let j = i, digits = parts[i]!.length; j < parts.length && digits <= 19; j += 2) {
        if (looksLikeCardNumber(parts.slice(i, j + 1).join(''))) end = j;
        digits += parts[j + 2]?.length ?? 0;
      }
      if (end === -1) out += parts[i]! + (parts[i + 1] ?? '');
      else {
        found?.push(parts.slice(i, end + 1).join(''));
        out += REDACTED + (parts[end + 1] ?? '');
        i = end;
      }
    }
    return out;
  });
}

// Combining marks belong to the key: a decomposed `contraseña` is one key.
const KEY_CHAR = /[\p{L}\p{M}\p{N}_\-.]/u;
const VALUE_AFTER = /^(\s*)(["']?)([^\s"'&,;)}\]]+)/u;
/** After `Authorization:`, the scheme word and the credential (`token 0123…`, `Bot MTk…`). */
const SCHEME_VALUE_AFTER = /^(\s*)(["']?)((?:[A-Za-z][\w-]{0,30} +)?[^\s"'&,;)}\]]+)/u;
/** After `Cookie:`, every `name=value` pair of the header (`a=1; sid=…`). */
const COOKIES_AFTER = /^(\s*)(["']?)([^\s"';,)]+(?:; ?[^\s"';,)]+)*)/u;
/** A quoted value up to its closing quote (escaped quotes inside), whatever it holds. */
const QUOTED_AFTER = /^(\s*)(["'])((?:\\.|[^\\])*?)\2/u;

/** Where the value after a secret-named key's separator starts and ends in `rest`, or null when there is none to blank. */
function valueSpan(rest: string, unquoted: RegExp): readonly [number, number] | null {
  const lead = rest.length - rest.trimStart().length;
  // An object or array (JSON echoed in a message): all of it, to its closing bracket or the end of the text.
  if (rest[lead] === '{' || rest[lead] === '[') return [lead, bracketEnd(rest, lead)];
  const quoted = QUOTED_AFTER.exec(rest);
  if (quoted) {
    const from = quoted[1]!.length + 1;
    return quoted[3] === '' || quoted[3] === REDACTED ? null : [from, from + quoted[3]!.length];
  }
  const after = unquoted.exec(rest);
  if (!after || after[3]!.startsWith(REDACTED.slice(0, -1))) return null;
  const from = after[1]!.length + after[2]!.length;
  return [from, from + after[3]!.length];
}

/** The index after the bracket that closes the one at `start` (brackets inside strings do not count), or the text's end. */
function bracketEnd(t: string, start: number): number {
  let depth = 0;
  let quote = '';
  for (let k = start; k < t.length; k++) {
    const c = t[k];
    if (quote !== '') {
      if (c === '\\') k++;
      else if (c === quote) quote = '';
    } else if (c === '"') quote = c;
    else if (c === '{' || c === '[') depth++;
    else if ((c === '}' || c === ']') && --depth === 0) return k + 1;
  }
  return t.length;
}

/** A secret-named word that is an error code (`invalid_auth: not a refusal…`): what follows it is prose. */
const ERROR_CODE = /(?:^|[_\-.])(?:invalid|missing|expired|revoked|bad|wrong|unknown|required|not)(?:[_\-.]|$)/i;

/** Blanks the value after every `key:`/`key=` whose key is secret-named (scanning back from each separator, not from every position). */
function redactSecretAssignments(s: string, found?: string[]): string {
  let out = '';
  let last = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c !== 58 /* : */ && c !== 61 /* = */) continue;
    let j = i - 1;
    while (j >= last && (s[j] === ' ' || s[j] === '\t')) j--;
    // A key in brackets names a nested field (a form body's `card[cvc]=`, `headers["X-Api-Key"]:`).
    if (j >= last && s[j] === ']') j--;
    if (j >= last && (s[j] === '"' || s[j] === "'")) j--;
    let k = j;
    while (k >= last && j - k < 40 && KEY_CHAR.test(s[k]!)) k--;
    const key = s.slice(k + 1, j + 1);
    if (key.length < 2 || !isSecretKey(key) || ERROR_CODE.test(key)) continue;
    const after = /authorization$/i.test(key)
      ? SCHEME_VALUE_AFTER
      : /cookies?$/i.test(key)
        ? COOKIES_AFTER
        : VALUE_AFTER;
    const span = valueSpan(s.slice(i + 1), after);
    if (span === null) continue;
    found?.push(s.slice(i + 1 + span[0], i + 1 + span[1]));
    out += s.slice(last, i + 1 + span[0]) + REDACTED;
    last = i + 1 + span[1];
    i = last - 1;
  }
  return last === 0 ? s : out + s.slice(last);
}

const blankAwsKeyIds = matches(/\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}\b/g);
/** A secret access key has no prefix (40 base64 characters, as many ids are): taken for one only beside a key id, as
 * secret scanners do, and only mixed-case with a digit, so a hex hash beside the id stays. */
const blankAwsSecretKeys = matches(
  /(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])/g,
  (m) => /[a-z]/.test(m) && /[A-Z]/.test(m) && /\d/.test(m),
);

/** The value detectors, in the order they run (detectSensitive reports the first one a string trips). */
const DETECTORS: readonly Detector[] = [
  {
    kind: 'private key',
    hint: has('PRIVATE KEY'),
    blank: matches(/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g),
  },
  // Each of these also blanks what a message clip (`…`) left of one: user-info cut before its `@`, an address before
  // its domain's dot, a token before its last part.
  {
    kind: 'URL user-info',
    hint: (t) => t.includes('://') && (t.includes('@') || t.includes('…')),
    blank: matches(/(?<=\b[a-z][a-z0-9+.-]*:\/\/)(?:[^\s/?#@]+(?=@)|[^\s/?#@:]+:[^\s/?#@]*(?=…))/gi),
  },
  {
    kind: 'bearer token',
    hint: (t) => /bearer/i.test(t),
    // A short lowercase word after it is prose (Stripe's "using Bearer auth", "the bearer token was rejected").
    blank: matches(/\bBearer\s+[A-Za-z0-9\-._~+/]+=*/gi, (m) => !/^[a-z]{1,12}$/.test(m.replace(/^bearer\s+/i, ''))),
  },
  {
    kind: 'basic credentials',
    hint: (t) => /basic/i.test(t),
    // `user:pass` decodes to text; an ordinary word after `Basic` (`Options`, `Order`) decodes to bytes that are not.
    blank: matches(/\bBasic\s+[A-Za-z0-9+/]{4,}={0,2}/gi, (m) =>
      /^[^\p{Cc}\ufffd]*:[^\p{Cc}\ufffd]*$/u.test(Buffer.from(m.replace(/^Basic\s+/i, ''), 'base64').toString('utf8')),
    ),
  },
  {
    kind: 'Stripe key',
    hint: has('_test_', '_live_', 'whsec_'),
    blank: matches(/\b(?:sk|rk|pk)_(?:test|live)_[A-Za-z0-9]{4,}|\bwhsec_[A-Za-z0-9]{8,}/g),
  },
  {
    kind: 'AWS access key',
    hint: has('AKIA', 'ASIA', 'AGPA', 'AIDA', 'AROA', 'ANPA'),
    blank: (t, found) => {
      const out = blankAwsKeyIds(t, found);
      return out === t ? t : blankAwsSecretKeys(out, found);
    },
  },
  { kind: 'Google API key', hint: has('AIza'), blank: matches(/\bAIza[0-9A-Za-z_-]{30,}/g) },
  {
    kind: 'JSON web token',
    hint: has('eyJ'),
    blank: matches(
      /\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}|\beyJ[A-Za-z0-9_-]{6,}(?:\.[A-Za-z0-9_-]*){0,2}(?=…)/g,
    ),
  },
  {
    kind: 'GitHub or Slack token',
    // GitHub's refresh tokens (ghr_), Slack's app-level (xapp-) and refresh (xoxe-) tokens included.
    hint: has('gh', 'xox', 'xapp'),
    blank: matches(/\b(?:gh[oprsu]|github_pat|xox[abeprs]|xapp)[-_A-Za-z0-9]{10,}/g),
  },
  { kind: 'Resend key', hint: has('re_'), blank: matches(/\bre_[A-Za-z0-9]{8,}_[A-Za-z0-9]{16,}/g) },
  // Incoming-webhook URLs whose path is the credential (Slack, Discord, Teams, Zapier): the path after the fixed prefix.
  {
    kind: 'webhook URL',
    hint: has('hook'),
    blank: matches(
      /(?<=\/\/(?:hooks\.slack\.com\/(?:services|workflows|triggers)|hooks\.zapier\.com\/hooks\/catch|[\w.-]*webhook\.office\.com\/webhookb2|outlook\.office(?:365)?\.com\/webhook|(?:[\w-]+\.)?discord(?:app)?\.com\/api\/webhooks)\/)[^\s"'<>?#]+/gi,
    ),
  },
  // What config refuses in a URL's query besides secret-named keys (an Azure SAS `sig`, a function `code`, a `key`).
  {
    kind: 'secret query parameter',
    hint: (t) => /(?:key|sig|code)=/i.test(t),
    blank: matches(/(?<=[?&](?:key|sig|code)=)[^\s&#"'<>]+/gi),
  },
  {
    kind: 'HubSpot private app token',
    hint: (t) => /pat-/i.test(t),
    blank: matches(/\bpat-[a-z0-9]{2,4}-[0-9a-f-]{20,}/gi),
  },
  // Microsoft identity platform (Entra ID) refresh tokens: `0.A…` then an `.Ag…` part hundreds of characters long.
  { kind: 'Microsoft refresh token', hint: has('0.A'), blank: matches(/\b0\.A[\w-]{50,}\.Ag[\w-]{250,}/g) },
  { kind: 'OpenAI or Anthropic key', hint: has('sk-'), blank: matches(/\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}/g) },
  // One of the prefixed credentials above that a clip (`…`) cut shorter than its own pattern asks for.
  {
    kind: 'clipped credential',
    hint: has('…'),
    blank: matches(
      /\b(?:(?:sk|rk|pk)_(?:test|live)_|whsec_|A(?:KIA|SIA|GPA|IDA|ROA|NPA|Iza)|gh[oprsu]_|github_pat_|xox[abeprs]-|xapp-|re_|pat-|sk-|Basic\s+)[\w+/=-]+(?=…)/g,
    ),
  },
  { kind: 'card number', hint: (t) => /(?:\d\D*){13}/.test(t), blank: blankCardNumbers },
  {
    kind: 'IBAN',
    pii: true,
    hint: (t) => /[A-Z]{2}\d\d/.test(t),
    // Grouped by four or not; the check digits must hold, so an upper-case id of that shape stays.
    blank: matches(/\b[A-Z]{2}\d\d(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b/g, (m) => {
      const s = m.replace(/ /g, '');
      let rest = 0;
      for (const c of s.slice(4) + s.slice(0, 4)) rest = (rest * (c < 'A' ? 10 : 100) + Number.parseInt(c, 36)) % 97;
      return rest === 1;
    }),
  },
  {
    kind: 'email address',
    pii: true,
    hint: has('@'),
    // Letters of any script, as addresses may hold them (`josé.núñez@…`, `田中@例え.jp`).
    blank: matches(
      /[\p{L}\p{M}\p{N}._%+-]+@(?:[\p{L}\p{M}\p{N}-]+(?:\.[\p{L}\p{M}\p{N}-]+)*\.\p{L}[\p{L}\p{M}]+|[\p{L}\p{M}\p{N}.-]*(?=…))/gu,
    ),
  },
  // `password=…`, `"apiKey": "…"`, `?token=…`, `X-Auth-Token: …` in free text: the key decides. Last, as it blanks a
  // value up to a space: a card number or an IBAN grouped by four after `cardNumber=` would keep all but its first group.
  { kind: 'secret-named value', hint: has(':', '='), blank: redactSecretAssignments },
];

/** Percent-escapes, then JSON string escapes, decoded: an echoed URL or JSON-in-a-string spells a credential
 * `password%3D…` or `{\"apiKey\":…`, which no detector sees. */
const DECODINGS: readonly ((t: string) => string)[] = [
  (t) =>
    t.includes('%')
      ? t.replace(/(?:%[0-9A-Fa-f]{2})+/g, (m) => {
          try {
            return decodeURIComponent(m);
          } catch {
            return m;
          }
        })
      : t,
  (t) =>
    t.includes('\\')
      ? t.replace(/\\(?:u([0-9A-Fa-f]{4})|(["\\/]))/g, (_, hex, c) =>
          hex ? String.fromCharCode(Number.parseInt(hex, 16)) : c,
        )
      : t,
];

/** The first detector a string trips (its kind), or null. Used to refuse a credential typed into config. */
export function detectSensitive(value: string, options: Pick<RedactOptions, 'pii'> = {}): string | null {
  const pii = options.pii ?? true;
  const kind = DETECTORS.find((d) => (pii || !d.pii) && d.hint(value) && d.blank(value) !== value)?.kind;
  if (kind !== undefined) return kind;
  for (const decode of DECODINGS) {
    const decoded = decode(value);
    if (decoded !== value) return detectSensitive(decoded, options);
  }
  return null;
}

/** A person named in `resolve --by` as receipts and logs show them: `person#` + 12 hex of the name's SHA-256. */
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

/** Where a runner keeps its redactor, for what the agent surfaces show of its errors (`Symbol.for`: the agent subpath is
 * built apart from the root). */
export const RUNNER_REDACTOR = Symbol.for('retrysafe.runner.redactor');

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
// number is blanked only whole, not where it goes on a run of letters or digits: a known `500` leaves `1500` as it is.
// Scripts written without spaces between words (Chinese, Japanese, Thai, Lao, Khmer, Burmese, Tibetan, Javanese,
// Balinese, Buginese, the Tai scripts, Yi) make no runs: a name there stands by words.
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

/** Builds the redactor from the caller's options plus an operation's declared sensitive fields. */
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
    /** What the detectors and patterns blank in `t` as given. */
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
