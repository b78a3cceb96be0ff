import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { businessOperationId, pickIntent, type RetrySafetyCard, validateCard } from '@retrysafe/contract';
import { normalizeIntent } from '@retrysafe/contract/rules';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REPO } from './helpers.js';
import { expectWalked, shippedCards } from './shipped-cards.js';

// Issue 40, item 1: normalisation never merges two intents the provider keeps apart. The oracle below is
// written apart from the contract's steps: the provider's equality of a field is exact (canonical JSON
// writes strings as given) up to what the card declares; a step that can merge distinct values counts only
// where the card cites the provider's evidence for it.

const MERGING = new Set([
  'collapse-whitespace',
  'nfkc',
  'case-fold',
  'canonical-number',
  'datetime-zero-fraction',
  'empty-array-as-absent',
]);

/** An exact decimal as (sign, digits, exponent), or null when the text is not a decimal numeral. */
function decimal(text: string): string | null {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim());
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return null;
  const digits = (m[2]! + (m[3] ?? '')).replace(/^0+/, '');
  if (digits === '') return '0';
  const exp =
    BigInt(m[4] ?? '0') - BigInt((m[3] ?? '').length) + BigInt(digits.length - digits.replace(/0+$/, '').length);
  return `${m[1] === '-' ? '-' : ''}${digits.replace(/0+$/, '')}e${exp}`;
}

/** Simple case folding: a character whose upper case is one character folds through it; ß, ﬁ, İ keep their own. */
function simpleFold(c: string): string {
  const upper = c.toUpperCase();
  const lower = (upper.length === c.length ? upper : c).toLowerCase();
  return [...lower].length === 1 ? lower : c;
}

function oracleStep(s: string, step: string): string {
  if (step === 'trim') return s.trim();
  if (step === 'collapse-whitespace') return s.replace(/\s+/gu, ' ');
  if (step === 'nfkc') return s.normalize('NFKC');
  if (step === 'case-fold') return [...s].map(simpleFold).join('');
  if (step === 'canonical-number') return decimal(s) ?? s;
  if (step === 'datetime-zero-fraction') {
    const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d+)$/.exec(s);
    if (!m) return s;
    const digits = m[2]!.replace(/0+$/, '');
    return digits ? `${m[1]}.${digits}` : m[1]!;
  }
  throw new Error(`oracle has no step ${step}`);
}

/** The steps under which the provider treats two values of `field` as one: formatting always, a merge only with evidence. */
function providerSteps(card: RetrySafetyCard, field: string): string[] {
  const rules = (card.businessOperationId.normalize ?? []).filter(
    (r) => field === r.field || field.startsWith(r.field + '.'),
  );
  return rules.flatMap((r) =>
    r.steps.filter((s) => !MERGING.has(s) || /^https:\/\/\S+$/.test((r as { evidence?: string }).evidence ?? '')),
  );
}

const providerSame = (card: RetrySafetyCard, field: string, a: string, b: string) => {
  const steps = providerSteps(card, field);
  const f = (s: string) => steps.reduce(oracleStep, s);
  return f(a) === f(b);
};

/** Params holding `value` at every intent field (dot paths become nested objects). */
function paramsWith(card: RetrySafetyCard, values: (field: string) => unknown): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const field of card.businessOperationId.intentFields) {
    const parts = field.split('.');
    let cur = params;
    for (const part of parts.slice(0, -1)) cur = (cur[part] ??= {}) as Record<string, unknown>;
    cur[parts.at(-1)!] = values(field);
  }
  return params;
}

/** The id the contract derives for these params under the card. */
const idOf = (card: RetrySafetyCard, params: unknown) => {
  const bo = card.businessOperationId;
  return businessOperationId(card.operation, normalizeIntent(pickIntent(params, bo.intentFields), bo.normalize));
};

