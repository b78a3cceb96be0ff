/** What a secret or a person's data looks like in free text: the value detectors the redactor runs, and their check
 * of a value typed into config. */
import { isSecretKey } from './redact-keys.js';

export const REDACTED = '[redacted]';

export interface Detector {
  readonly kind: string;
  /** Personal data rather than a secret: off with `pii: false`. */
  readonly pii?: true;
  /** A cheap test a string must pass before `blank` runs (most strings are short and plain). */
  readonly hint: (text: string) => boolean;
  readonly blank: (text: string, found?: string[]) => string;
}

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
export function looksLikeCardNumber(text: string): boolean {
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
export const DETECTORS: readonly Detector[] = [
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
export const DECODINGS: readonly ((t: string) => string)[] = [
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
export function detectSensitive(value: string, options: { readonly pii?: boolean } = {}): string | null {
  const pii = options.pii ?? true;
  const kind = DETECTORS.find((d) => (pii || !d.pii) && d.hint(value) && d.blank(value) !== value)?.kind;
  if (kind !== undefined) return kind;
  for (const decode of DECODINGS) {
    const decoded = decode(value);
    if (decoded !== value) return detectSensitive(decoded, options);
  }
  return null;
}
