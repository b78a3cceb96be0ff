import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sampleCard } from './__fixtures__/sample-card.js';
import { renderCard } from './card-render.js';
import { durationMs, formatDuration } from './entry-rules.js';
import { CardValidationError, defineCard, type RetrySafetyCard, validateCard } from './index.js';

const REQUIRED_TOP_LEVEL = [
  'cardVersion',
  'provider',
  'operation',
  'sideEffect',
  'businessOperationId',
  'ids',
  'providerKey',
  'keyReuse',
  'parameterMatching',
  'storedResult',
  'lookup',
  'retention',
  'concurrency',
  'retryableErrors',
  'nonRetryableErrors',
  'backoff',
  'limits',
  'retryLayer',
  'reconciler',
  'handoff',
  'duplicateTest',
  'receipts',
  'unverified',
];

describe('validateCard', () => {
  it('accepts a complete card', () => {
    const v = validateCard(sampleCard);
    expect(v.problems).toEqual([]);
    expect(v.ok).toBe(true);
    expect(v.unknowns).toEqual(['providerKey.scope']);
  });

  it('lists every missing field at once, not the first one', () => {
    const v = validateCard({});
    expect(v.ok).toBe(false);
    expect(v.problems.map((p) => p.path).sort()).toEqual([...REQUIRED_TOP_LEVEL].sort());
  });

  it('lists every missing nested field with its path', () => {
    const { lookup: _l, ...rest } = sampleCard;
    const broken = { ...rest, lookup: {}, providerKey: { ...sampleCard.providerKey, maxLength: { value: 255 } } };
    const paths = validateCard(broken).problems.map((p) => p.path);
    expect(paths).toEqual(
      expect.arrayContaining(['lookup.method', 'lookup.consistencyDelay', 'providerKey.maxLength.source']),
    );
    expect(paths).toHaveLength(3);
  });

  it('removing any one leaf field is reported at that exact path', () => {
    const leaves: string[] = [];
    const walk = (o: Record<string, unknown>, prefix: string) => {
      for (const [k, v] of Object.entries(o)) {
        const p = prefix ? `${prefix}.${k}` : k;
        if (v && typeof v === 'object' && !Array.isArray(v) && !('source' in v)) walk(v as Record<string, unknown>, p);
        else leaves.push(p);
      }
    };
    walk(sampleCard as unknown as Record<string, unknown>, '');
    expect(leaves.length).toBeGreaterThan(35);
    for (const leaf of leaves) {
      const copy = structuredClone(sampleCard) as unknown as Record<string, unknown>;
      const parts = leaf.split('.');
      let cur = copy;
      for (const part of parts.slice(0, -1)) cur = cur[part] as Record<string, unknown>;
      delete cur[parts.at(-1)!];
      const paths = validateCard(copy).problems.map((p) => p.path);
      expect(paths, `removing ${leaf}`).toContain(leaf);
    }
  });

  it('rejects wrong values, uncited facts, bad durations and unlisted unknowns', () => {
    const bad = {
      ...sampleCard,
      parameterMatching: { value: 'sometimes', source: 'x' },
      retention: { minimum: { value: '24 hours', source: 'x' } },
      concurrency: { value: 'rejects-in-progress', source: '' },
      lookup: { ...sampleCard.lookup, consistencyDelay: { value: 'unknown', source: 'not documented' } },
      extra: 1,
    };
    const paths = validateCard(bad).problems.map((p) => p.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'parameterMatching.value',
        'retention.minimum.value',
        'concurrency.source',
        'lookup.consistencyDelay',
        'extra',
      ]),
    );
  });

  it('refuses a key charset that is no character class body: every key derivation would fail or read it another way', () => {
    const withCharset = (value: string) => ({
      ...sampleCard,
      providerKey: { ...sampleCard.providerKey, charset: { value, source: 'https://example.invalid/docs/keys' } },
    });
    for (const value of ['z-a', '^A-Z', 'A-Z]x[', '', '\\'])
      expect(
        validateCard(withCharset(value)).problems.map((p) => p.path),
        JSON.stringify(value),
      ).toContain('providerKey.charset.value');
    for (const value of ['A-Za-z0-9_:.-', '\\x20-\\x7e', 'a-z\\]'])
      expect(validateCard(withCharset(value)).problems, JSON.stringify(value)).toEqual([]);
  });

  it('refuses an operation name no business-operation id can start with: every derived id would be refused', () => {
    const named = (provider: string, operation: string) => ({ ...sampleCard, provider, operation });
    for (const [provider, operation] of [
      ['example', 'example.orders create'],
      ['example', 'example.orders:create'],
      ['example', 'example.orders/create'],
      ['example', 'example.'],
      ['ex ample', 'ex ample.orders'],
      ['example', `example.${'o'.repeat(170)}`],
    ])
      expect(
        validateCard(named(provider!, operation!)).problems.map((p) => p.path),
        operation,
      ).toContain('operation');
    expect(validateCard(named('acme-orders', 'acme-orders.orders.create_v2')).problems).toEqual([]);
    // The name as an MCP tool may be named (a fenced `2fa_enable`): its ids are valid ones.
    for (const operation of ['example.1st', 'example.2fa_enable', 'example.a..b', 'example.-x'])
      expect(validateCard(named('example', operation)).problems, operation).toEqual([]);
  });

  it('refuses a backoff cap below its base, or no time to run at all: the runner could use neither', () => {
    const paths = (backoff: object, limits: object) =>
      validateCard({
        ...sampleCard,
        backoff: { ...sampleCard.backoff, ...backoff },
        limits: { ...sampleCard.limits, ...limits },
      }).problems.map((p) => p.path);
    expect(paths({ base: '2s', cap: '1s' }, {})).toEqual(['backoff.cap']);
    expect(paths({}, { maxElapsed: '0s' })).toEqual(['limits.maxElapsed']);
    expect(paths({ base: '1s', cap: '1s' }, { maxElapsed: '0.5ms' })).toEqual([]);
  });

  it('round-trips through JSON unchanged', () => {
    const json = renderCard(sampleCard, 'json');
    const back = JSON.parse(json) as RetrySafetyCard;
    expect(back).toEqual(sampleCard);
    expect(validateCard(back).ok).toBe(true);
    expect(renderCard(back, 'json')).toBe(json);
  });

  it('defineCard freezes a valid card and throws a typed error listing every problem', () => {
    const card = defineCard(structuredClone(sampleCard) as RetrySafetyCard);
    expect(Object.isFrozen(card)).toBe(true);
    expect(Object.isFrozen(card.providerKey.travels)).toBe(true);
    try {
      defineCard({ ...sampleCard, reconciler: '', receipts: undefined } as unknown as RetrySafetyCard);
      expect.unreachable();
    } catch (e) {
      expect(CardValidationError.isInstance(e)).toBe(true);
      expect((e as CardValidationError).problems.map((p) => p.path)).toEqual(['reconciler', 'receipts']);
    }
  });
});

