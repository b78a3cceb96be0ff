import { existsSync } from 'node:fs';
import { extname } from 'node:path';
import { createInterface } from 'node:readline';
import {
  CARD_SCHEMA_VERSION,
  type CardProblem,
  cardJsonSchema,
  type RetrySafetyCard,
  UNKNOWN,
  validateCard,
} from '@retrysafe/contract';
import { cardFieldLabel } from '@retrysafe/contract/render';
import { DEFAULT_CLOCK_SKEW_MARGIN } from '@retrysafe/contract/rules';
import { defineCommand, EXIT, type Options, type Parsed } from '../../../command.js';
import { UsageError } from '../../../errors.js';
import { readObjectFile, writeText } from '../../../files.js';
import { refusals } from '../refusals.js';

export const CARDS_INIT_OPTIONS = {
  from: { argument: '<file>', description: 'a partial card (JSON or YAML) to start from; no questions asked' },
  out: {
    argument: '<file>',
    description: 'write the card to this new file (.yaml/.yml: YAML, else JSON); default: print it',
  },
  interactive: { description: 'ask for the fields --from leaves out' },
  json: { description: 'print { card, unknowns, defaulted, refusals } as JSON' },
} as const satisfies Options;

type Schema = { readonly [k: string]: unknown };
/** One field of the card as `cards init` fills it: a provider fact `{ value, source }` (may be unknown), or a plain field. */
type Leaf = { readonly path: string; readonly schema: Schema; readonly fact: boolean };

const HAND_WRITTEN = [
  'businessOperationId.optionalIntentFields',
  'businessOperationId.normalize',
  'paramComparison',
  'storedResult.replayIndicator',
];

/** Every fillable field of the card, in schema order (derived from the published schema, so new fields appear by themselves). */
export function cardLeaves(): Leaf[] {
  const leaves: Leaf[] = [];
  const walk = (s: Schema, path: string) => {
    const props = s.properties as Record<string, Schema> | undefined;
    if (s.type === 'object' && props && 'value' in props && 'source' in props) {
      leaves.push({ path, schema: (props.value!.anyOf as Schema[])[0]!, fact: true });
    } else if (s.type === 'object' && props) {
      // The optional sections a provider has or has not (optional intent fields, intent normalisation, param
      // comparison, the replay indicator) are written by hand; every other field, optional facts included, is asked.
      for (const [k, sub] of Object.entries(props)) {
        const p = path ? `${path}.${k}` : k;
        if (!HAND_WRITTEN.includes(p)) walk(sub, p);
      }
    } else leaves.push({ path, schema: s, fact: false });
  };
  walk(cardJsonSchema() as Schema, '');
  // the intent fields first (the sort is stable): the id rule's default is written from them
  const rank = (l: Leaf) => (l.path === 'businessOperationId.intentFields' ? -1 : 0);
  return leaves
    .filter((l) => !['$schema', 'cardVersion', 'unverified'].includes(l.path))
    .sort((a, b) => rank(a) - rank(b));
}

/** Plain fields a card needs that `init` can fill with retrysafe's conservative defaults (marked as such). */
function defaults(card: Record<string, unknown>): Record<string, unknown> {
  const fields = get(card, 'businessOperationId.intentFields');
  return {
    'businessOperationId.rule': Array.isArray(fields)
      ? `derived from intent fields ${fields.join(', ')}, or supplied by the caller`
      : undefined,
    'ids.run': 'receipts only (never sent to the provider)',
    'ids.attempt': 'receipts only (never sent to the provider)',
    'backoff.strategy': 'exponential-full-jitter',
    'backoff.base': '500ms',
    'backoff.cap': '10s',
    'backoff.retryAfterCap': '60s',
    'limits.maxAttempts': 3,
    'limits.maxElapsed': '2m',
    'limits.lookupWindow': '30s',
    'limits.clockSkewMargin': DEFAULT_CLOCK_SKEW_MARGIN,
    'retryLayer.layer': 'runner',
    'retryLayer.sdkRetries': 'disabled',
    'retryLayer.how': "not filled in: say how the SDK's own retries are turned off and how the drill proves it",
    reconciler: "the runner, through the adapter's doLookup",
    'handoff.condition': 'rejected; retry budget exhausted; unknown with no safe re-send',
    'handoff.destination': "the runner's handoff sink; resolved with `retrysafe ledger resolve`",
    duplicateTest: 'not filled in: a loopback sandbox behind the testkit fault proxy',
    receipts: "the runner's ledger (one receipt per attempt and lookup, redacted)",
  };
}

