import { describe, expect, it } from 'vitest';
import { sampleCard } from './__fixtures__/sample-card.js';
import { cardRows, renderCard } from './card-render.js';
import { validateCard } from './card-validate.js';
import type { RetrySafetyCard } from './card.js';
import { businessOperationId } from './ids.js';
import { describeNormalization, differingPaths, normalizeIntent, normalizeParams } from './normalize.js';

const base = sampleCard as unknown as RetrySafetyCard;
const withBo = (bo: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  ({ ...base, businessOperationId: { ...base.businessOperationId, ...bo }, ...extra }) as unknown as RetrySafetyCard;
const field = base.businessOperationId.intentFields[0]!;

describe('normalisation steps (issue 16)', () => {
  it('trim, collapse-whitespace, nfkc, case-fold, canonical-number, in the declared order, on strings at or below the field', () => {
    const rules = [{ field: 'ref', steps: ['nfkc', 'trim', 'collapse-whitespace', 'case-fold'] as const, source: 't' }];
    expect(normalizeIntent({ ref: '  ＰＯ－１００１ \u00a0 a ' }, rules)).toEqual({ ref: 'po-1001 a' });
    expect(normalizeIntent({ ref: 'Straße' }, rules)).toEqual({ ref: 'strasse' });
    const n = [{ field: 'q', steps: ['canonical-number'] as const, source: 't' }];
    for (const v of ['1500', '1.5e3', ' 1500.0 ', 1500]) expect(normalizeIntent({ q: v }, n)).toEqual({ q: 1500 });
    expect(normalizeIntent({ q: '15 00' }, n)).toEqual({ q: '15 00' });
    // a field without a rule is untouched; nested values beneath a declared field are normalised
    expect(normalizeIntent({ other: ' x ', ref: { a: [' b '] } }, [{ field: 'ref', steps: ['trim'], source: 't' }])).toEqual({ other: ' x ', ref: { a: ['b'] } });
  });

  it('normalizeParams applies dot-path rules to a copy; differingPaths names paths, never values, ignoring key order and number spelling', () => {
    const p = { a: { note: ' hi ' }, n: 1 };
    const out = normalizeParams(p, [{ field: 'a.note', steps: ['trim'] }, { field: 'missing.x', steps: ['trim'] }]);
    expect(out).toEqual({ a: { note: 'hi' }, n: 1 });
    expect(p.a.note).toBe(' hi ');
    expect(differingPaths({ b: 1, a: [1, { c: 'x' }] }, { a: [1, { c: 'y' }], b: 1.0 })).toEqual(['a[1].c']);
    expect(differingPaths({ a: 1 }, { a: 1, z: 'new' })).toEqual(['z']);
    expect(differingPaths([1], [1, 2])).toEqual(['(root)']);
  });

  it('the v2 id of an intent in normal form is the v1 id', () => {
    const rules = [{ field: 'ref', steps: ['trim'] as const, source: 't' }];
    expect(businessOperationId('a.b', normalizeIntent({ ref: 'x ' }, rules))).toBe(businessOperationId('a.b', { ref: 'x' }));
  });
});

describe('the optional card sections (issue 16)', () => {
  it('accepts a declared normalisation, comparison and replay indicator, and renders them', () => {
    const card = withBo(
      { idRule: 'v2', normalize: [{ field, steps: ['trim'], source: 'https://example.test/docs' }] },
      {
        paramComparison: [{ field: 'note', compare: 'normalized', steps: ['collapse-whitespace'], source: 'https://example.test/notes' }],
        storedResult: { ...base.storedResult, replayIndicator: { value: { header: 'Idempotent-Replayed', value: 'true' }, source: 'https://example.test/replay' } },
      },
    );
    expect(validateCard(card)).toMatchObject({ ok: true });
    const rows = cardRows(card);
    expect(rows.find((r) => r.path === 'businessOperationId.normalize')).toMatchObject({ value: `${field}: trim`, source: 'https://example.test/docs' });
    expect(rows.find((r) => r.path === 'storedResult.replayIndicator')).toMatchObject({ value: 'Idempotent-Replayed: true' });
    expect(renderCard(card, 'markdown')).toContain('| Param comparison (others exact) | note: collapse-whitespace |');
    // a card without them renders as before
    expect(cardRows(base).some((r) => r.path === 'businessOperationId.normalize')).toBe(false);
  });

  it('refuses a normalisation without id rule v2, an unknown step, a field that is not an intent field, a missing source', () => {
    const problems = (c: RetrySafetyCard) => validateCard(c).problems.map((p) => p.path);
    expect(problems(withBo({ normalize: [{ field, steps: ['trim'], source: 's' }] }))).toContain('businessOperationId.idRule');
    expect(problems(withBo({ idRule: 'v2', normalize: [{ field, steps: ['shout'], source: 's' }] }))).toContain('businessOperationId.normalize[0].steps');
    expect(problems(withBo({ idRule: 'v2', normalize: [{ field: 'nope', steps: ['trim'], source: 's' }] }))).toContain('businessOperationId.normalize[0].field');
    expect(problems(withBo({ idRule: 'v2', normalize: [{ field, steps: ['trim'], source: '' }] }))).toContain('businessOperationId.normalize[0].source');
    expect(problems(withBo({ idRule: 'v3' }))).toContain('businessOperationId.idRule');
    expect(problems(withBo({}, { paramComparison: [{ field: 'note', compare: 'normalized', source: 's' }] }))).toContain('paramComparison[0].steps');
    expect(problems(withBo({}, { storedResult: { ...base.storedResult, replayIndicator: { value: { header: '' }, source: 's' } } }))).toContain('storedResult.replayIndicator.value');
  });

  it('describes rules for tool descriptions', () => {
    expect(describeNormalization(undefined)).toMatch(/exactly/);
    expect(describeNormalization([{ field: 'a', steps: ['trim', 'nfkc'] }, { field: 'b', compare: 'exact' }])).toBe('a: trim, nfkc; b: exact');
  });
});