// Values a provider keeps apart although a careless fold would merge them: compatibility forms,
// case, inner white space, numerals beyond a double's precision.
const TRICKY = [
  '2026-12-04T10:00:00',
  '2026-12-04T10:00:00.5',
  '2026-12-04T10:00:00.50',
  '2026-12-04T10:00:00.05',
  'INV-102',
  'INV-10²',
  'lot 1',
  'lot ①',
  'ﬁle',
  'file',
  'Ａ1',
  'A1',
  'a1',
  'Straße',
  'STRASSE',
  'strasse',
  'a  b',
  'a b',
  'a\u00a0b',
  'K',
  '\u212a',
  '12345678901234567',
  '12345678901234568',
  '0.1',
  '0.10000000000000001',
  '1e2',
  '100',
  '100.0',
  '-0',
  '0',
  'e\u0301',
  '\u00e9',
];
const piece = fc.oneof(
  fc.constantFrom(...TRICKY),
  fc.string({ maxLength: 6 }),
  fc.string({ unit: 'grapheme', maxLength: 4 }),
  fc.bigInt().map(String),
);
const value = fc.array(piece, { minLength: 1, maxLength: 3 }).map((p) => p.join(''));
const space = fc.constantFrom('', ' ', '  ', '\t', '\n', '\u00a0', '\u3000');

const shipped = await shippedCards();

describe('normalisation never merges what the provider keeps apart (every shipped card)', () => {
  it('walks every adapter’s cards, and each validates', () => {
    expectWalked(shipped);
    for (const [name, card] of shipped) expect(validateCard(card).problems, name).toEqual([]);
  });

  it('the published JSON Schema accepts every shipped card and refuses a merging step without the provider’s evidence', () => {
    const schema = JSON.parse(
      readFileSync(join(REPO, 'packages/contract/schema/retry-safety-card.v1.schema.json'), 'utf8'),
    ) as object;
    const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);
    for (const [name, card] of shipped)
      expect(validate(JSON.parse(JSON.stringify(card))), `${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
    const [, card] = shipped.find(([, c]) => c.businessOperationId.normalize?.length)!;
    const field = card.businessOperationId.normalize![0]!.field;
    const withSteps = (steps: string[], evidence?: string) => ({
      ...card,
      businessOperationId: {
        ...card.businessOperationId,
        normalize: [{ field, steps, source: 'retrysafe policy', ...(evidence ? { evidence } : {}) }],
      },
    });
    for (const step of [
      'nfkc',
      'case-fold',
      'collapse-whitespace',
      'canonical-number',
      'datetime-zero-fraction',
      'empty-array-as-absent',
    ]) {
      expect(validate(withSteps(['trim', step])), step).toBe(false);
      expect(validate(withSteps([step], 'docs/policy.md')), step).toBe(false);
      expect(validate(withSteps([step], 'https://provider.example/docs')), step).toBe(true);
    }
  });

  it.each(shipped)('%s: values the provider treats as different never get one id', (_name, card) => {
    const fields = card.businessOperationId.intentFields;
    fc.assert(
      fc.property(fc.constantFrom(...fields), value, value, fc.constantFrom(...TRICKY), (field, base, a, b) => {
        fc.pre(!providerSame(card, field, a, b));
        const idA = idOf(
          card,
          paramsWith(card, (f) => (f === field ? a : base)),
        );
        const idB = idOf(
          card,
          paramsWith(card, (f) => (f === field ? b : base)),
        );
        expect(idA).not.toBe(idB);
      }),
      { numRuns: 300 },
    );
    // The pairs a fold would merge, tried on every field.
    for (const field of fields)
      for (const a of TRICKY)
        for (const b of TRICKY) {
          if (providerSame(card, field, a, b)) continue;
          expect(
            idOf(
              card,
              paramsWith(card, (f) => (f === field ? a : 'x')),
            ),
            `${field}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`,
          ).not.toBe(
            idOf(
              card,
              paramsWith(card, (f) => (f === field ? b : 'x')),
            ),
          );
        }
  });

  it.each(shipped)('%s: values that differ only in declared formatting always get one id', (_name, card) => {
    const fields = card.businessOperationId.intentFields;
    fc.assert(
      fc.property(value, space, space, (base, before, after) => {
        const formatted = (f: string) => {
          return providerSteps(card, f).includes('trim') ? before + base + after : base;
        };
        expect(idOf(card, paramsWith(card, formatted))).toBe(
          idOf(
            card,
            paramsWith(card, () => base),
          ),
        );
      }),
      { numRuns: 200 },
    );
  });
});
