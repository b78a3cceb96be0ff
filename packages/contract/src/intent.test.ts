import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sampleCard } from './__fixtures__/sample-card.js';
import { fingerprint } from './canonical.js';
import type { RetrySafetyCard } from './card.js';
import { cardRows, renderCard } from './card-render.js';
import { validateCard } from './card-validate.js';
import {
  businessOperationId,
  canonicalDecimal,
  describeNormalization,
  differingPaths,
  intentOf,
  normalizeIntent,
  normalizeParams,
  pickIntent,
} from './intent.js';

const base = sampleCard as unknown as RetrySafetyCard;
const withBo = (bo: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  ({ ...base, businessOperationId: { ...base.businessOperationId, ...bo }, ...extra }) as unknown as RetrySafetyCard;
const field = base.businessOperationId.intentFields[0]!;

describe('normalisation steps (issue 16)', () => {
  it('trim, collapse-whitespace, nfkc, case-fold, canonical-number, in the declared order, on strings at or below the field', () => {
    const rules = [{ field: 'ref', steps: ['nfkc', 'trim', 'collapse-whitespace', 'case-fold'] as const, source: 't' }];
    expect(normalizeIntent({ ref: '  ＰＯ－１００１ \u00a0 a ' }, rules)).toEqual({ ref: 'po-1001 a' });
    expect(normalizeIntent({ ref: 'STRAẞE' }, rules)).toEqual({ ref: 'straße' });
    const n = [{ field: 'q', steps: ['canonical-number'] as const, source: 't' }];
    for (const v of ['1500', '1.5e3', ' 1500.0 ', 1500, '+01500.000', '15000e-1'])
      expect(normalizeIntent({ q: v }, n)).toEqual({ q: '1500' });
    expect(normalizeIntent({ q: '15 00' }, n)).toEqual({ q: '15 00' });
    // a field without a rule is untouched; nested values beneath a declared field are normalised
    expect(normalizeIntent({ other: ' x ', ref: { a: [' b '] } }, [{ field: 'ref', steps: ['trim'] }])).toEqual({
      other: ' x ',
      ref: { a: ['b'] },
    });
  });

  it('case-fold folds one character for one: names a case-insensitive provider keeps apart keep two ids', () => {
    const fold = (ref: string) => normalizeIntent({ ref }, [{ field: 'ref', steps: ['case-fold'] as const }]).ref;
    for (const [a, b] of <Array<[string, string]>>[
      ['Straße', 'STRASSE'],
      ['straße', 'strasse'],
      ['ﬁle', 'file'],
      ['İ', 'i̇'],
    ])
      expect(fold(a), a).not.toBe(fold(b));
    for (const [a, b] of <Array<[string, string]>>[
      ['STRAẞE', 'straße'],
      ['ΣΊΣΥΦΟΣ', 'σίσυφος'],
      ['Octo-Repo', 'octo-repo'],
      ['\u212a', 'k'],
      ['ſ', 'S'],
    ])
      expect(fold(a), a).toBe(fold(b));
  });

  it('rules apply in the order declared for the id as for the params comparison: one id never meets a conflict', () => {
    // NFKC then case-fold makes 'ℌ' 'h'; case-fold then NFKC makes it 'H'.
    const rules = [
      { field: 'customer.name', steps: ['case-fold'] as const },
      { field: 'customer', steps: ['nfkc'] as const },
    ];
    for (const name of ['ℌ', 'h', 'H', 'ﬀ', 'İ']) {
      const params = { customer: { name } };
      const intent = normalizeIntent(pickIntent(params, ['customer']), rules);
      expect(intent.customer, name).toEqual((normalizeParams(params, rules) as typeof params).customer);
    }
  });

  it('a rule on a path beneath an intent field (which the card accepts) is applied: one intent keeps one id', () => {
    const rules = [{ field: 'customer.email', steps: ['trim', 'case-fold'] as const }];
    const given = { customer: { email: ' A@B.com ', name: ' Ann ' } };
    expect(normalizeIntent(given, rules)).toEqual({ customer: { email: 'a@b.com', name: ' Ann ' } });
    expect(given.customer.email).toBe(' A@B.com '); // the caller's params are not changed
    const idOf = (email: string) => businessOperationId('a.b', normalizeIntent({ customer: { email } }, rules));
    expect(idOf(' A@B.com ')).toBe(idOf('a@b.com'));
    expect(idOf('a@b.org')).not.toBe(idOf('a@b.com'));
    // a declared path that is not there leaves the intent as given
    expect(normalizeIntent({ customer: 'c-1' }, rules)).toEqual({ customer: 'c-1' });
  });

  it('a rule on a path that crosses an array applies to every item (or to the one item an index names): one intent keeps one id', () => {
    const rules = [{ field: 'lines.ref', steps: ['trim', 'case-fold'] as const }];
    const idOf = (...refs: string[]) =>
      businessOperationId('a.b', normalizeIntent({ lines: refs.map((ref) => ({ ref, qty: ' 1 ' })) }, rules));
    expect(idOf(' A-1 ', 'B-2 ')).toBe(idOf('a-1', 'b-2'));
    expect(idOf('a-1', 'b-3')).not.toBe(idOf('a-1', 'b-2'));
    expect(normalizeParams({ lines: [{ ref: ' A ', qty: ' 1 ' }] }, rules)).toEqual({
      lines: [{ ref: 'a', qty: ' 1 ' }],
    });
    // an index names one item; `length` is not a value of the intent
    const first = [{ field: 'lines.0.ref', steps: ['trim'] as const }];
    expect(normalizeIntent({ lines: [{ ref: ' a ' }, { ref: ' b ' }] }, first)).toEqual({
      lines: [{ ref: 'a' }, { ref: ' b ' }],
    });
    const count = [{ field: 'lines.length', steps: ['canonical-number'] as const }];
    expect(normalizeParams({ lines: [1.5] }, count)).toEqual({ lines: [1.5] });
  });

  it("an intent field whose path crosses an array is every item's value, in order (as a rule on such a path reads it)", () => {
    const params = {
      lines: [
        { ref: 'a', qty: 1 },
        { ref: 'b', qty: 2 },
      ],
    };
    expect(pickIntent(params, ['lines.ref'])).toEqual({ 'lines.ref': ['a', 'b'] });
    expect(pickIntent(params, ['lines.1.ref'])).toEqual({ 'lines.1.ref': 'b' });
    const rules = [{ field: 'lines.ref', steps: ['trim'] as const }];
    const idOf = (...refs: string[]) =>
      businessOperationId(
        'a.b',
        intentOf({ lines: refs.map((ref) => ({ ref })) }, { intentFields: ['lines.ref'], normalize: rules }),
      );
    expect(idOf(' a ', 'b')).toBe(idOf('a', 'b'));
    expect(idOf('b', 'a')).not.toBe(idOf('a', 'b'));
    expect(() => pickIntent({ lines: [{ ref: 'a' }, {}] }, ['lines.ref'])).toThrow(
      /lines.ref.*missing from params|missing from params/,
    );
  });

  it('an own __proto__ key under a normalised field stays part of the intent: two intents that differ in it keep two ids', () => {
    const rules = [{ field: 'customer', steps: ['trim'] as const }];
    const [a, b] = ['a', 'b'].map((v) =>
      normalizeIntent({ customer: JSON.parse(`{"__proto__":"${v}","id":" 1 "}`) }, rules),
    );
    expect(Object.keys(a!.customer as object)).toEqual(['__proto__', 'id']);
    expect(a).not.toEqual(b);
  });

  it('an intent field is picked only from the params themselves: `__proto__` keeps two ids, an inherited name is missing', () => {
    const idOf = (text: string) => {
      const intent = pickIntent(JSON.parse(text), ['__proto__']);
      return businessOperationId('a.b', normalizeIntent(intent, [{ field: '__proto__', steps: ['trim'] }]));
    };
    expect(idOf('{"__proto__":"a"}')).not.toBe(idOf('{"__proto__":"b"}'));
    expect(() => pickIntent({}, ['toString'])).toThrow(/toString.*missing from params|missing from params/);
    expect(() => pickIntent({ a: {} }, ['a.constructor'])).toThrow(/missing from params/);
  });

  it('normalizeParams applies dot-path rules to a copy; differingPaths names paths, never values, ignoring key order and number spelling', () => {
    const p = { a: { note: ' hi ' }, n: 1 };
    const out = normalizeParams(p, [
      { field: 'a.note', steps: ['trim'] },
      { field: 'missing.x', steps: ['trim'] },
    ]);
    expect(out).toEqual({ a: { note: 'hi' }, n: 1 });
    expect(p.a.note).toBe(' hi ');
    expect(differingPaths({ b: 1, a: [1, { c: 'x' }] }, { a: [1, { c: 'y' }], b: 1.0 })).toEqual(['a[1].c']);
    expect(differingPaths({ a: 1 }, { a: 1, z: 'new' })).toEqual(['z']);
    expect(differingPaths([1], [1, 2])).toEqual(['(root)']);
  });

  it('canonical-number compares exact decimals: no float merges neighbours', () => {
    const n = [{ field: 'q', steps: ['canonical-number'] as const, source: 't' }];
    const id = (q: unknown) => businessOperationId('a.b', normalizeIntent({ q }, n));
    expect(id('12345678901234567')).not.toBe(id('12345678901234568'));
    expect(id('12345678901234567890')).not.toBe(id('12345678901234567891'));
    expect(id('0.1')).not.toBe(id('0.10000000000000001'));
    expect(id('1e400')).not.toBe(id('1e401'));
    expect(id('0.1')).toBe(id(0.1));
    expect(id('1e21')).toBe(id(1e21));
    for (const [text, canonical] of [
      ['-0', '0'],
      ['-0.0e5', '0'],
      ['.5', '0.5'],
      ['5.', '5'],
      ['-00.0500', '-0.05'],
      ['1.5e-3', '0.0015'],
      ['1e50', '1e50'],
      ['123e-60', '123e-60'],
      ['+7', '7'],
    ] as const)
      expect(canonicalDecimal(text), text).toBe(canonical);
    for (const text of ['', '.', 'e5', '1e', '0x10', '1_000', 'NaN', 'Infinity', '1,5'])
      expect(canonicalDecimal(text), text).toBeNull();
  });

  it('canonical-number: two numerals are one exactly when they spell one decimal (property, against BigInt rationals)', () => {
    // The value of a numeral as an exact fraction mantissa / 10^scale, independently of canonicalDecimal.
    const exact = (sign: string, whole: string, frac: string, exp: number) => {
      const m = BigInt((sign === '-' ? '-' : '') + (whole + frac || '0'));
      const scale = frac.length - exp;
      return { m, scale };
    };
    const equal = (a: { m: bigint; scale: number }, b: { m: bigint; scale: number }) => {
      const s = Math.max(a.scale, b.scale);
      return a.m * 10n ** BigInt(s - a.scale) === b.m * 10n ** BigInt(s - b.scale);
    };
    const digits = (max: number) => fc.string({ unit: fc.constantFrom('0', '0', '1', '9', '5'), maxLength: max });
    const numeral = fc
      .record({
        sign: fc.constantFrom('', '+', '-'),
        whole: digits(22),
        frac: digits(22),
        exp: fc.integer({ min: -60, max: 60 }),
        e: fc.boolean(),
      })
      .filter((r) => r.whole + r.frac !== '');
    const text = (r: { sign: string; whole: string; frac: string; exp: number; e: boolean }) =>
      `${r.sign}${r.whole}${r.frac ? '.' + r.frac : ''}${r.e ? 'e' + r.exp : ''}`;
    const value = (r: { sign: string; whole: string; frac: string; exp: number; e: boolean }) =>
      exact(r.sign, r.whole, r.frac, r.e ? r.exp : 0);
    fc.assert(
      fc.property(numeral, numeral, (a, b) => {
        expect(canonicalDecimal(text(a)) === canonicalDecimal(text(b))).toBe(equal(value(a), value(b)));
      }),
      { numRuns: 3000 },
    );
    // The same value spelled another way always meets: scale a numeral by moving its exponent.
    fc.assert(
      fc.property(numeral, fc.integer({ min: 0, max: 30 }), (a, k) => {
        const shifted = `${a.sign}${a.whole}${a.frac}${'0'.repeat(k)}e${(a.e ? a.exp : 0) - a.frac.length - k}`;
        expect(canonicalDecimal(shifted)).toBe(canonicalDecimal(text(a)));
      }),
    );
  });

  it('the id of an intent in normal form is the id of the intent as written', () => {
    const rules = [{ field: 'ref', steps: ['trim'] as const, source: 't' }];
    expect(businessOperationId('a.b', normalizeIntent({ ref: 'x ' }, rules))).toBe(
      businessOperationId('a.b', { ref: 'x' }),
    );
  });
});

describe('empty-array-as-absent: [] at the declared path reads as the field left out', () => {
  const rules = [{ field: 'message.cc', steps: ['empty-array-as-absent'] as const }];
  const ABSENT = Symbol('absent');
  const mail = (cc: unknown) => ({ message: { to: ['a@x.test'], ...(cc === ABSENT ? {} : { cc }) } });
  const idOf = (cc: unknown) =>
    businessOperationId('a.b', intentOf(mail(cc), { intentFields: ['message'], normalize: rules }));
  const paramsOf = (cc: unknown) => fingerprint(normalizeParams(mail(cc), rules));

  it('[] and left out are one id and one params comparison; the caller’s params stay as given', () => {
    expect(idOf([])).toBe(idOf(ABSENT));
    expect(paramsOf([])).toBe(paramsOf(ABSENT));
    const given = mail([]);
    expect(normalizeIntent(given, rules)).toEqual({ message: { to: ['a@x.test'] } });
    expect(given.message).toEqual({ to: ['a@x.test'], cc: [] });
  });

  it.each([
    ['a non-empty array', ['b@x.test']],
    ['null', null],
    ['an array holding []', [[]]],
    ['an empty object', {}],
    ['an empty string', ''],
  ])('%s is not left out: its own id', (_what, cc) => {
    expect(idOf(cc)).not.toBe(idOf(ABSENT));
    expect(idOf(cc)).not.toBe(idOf([]));
    expect(paramsOf(cc)).not.toBe(paramsOf(ABSENT));
  });

  it('an array item is never dropped, and [] inside a non-empty array stays: items keep their places', () => {
    const at = (field: string, params: unknown) =>
      normalizeParams(params, [{ field, steps: ['empty-array-as-absent'] }]);
    expect(at('lines.0', { lines: [[], [1]] })).toEqual({ lines: [[], [1]] });
    expect(at('matrix', { matrix: [[], [1]] })).toEqual({ matrix: [[], [1]] });
    // a path that crosses an array reads every item's field, as a string step does
    expect(at('lines.tags', { lines: [{ tags: [] }, { tags: [[]] }, { tags: ['t'] }] })).toEqual({
      lines: [{}, { tags: [[]] }, { tags: ['t'] }],
    });
  });

  it('acts at its own path only: not on an intent field itself (refused there), not beneath it, after the string steps', () => {
    const own = [{ field: 'cc', steps: ['empty-array-as-absent'] as const }];
    expect(normalizeIntent({ cc: [] }, own)).toEqual({ cc: [] });
    expect(normalizeIntent({ message: { cc: { list: [] } } }, rules)).toEqual({ message: { cc: { list: [] } } });
    const trimmed = [{ field: 'message.cc', steps: ['trim', 'empty-array-as-absent'] as const }];
    expect(normalizeIntent({ message: { cc: [' '] } }, trimmed)).toEqual({ message: { cc: [''] } });
  });

  it('two values share an id exactly when they are one value, or each is [] or left out (property)', () => {
    const value = fc.oneof(fc.constant(ABSENT), fc.constant([]), fc.jsonValue({ maxDepth: 3 }));
    const same = (a: unknown, b: unknown) => {
      const empty = (v: unknown) => v === ABSENT || (Array.isArray(v) && v.length === 0);
      if (empty(a) || empty(b)) return empty(a) && empty(b);
      return fingerprint(a) === fingerprint(b);
    };
    fc.assert(
      fc.property(value, value, (a, b) => {
        expect(idOf(a) === idOf(b)).toBe(same(a, b));
        expect(paramsOf(a) === paramsOf(b)).toBe(same(a, b));
      }),
      { numRuns: 1000 },
    );
  });

  it('is declared only with the provider’s https evidence, beneath an intent field, on a field rather than an item', () => {
    const problems = (c: RetrySafetyCard) => validateCard(c).problems.map((p) => p.path);
    const rule = (f: string, evidence?: string) => ({
      field: f,
      steps: ['empty-array-as-absent'],
      source: 's',
      ...(evidence ? { evidence } : {}),
    });
    const bo = (r: object) => withBo({ intentFields: ['message', 'lines'], normalize: [r] });
    const docs = 'https://provider.example/docs#message';
    expect(problems(bo(rule('message.cc', docs)))).toEqual([]);
    expect(problems(bo(rule('message.cc')))).toEqual(['businessOperationId.normalize[0].evidence']);
    expect(problems(bo(rule('message.cc', 'docs/policy.md')))).toContain('businessOperationId.normalize[0].evidence');
    expect(problems(bo(rule('message', docs)))).toEqual(['businessOperationId.normalize[0].steps']);
    expect(problems(bo(rule('lines.0', docs)))).toEqual(['businessOperationId.normalize[0].field']);
    expect(problems(bo(rule('lines.tags', docs)))).toEqual([]);
    const compare = (f: string) => ({ paramComparison: [{ ...rule(f, docs), compare: 'normalized' }] });
    expect(problems(withBo({}, compare('meta.tags')))).toEqual([]);
    expect(problems(withBo({}, compare('meta.tags.1')))).toEqual(['paramComparison[0].field']);
    expect(describeNormalization([{ field: 'message.cc', steps: ['empty-array-as-absent'] }])).toBe(
      'message.cc: empty-array-as-absent',
    );
  });
});

describe('datetime-zero-fraction: trailing zeros of the fraction of a second are not another time', () => {
  const rules = [{ field: 'event.start.dateTime', steps: ['datetime-zero-fraction'] as const }];
  const idOf = (dateTime: string) =>
    businessOperationId('a.b', normalizeIntent({ event: { start: { dateTime, timeZone: 'UTC' } } }, rules));

  it('drops only an all-zero fraction of a date-time written as YYYY-MM-DDThh:mm:ss', () => {
    for (const zeros of ['.0', '.000', '.0000000'])
      expect(idOf(`2026-12-04T10:00:00${zeros}`)).toBe(idOf('2026-12-04T10:00:00'));
    // Graph writes every time with seven digits of fraction: .5 is returned as .5000000, one instant.
    for (const padded of ['.50', '.5000000'])
      expect(idOf(`2026-12-04T10:00:00${padded}`)).toBe(idOf('2026-12-04T10:00:00.5'));
    expect(idOf('2026-12-04T10:00:00.0120')).toBe(idOf('2026-12-04T10:00:00.012'));
    // Another second, another fraction, another spelling of the time: never merged.
    for (const [a, b] of [
      ['.5', '.05'],
      ['.5', '.51'],
      ['.5', '.0000005'],
      ['.1200001', '.12'],
    ])
      expect(idOf(`2026-12-04T10:00:00${a}`), `${a} ${b}`).not.toBe(idOf(`2026-12-04T10:00:00${b}`));
    for (const other of [
      '2026-12-04T10:00:01',
      '2026-12-04T10:00:00.5',
      '2026-12-04T10:00:05',
      '2026-12-04T10:00:00.',
      '2026-12-04T10:00',
      '2026-12-04T10:00:00Z',
      '2026-12-04T10:00:00.0Z',
      '2026-12-04 10:00:00',
      ' 2026-12-04T10:00:00',
      '2026-12-04T10:00:00.0000000 ',
      '２０２６-12-04T10:00:00',
      '2026-12-04T10:00:00.\u0660',
    ])
      expect(idOf(other), other).not.toBe(idOf('2026-12-04T10:00:00'));
  });

  it('is declared only with the provider’s https evidence', () => {
    const problems = (c: RetrySafetyCard) => validateCard(c).problems.map((p) => p.path);
    const step = 'datetime-zero-fraction';
    expect(problems(withBo({ normalize: [{ field, steps: [step], source: 's' }] }))).toContain(
      'businessOperationId.normalize[0].evidence',
    );
    expect(
      problems(
        withBo({ normalize: [{ field, steps: [step], source: 's', evidence: 'https://provider.example/docs' }] }),
      ),
    ).toEqual([]);
  });
});

describe('the optional card sections (issue 16)', () => {
  it('accepts a declared normalisation, comparison and replay indicator, and renders them', () => {
    const card = withBo(
      { normalize: [{ field, steps: ['trim'], source: 'https://example.test/docs' }] },
      {
        paramComparison: [
          {
            field: 'note',
            compare: 'normalized',
            steps: ['collapse-whitespace'],
            source: 'https://example.test/notes',
            evidence: 'https://example.test/notes',
          },
        ],
        storedResult: {
          ...base.storedResult,
          replayIndicator: {
            value: { header: 'Idempotent-Replayed', value: 'true' },
            source: 'https://example.test/replay',
          },
        },
      },
    );
    expect(validateCard(card)).toMatchObject({ ok: true });
    const rows = cardRows(card);
    expect(rows.find((r) => r.path === 'businessOperationId.normalize')).toMatchObject({
      value: `${field}: trim`,
      source: 'https://example.test/docs',
    });
    expect(rows.find((r) => r.path === 'storedResult.replayIndicator')).toMatchObject({
      value: 'Idempotent-Replayed: true',
    });
    expect(renderCard(card, 'markdown')).toContain('| Param comparison (others exact) | note: collapse-whitespace |');
    // a card without them renders as before
    expect(cardRows(base).some((r) => r.path === 'businessOperationId.normalize')).toBe(false);
  });

  it('refuses an unknown step, a field that is not an intent field, a missing source, an id rule field', () => {
    const problems = (c: RetrySafetyCard) => validateCard(c).problems.map((p) => p.path);
    expect(problems(withBo({ normalize: [{ field, steps: ['trim'], source: 's' }] }))).toEqual([]);
    expect(problems(withBo({ normalize: [{ field, steps: ['shout'], source: 's' }] }))).toContain(
      'businessOperationId.normalize[0].steps',
    );
    expect(problems(withBo({ normalize: [{ field: 'nope', steps: ['trim'], source: 's' }] }))).toContain(
      'businessOperationId.normalize[0].field',
    );
    expect(problems(withBo({ normalize: [{ field, steps: ['trim'], source: '' }] }))).toContain(
      'businessOperationId.normalize[0].source',
    );
    expect(problems(withBo({ idRule: 'v2' }))).toContain('businessOperationId.idRule');
    expect(
      problems(withBo({}, { paramComparison: [{ field: 'note', compare: 'normalized', source: 's' }] })),
    ).toContain('paramComparison[0].steps');
    expect(
      problems(
        withBo({}, { storedResult: { ...base.storedResult, replayIndicator: { value: { header: '' }, source: 's' } } }),
      ),
    ).toContain('storedResult.replayIndicator.value');
  });

  it('refuses a path written with [i] or an empty part: the id and the comparison read only dot paths', () => {
    const problems = (c: RetrySafetyCard) => validateCard(c).problems.map((p) => p.path);
    const rule = { compare: 'normalized', steps: ['trim'], source: 's' };
    expect(problems(withBo({}, { paramComparison: [{ field: 'lines.0.note', ...rule }] }))).toEqual([]);
    for (const path of ['lines[0].note', 'lines[].note', 'meta..note', 'meta.', '.meta'])
      expect(problems(withBo({}, { paramComparison: [{ field: path, ...rule }] }))).toEqual([
        'paramComparison[0].field',
      ]);
    expect(problems(withBo({ intentFields: ['lines[0]'] }))).toEqual(['businessOperationId.intentFields[0]']);
    // An optional intent field is one of the intent fields, never an array item (a path beneath an object is one).
    const optional = (o: string[]) =>
      problems(withBo({ intentFields: ['ref', 'by', 'a.b', 'lines.0.note'], optionalIntentFields: o }));
    expect(optional(['by', 'a.b'])).toEqual([]);
    expect(optional(['other', 'lines.0.note'])).toEqual([
      'businessOperationId.optionalIntentFields[0]',
      'businessOperationId.optionalIntentFields[1]',
    ]);
    const lines = { intentFields: ['lines'], normalize: [{ field: 'lines.[0]', steps: ['trim'], source: 's' }] };
    expect(problems(withBo(lines))).toEqual(['businessOperationId.normalize[0].field']);
    // normalizeParams reads `lines[0].note` as a key named "lines[0]": such a rule would change nothing
    expect(normalizeParams({ lines: [{ note: ' a ' }] }, [{ field: 'lines[0].note', steps: ['trim'] }])).toEqual({
      lines: [{ note: ' a ' }],
    });
  });

  it('refuses a paramComparison rule at or beneath an intent field: intent fields are compared as their id reads them', () => {
    const problems = (c: RetrySafetyCard) => validateCard(c).problems.map((p) => p.path);
    const exact = (f: string) => ({ paramComparison: [{ field: f, compare: 'exact', source: 's' }] });
    const bo = { intentFields: ['ref', 'customer.id'] };
    expect(problems(withBo(bo, exact('ref')))).toEqual(['paramComparison[0].field']);
    expect(problems(withBo(bo, exact('ref.part')))).toEqual(['paramComparison[0].field']);
    expect(problems(withBo(bo, exact('customer.id')))).toEqual(['paramComparison[0].field']);
    for (const f of ['note', 'customer', 'customer.name', 'refs'])
      expect(problems(withBo(bo, exact(f))), f).toEqual([]);
  });

  it('refuses a step that can merge distinct values (nfkc, case, inner white space, numbers) without the provider’s https evidence', () => {
    const problems = (c: RetrySafetyCard) => validateCard(c).problems.map((p) => p.path);
    for (const step of ['nfkc', 'case-fold', 'collapse-whitespace', 'canonical-number']) {
      expect(
        problems(withBo({ normalize: [{ field, steps: ['trim', step], source: 'retrysafe policy' }] })),
        step,
      ).toContain('businessOperationId.normalize[0].evidence');
      expect(
        problems(withBo({ normalize: [{ field, steps: [step], source: 's', evidence: 'docs/policy.md' }] })),
        step,
      ).toContain('businessOperationId.normalize[0].evidence');
      expect(
        problems(
          withBo({
            normalize: [{ field, steps: [step], source: 's', evidence: 'https://provider.example/docs#case' }],
          }),
        ),
        step,
      ).toEqual([]);
      expect(
        problems(
          withBo({}, { paramComparison: [{ field: 'note', compare: 'normalized', steps: [step], source: 's' }] }),
        ),
        step,
      ).toContain('paramComparison[0].evidence');
    }
  });

  it('describes rules for tool descriptions', () => {
    expect(describeNormalization(undefined)).toMatch(/exactly/);
    expect(
      describeNormalization([
        { field: 'a', steps: ['trim', 'nfkc'] },
        { field: 'b', compare: 'exact' },
      ]),
    ).toBe('a: trim, nfkc; b: exact');
  });
});