describe('renderCard', () => {
  it('renders the sample card to the checked-in Markdown fixture', () => {
    const expected = readFileSync(new URL('./__fixtures__/sample-card.md', import.meta.url), 'utf8');
    expect(renderCard(sampleCard, 'markdown')).toBe(expected);
  });

  it('highlights unknown values', () => {
    const md = renderCard(sampleCard, 'markdown');
    expect(md).toContain('| Provider key scope | **⚠ unknown** | not documented |');
  });
});

describe('durations', () => {
  it('parse exactly and format back', () => {
    expect(durationMs('24h')).toBe(86_400_000);
    expect(durationMs('500ms')).toBe(500);
    expect(durationMs('1.5s')).toBe(1500);
    expect(formatDuration(86_400_000)).toBe('1d');
    expect(formatDuration(90_000)).toBe('90s');
    expect(() => durationMs('24 hours' as never)).toThrow(RangeError);
  });
});

describe('card sections in READMEs', () => {
  const doc = (body: string) =>
    `# Adapter\n\nintro\n\n<!-- cards:start (generated; do not edit) -->\n\n${body}\n\n<!-- cards:end -->\n\nafter\n`;
  it('replaces only the section between the markers and reads it back', async () => {
    const { readCardSection, renderCards, replaceCardSection } = await import('./card-render.js');
    const body = renderCards([sampleCard, sampleCard]);
    const out = replaceCardSection(doc('stale table'), body);
    expect(out.startsWith('# Adapter\n\nintro\n\n<!-- cards:start (generated; do not edit) -->\n\n')).toBe(true);
    expect(out.endsWith('\n\n<!-- cards:end -->\n\nafter\n')).toBe(true);
    expect(readCardSection(out)).toBe(body.trim());
    expect(replaceCardSection(out, body)).toBe(out);
  });
  it('refuses a document without both markers', async () => {
    const { readCardSection, replaceCardSection } = await import('./card-render.js');
    expect(() => readCardSection('# no markers')).toThrow(RangeError);
    expect(() => replaceCardSection('<!-- cards:end --> <!-- cards:start -->', 'x')).toThrow(/no card section/);
  });
});
