// `@retrysafe/contract/render`: a card as a page (Markdown or JSON), for the CLI and the adapters' READMEs.
import { type RetrySafetyCard, UNKNOWN } from './card.js';
import { DEFAULT_CLOCK_SKEW_MARGIN } from './card-rules.js';
import { describeNormalization, type FieldNormalization, type ParamComparison } from './intent.js';

/** Card fields in the order of the card type, with their labels. */
const LABELS: ReadonlyArray<readonly [path: string, label: string]> = [
  ['operation', 'Operation'],
  ['provider', 'Provider'],
  ['sideEffect.kind', 'Side-effect kind'],
  ['sideEffect.idempotentByNature', 'Idempotent by nature'],
  ['sideEffect.rejectionMayCreate', 'A rejected call can leave an object'],
  ['businessOperationId.rule', 'Business-operation id rule'],
  ['businessOperationId.intentFields', 'Intent fields'],
  ['businessOperationId.optionalIntentFields', 'Intent fields a call may leave out'],
  ['businessOperationId.normalize', 'Intent normalisation'],
  ['paramComparison', 'Param comparison (others exact)'],
  ['ids.run', 'Run id'],
  ['ids.attempt', 'Attempt id'],
  ['ids.request', 'Provider request id'],
  ['providerKey.travels', 'Provider key travels in'],
  ['providerKey.name', 'Provider key name'],
  ['providerKey.maxLength', 'Provider key max length'],
  ['providerKey.charset', 'Provider key charset'],
  ['providerKey.scope', 'Provider key scope'],
  ['providerKey.caseSensitive', 'Provider key compared case-sensitively'],
  ['keyReuse', 'When the same key may be reused'],
  ['parameterMatching', 'Parameter matching (same key, other params)'],
  ['storedResult.semantics', 'Stored result on re-send'],
  ['storedResult.includesErrors', 'Errors stored and replayed'],
  ['storedResult.replayIndicator', 'Replay indicator'],
  ['lookup.method', 'Lookup of stored status/result'],
  ['lookup.consistencyDelay', 'Lookup consistency delay'],
  ['lookup.lateApplyBound', 'Late apply bound (provider may still apply after the client gave up)'],
  ['retention.minimum', 'Retention of stored status (minimum)'],
  ['concurrency', 'Concurrent duplicate'],
  ['retryableErrors', 'Retryable errors'],
  ['nonRetryableErrors', 'Non-retryable errors'],
  ['backoff.strategy', 'Backoff'],
  ['backoff.base', 'Backoff base'],
  ['backoff.cap', 'Backoff cap'],
  ['backoff.retryAfterCap', 'Retry-After cap'],
  ['limits.maxAttempts', 'Max attempts'],
  ['limits.maxElapsed', 'Max elapsed'],
  ['limits.lookupWindow', 'Lookup / in-progress window'],
  ['limits.clockSkewMargin', 'Clock-skew margin (policy)'],
  ['retryLayer.layer', 'Retrying layer'],
  ['retryLayer.sdkRetries', 'SDK retries'],
  ['retryLayer.how', 'How SDK retries are off'],
  ['reconciler', 'Who reconciles'],
  ['handoff.condition', 'Terminal handoff condition'],
  ['handoff.destination', 'Handoff destination'],
  ['duplicateTest', 'Duplicate-test method'],
  ['receipts', 'Receipts go to'],
];

export function cardFieldLabel(path: string): string {
  return LABELS.find(([p]) => p === path)?.[1] ?? path;
}