function get(obj: unknown, path: string): unknown {
  let o = obj;
  for (const k of path.split('.'))
    o = o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined;
  return o;
}
function set(obj: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = (o[k] ??= {}) as Record<string, unknown>;
  o[keys.at(-1)!] = value;
}

/** How an answer to a leaf is read: the question's hint, what a wrong answer is told, and the value (undefined: wrong). */
function answerRule(leaf: Leaf): { hint: string; expected: string; read: (t: string) => unknown } {
  const options = (leaf.schema.anyOf as Schema[] | undefined) ?? [leaf.schema];
  const main = options.find((o) => o.type !== 'null') ?? leaf.schema;
  const none = options.some((o) => o.type === 'null') ? ' | none' : '';
  const rule = (hint: string, expected: string, read: (t: string) => unknown) => ({
    hint: hint + none,
    expected,
    read: (t: string) => (none && /^(null|none|—)$/i.test(t) ? null : read(t)),
  });
  const { enum: choices, pattern } = main as { enum?: string[]; pattern?: string };
  if (choices)
    return rule(choices.join(' | '), `one of ${choices.join(', ')}`, (t) => (choices.includes(t) ? t : undefined));
  if ('const' in main)
    return rule('text', `only ${String(main.const)}`, (t) => (t === String(main.const) ? main.const : undefined));
  if (main.type === 'boolean')
    return rule('yes | no', 'yes or no', (t) =>
      /^(y|yes|true)$/i.test(t) ? true : /^(n|no|false)$/i.test(t) ? false : undefined,
    );
  if (main.type === 'integer')
    return rule('number', 'a positive whole number', (t) => (/^[1-9]\d*$/.test(t) ? Number(t) : undefined));
  if (main.type === 'array') {
    const list = (t: string) => t.split(/\s*,\s*/).filter(Boolean);
    return rule('comma-separated', 'a comma-separated list', (t) => (list(t).length ? list(t) : undefined));
  }
  const text = (t: string) => (!pattern || new RegExp(pattern).test(t) ? t : undefined);
  if (pattern?.includes('ms|s|m|h|d'))
    return rule('duration, e.g. 30s, 24h', 'a duration such as 500ms, 30s, 5m, 24h', text);
  return rule('text', 'non-empty text', text);
}

/** `retrysafe cards init`: a new card from `--from` or by asking (`input` gives the answers, default stdin; `prompt`
 * takes the questions, default stderr); facts it cannot fill stay `unknown` and unverified. */