function show(v: unknown): string {
  if (v === null) return '—';
  if (Array.isArray(v)) return v.length ? v.map((x) => `\`${String(x)}\``).join(', ') : '—';
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

export interface CardRow {
  readonly path: string;
  readonly label: string;
  readonly value: unknown;
  readonly unknown: boolean;
  readonly source: string | null;
}

/** What an absent optional field means. */
const ABSENT: Readonly<Record<string, unknown>> = {
  'providerKey.caseSensitive': {
    value: UNKNOWN,
    source: 'not declared on this card: treated as unknown (no derived key relies on letter case)',
  },
  'lookup.lateApplyBound': {
    value: UNKNOWN,
    source: 'not declared on this card: treated as unknown (a not-found never proves absence)',
  },
  'limits.clockSkewMargin': `${DEFAULT_CLOCK_SKEW_MARGIN} (default)`,
};

function row(path: string, label: string, raw: unknown): CardRow {
  const isFact = typeof raw === 'object' && raw !== null && !Array.isArray(raw) && 'source' in raw && 'value' in raw;
  const value = isFact ? (raw as { value: unknown }).value : raw;
  return { path, label, value, unknown: value === UNKNOWN, source: isFact ? (raw as { source: string }).source : null };
}

type Rules = readonly (FieldNormalization | ParamComparison)[];
type Replay = NonNullable<RetrySafetyCard['storedResult']['replayIndicator']>;
const rulesView = (rules: Rules) => ({ value: describeNormalization(rules), source: sources(rules) });

/** How a row shows an optional section (absent: no row). */
const VIEW: Readonly<Record<string, (declared: never) => unknown>> = {
  'businessOperationId.optionalIntentFields': (fields: readonly string[]) => fields,
  'businessOperationId.normalize': rulesView,
  paramComparison: rulesView,
  'storedResult.replayIndicator': ({ value, source }: Replay) => ({
    value: value === null ? 'none' : value === UNKNOWN ? UNKNOWN : `${value.header}: ${value.value}`,
    source,
  }),
};

export function cardRows(card: RetrySafetyCard): CardRow[] {
  return LABELS.flatMap(([path, label]) => {
    const declared = path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], card);
    if (declared === undefined) return path in VIEW ? [] : [row(path, label, ABSENT[path])];
    return [row(path, label, path in VIEW ? VIEW[path]!(declared as never) : declared)];
  });
}

function sources(rules: Rules): string | null {
  if (rules.length === 0) return null;
  const cited = rules.flatMap((r) => (r.evidence ? [r.source, `evidence: ${r.evidence}`] : [r.source]));
  return [...new Set(cited)].join('; ');
}

/** `markdown`: one row per field with its source, unknown values flagged, then the unverified conditions. */
export function renderCard(card: RetrySafetyCard, format: 'markdown' | 'json'): string {
  if (format === 'json') return JSON.stringify(card, null, 2) + '\n';
  const lines = [`### \`${card.operation}\``, '', '| field | value | source |', '|---|---|---|'];
  for (const row of cardRows(card)) {
    const value = row.unknown ? '**⚠ unknown**' : cell(show(row.value));
    lines.push(`| ${row.label} | ${value} | ${row.source === null ? 'retrysafe policy' : cell(row.source)} |`);
  }
  const unverified = card.unverified.map((u) => `- \`${u.field}\`: ${cell(u.condition)} (source: ${cell(u.source)})`);
  const heading = unverified.length
    ? ['Unverified provider conditions:', '']
    : ['Unverified provider conditions: none.'];
  return [...lines, '', ...heading, ...unverified, ''].join('\n');
}

const SECTION_START = '<!-- cards:start';
const SECTION_END = '<!-- cards:end -->';

export function renderCards(cards: readonly RetrySafetyCard[]): string {
  return cards.map((c) => renderCard(c, 'markdown')).join('\n');
}

function sectionBounds(text: string): { bodyStart: number; end: number } {
  const start = text.indexOf(SECTION_START);
  const end = text.indexOf(SECTION_END);
  const open = start < 0 ? -1 : text.indexOf('-->', start);
  if (start < 0 || end < 0 || open < 0 || open > end)
    throw new RangeError(`no card section: expected a "${SECTION_START} … -->" marker and a later "${SECTION_END}"`);
  return { bodyStart: open + 3, end };
}

/** The generated card section of a README, between `<!-- cards:start … -->` and `<!-- cards:end -->`. */
export function readCardSection(text: string): string {
  const { bodyStart, end } = sectionBounds(text);
  return text.slice(bodyStart, end).trim();
}

/** The README with its card section replaced by `body` (markers kept). */
export function replaceCardSection(text: string, body: string): string {
  const { bodyStart, end } = sectionBounds(text);
  return `${text.slice(0, bodyStart)}\n\n${body.trim()}\n\n${text.slice(end)}`;
}

/** The cards of an adapter's root entry: its one `<vendor>Cards` export (stripeCards, …), in order. */
export function entryCards(entry: Readonly<Record<string, unknown>>): RetrySafetyCard[] {
  const found = Object.keys(entry).filter((name) => /^[a-z][A-Za-z]*Cards$/.test(name));
  if (found.length !== 1)
    throw new TypeError(`expected one <vendor>Cards export, found: ${found.join(', ') || 'none'}`);
  return Object.values(entry[found[0]!] as Record<string, RetrySafetyCard>);
}