export async function cardsInit(
  opts: Parsed<typeof CARDS_INIT_OPTIONS> & {
    readonly input?: NodeJS.ReadableStream;
    readonly prompt?: (text: string) => void;
  },
) {
  // Before any question: the file may be a card edited by hand since an earlier run.
  if (opts.out !== undefined && existsSync(opts.out))
    throw new UsageError(
      `--out ${opts.out}: the file exists; a card is never written over (remove it, or name another)`,
    );
  const seed =
    opts.from !== undefined
      ? readObjectFile(opts.from, `--from ${opts.from}: expected an object (a partial card)`)
      : {};
  const { $schema: _s, unverified: seedUnverified, ...given } = seed;
  const card: Record<string, unknown> = { cardVersion: CARD_SCHEMA_VERSION };
  const origin =
    opts.from === undefined ? 'retrysafe cards init (interactive)' : `retrysafe cards init --from ${opts.from}`;
  const unverified: { field: string; condition: string; source: string }[] = Array.isArray(seedUnverified)
    ? [...(seedUnverified as never[])]
    : [];
  const unknowns: string[] = [];
  const defaulted: string[] = [];
  const problems: CardProblem[] = [];
  const interactive = opts.interactive ?? opts.from === undefined;
  const prompt = opts.prompt ?? ((t: string) => process.stderr.write(t));
  const ask = interactive ? lineReader(opts.input ?? process.stdin, prompt) : null;
  try {
    for (const leaf of cardLeaves()) {
      const label = cardFieldLabel(leaf.path);
      const present = get(given, leaf.path);
      if (present !== undefined) {
        const value = get(present, 'value');
        if (leaf.fact && (value === undefined || get(present, 'source') === undefined))
          problems.push({
            path: leaf.path,
            message:
              'a provider fact is { value, source }: cite where the value comes from (or leave the field out to make it unknown)',
          });
        set(card, leaf.path, present);
        if (leaf.fact && value === UNKNOWN) unknowns.push(leaf.path);
        continue;
      }
      const fallback = defaults(card)[leaf.path];
      if (ask) {
        const answer = await askLeaf(ask, prompt, leaf, label, fallback);
        if (answer) {
          set(card, leaf.path, answer.value);
          continue;
        }
      }
      if (leaf.fact) {
        set(card, leaf.path, { value: UNKNOWN, source: `not filled in (${origin})` });
        unknowns.push(leaf.path);
      } else if (fallback !== undefined) {
        set(card, leaf.path, fallback);
        defaulted.push(leaf.path);
      } else {
        problems.push({ path: leaf.path, message: `required: ${label} cannot be unknown` });
      }
    }
  } finally {
    ask?.close();
  }
  // Never asked, but kept as the file gives them: without its normalisation the card would derive other ids.
  for (const path of HAND_WRITTEN) if (get(given, path) !== undefined) set(card, path, get(given, path));
  for (const field of unknowns.filter((f) => !unverified.some((u) => u.field === f))) {
    unverified.push({
      field,
      condition: `${cardFieldLabel(field)}: not known when the card was written`,
      source: origin,
    });
  }
  card.unverified = unverified;
  if (given.cardVersion !== undefined && given.cardVersion !== CARD_SCHEMA_VERSION)
    problems.push({ path: 'cardVersion', message: `this retrysafe writes version ${CARD_SCHEMA_VERSION} cards` });
  for (const key of Object.keys(given))
    if (
      key !== 'cardVersion' &&
      !HAND_WRITTEN.includes(key) &&
      !cardLeaves().some((l) => l.path === key || l.path.startsWith(`${key}.`))
    )
      problems.push({ path: key, message: 'not a card field' });

  const v = validateCard(card);
  // one problem per cause: no rule without intent fields, no "missing object" for a field already named
  const mine = problems.filter(
    (p) =>
      !(p.path === 'businessOperationId.rule' && problems.some((q) => q.path === 'businessOperationId.intentFields')),
  );
  const all = [
    ...mine,
    ...v.problems.filter((p) => !mine.some((q) => p.path.startsWith(q.path) || q.path.startsWith(`${p.path}.`))),
  ];
  if (all.length)
    throw new UsageError(`the card cannot be completed: ${all.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
  const done = inSchemaOrder(card, cardJsonSchema() as Schema) as unknown as RetrySafetyCard;
  const yaml = !opts.out || ['.yaml', '.yml'].includes(extname(opts.out).toLowerCase());
  const schemaPath = `./node_modules/@retrysafe/contract/schema/retry-safety-card.v${CARD_SCHEMA_VERSION}.schema.json`;
  const text = yaml
    ? `# yaml-language-server: $schema=${schemaPath}\n${(await import('yaml')).stringify(done, { lineWidth: 0 })}`
    : `${JSON.stringify({ $schema: schemaPath, ...done }, null, 2)}\n`;
  if (opts.out) writeText(opts.out, text);
  // unknowns: each listed in unverified[]; defaulted: plain fields that took retrysafe's default; text: the card as written
  return { card: done, unknowns, defaulted, refusals: refusals(done), text, written: opts.out ?? null };
}

function inSchemaOrder(value: unknown, schema: Schema): unknown {
  const props = schema.properties as Record<string, Schema> | undefined;
  if (!props || typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const obj = value as Record<string, unknown>;
  const keys = [...Object.keys(props).filter((k) => k in obj), ...Object.keys(obj).filter((k) => !(k in props))];
  return Object.fromEntries(keys.map((k) => [k, props[k] ? inSchemaOrder(obj[k], props[k]) : obj[k]]));
}

/** Asks a question and reads one line; null at the end of input, after which the rest is left unknown or default. */
function lineReader(input: NodeJS.ReadableStream, prompt: (t: string) => void) {
  const rl = createInterface({ input, terminal: false });
  const lines = rl[Symbol.asyncIterator]();
  let ended = false;
  return {
    async next(text: string): Promise<string | null> {
      if (ended) return null;
      prompt(text);
      const r = await lines.next();
      if (r.done) prompt('\n');
      ended = r.done === true;
      return r.done ? null : r.value;
    },
    close: () => rl.close(),
  };
}

/** Asks for one field until the answer fits; an empty answer (or end of input) leaves a fact unknown and a plain field at its default. */
async function askLeaf(
  ask: ReturnType<typeof lineReader>,
  say: (t: string) => void,
  leaf: Leaf,
  label: string,
  fallback: unknown,
): Promise<{ value: unknown } | null> {
  const rule = answerRule(leaf);
  const dflt = leaf.fact ? 'enter = unknown' : fallback !== undefined ? `enter = ${String(fallback)}` : 'required';
  for (;;) {
    const answer = (await ask.next(`${label} (${leaf.path}) [${rule.hint}; ${dflt}]: `))?.trim();
    if (!answer || (leaf.fact && answer === UNKNOWN)) return null;
    const value = rule.read(answer);
    if (value === undefined) {
      say(`  expected ${rule.expected}\n`);
      continue;
    }
    if (!leaf.fact) return { value };
    for (;;) {
      const source = await ask.next('  source (a public URL or a file of your project): ');
      if (source === null) return null;
      if (source.trim()) return { value: { value, source: source.trim() } };
    }
  }
}

export const cardsInitCommand = defineCommand({
  name: 'cards init',
  description:
    'fill a new retry safety card field by field (asks, or --from a partial JSON/YAML card); what it cannot fill stays unknown, and it shows what the runner will refuse because of that',
  options: CARDS_INIT_OPTIONS,
  async run({ io, json }, o) {
    const r = await cardsInit(o);
    if (o.json) {
      const { text: _text, ...result } = r; // the card is in `card`
      json({ ok: true, ...result });
      return EXIT.ok;
    }
    if (!r.written) io.out(r.text);
    const report = [
      r.written ? `wrote ${r.written}` : '',
      `${r.unknowns.length} fact(s) left unknown${r.unknowns.length ? `: ${r.unknowns.join(', ')}` : ''} (listed in unverified[])`,
      r.defaulted.length ? `${r.defaulted.length} field(s) took retrysafe's defaults: ${r.defaulted.join(', ')}` : '',
      r.refusals.length
        ? `Because of that, the runner will refuse:\n${r.refusals.map((x) => `  - ${x}`).join('\n')}`
        : 'The runner relies on nothing unknown in this card.',
    ]
      .filter(Boolean)
      .join('\n');
    (r.written ? io.out : io.err)(report);
    return EXIT.ok;
  },
});
