import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sampleCard } from './__fixtures__/sample-card.js';
import { fingerprint } from './canonical.js';
import {
  CardValidationError,
  defineAdapter,
  type FrameOperation,
  fact,
  type JsonSchema,
  type RetrySafetyCard,
  validateCard,
} from './index.js';
import { businessOperationId, describeNormalization, intentOf, normalizeIntent, normalizeParams } from './intent.js';

const ABSENT = Symbol('absent');
const EVIDENCE = 'https://provider.example/docs/messages#create';
const rule = (field: string, providerDefault: unknown, steps: readonly string[] = []) => ({
  field,
  steps,
  providerDefault,
  source: 's',
  evidence: EVIDENCE,
});
type Rule = ReturnType<typeof rule>;
const message = (key: string, value: unknown) => ({
  message: { to: ['a@x.test'], ...(value === ABSENT ? {} : { [key]: value }) },
});
const idOf = (r: Rule, key: string, value: unknown) =>
  businessOperationId('a.b', intentOf(message(key, value), { intentFields: ['message'], normalize: [r] as never }));
const paramsOf = (r: Rule, key: string, value: unknown) =>
  fingerprint(normalizeParams(message(key, value), [r] as never));

describe("providerDefault: the provider's value for a field a create leaves out reads as the field left out", () => {
  const importance = rule('message.importance', 'normal', ['case-fold']);

  it('the default spelled out (in any spelling its steps fold) and left out are one id and one comparison', () => {
    for (const v of ['normal', 'Normal', 'NORMAL']) {
      expect(idOf(importance, 'importance', v)).toBe(idOf(importance, 'importance', ABSENT));
      expect(paramsOf(importance, 'importance', v)).toBe(paramsOf(importance, 'importance', ABSENT));
    }
    expect(idOf(importance, 'importance', 'high')).not.toBe(idOf(importance, 'importance', ABSENT));
    const given = message('importance', 'Normal');
    expect(normalizeIntent(given, [importance] as never)).toEqual({ message: { to: ['a@x.test'] } });
    expect(given.message).toEqual({ to: ['a@x.test'], importance: 'Normal' });
  });

  it.each([
    ['false', false, [null, 0, '', 'false', true, []]],
    ['an object', { flagStatus: 'notFlagged' }, [{}, { flagStatus: 'notFlagged', dueDateTime: null }, 'notFlagged']],
  ])('a default of %s merges only itself with left out', (_what, value, others) => {
    const r = rule('message.flag', value);
    expect(idOf(r, 'flag', value)).toBe(idOf(r, 'flag', ABSENT));
    for (const other of others) expect(idOf(r, 'flag', other)).not.toBe(idOf(r, 'flag', ABSENT));
  });

  it('acts at its own path: on every item where the path crosses an array, never on an intent field itself', () => {
    const unit = [rule('lines.unit', 'each')];
    expect(normalizeParams({ lines: [{ unit: 'each' }, { unit: 'box' }] }, unit as never)).toEqual({
      lines: [{}, { unit: 'box' }],
    });
    expect(normalizeIntent({ unit: 'each' }, [rule('unit', 'each')] as never)).toEqual({ unit: 'each' });
  });

  it('two values share an id exactly when they are one value, or each is the default or left out (property)', () => {
    const r = rule('message.flag', 'normal');
    const value = fc.oneof(fc.constant(ABSENT), fc.constant('normal'), fc.jsonValue({ maxDepth: 2 }));
    const plain = (v: unknown) => v === ABSENT || v === 'normal';
    fc.assert(
      fc.property(value, value, (a, b) => {
        const same = plain(a) || plain(b) ? plain(a) && plain(b) : fingerprint(a) === fingerprint(b);
        expect(idOf(r, 'flag', a) === idOf(r, 'flag', b)).toBe(same);
      }),
      { numRuns: 500 },
    );
  });

  it('renders with its steps', () => {
    expect(describeNormalization([importance as never, rule('message.isRead', false) as never])).toBe(
      'message.importance: case-fold, default "normal"; message.isRead: default false',
    );
  });
});

const base = sampleCard as unknown as RetrySafetyCard;
const cardWith = (r: object, kind = 'create', extra: object = {}) =>
  ({
    ...base,
    sideEffect: { ...base.sideEffect, kind: fact(kind, 'https://example.invalid/docs') },
    businessOperationId: { ...base.businessOperationId, intentFields: ['order', 'lines'], normalize: [r] },
    ...extra,
  }) as unknown as RetrySafetyCard;
const problems = (c: RetrySafetyCard) => validateCard(c).problems.map((p) => p.path);
const AT = 'businessOperationId.normalize[0]';

describe('providerDefault: where a card may declare it', () => {
  it('beneath an intent field of a create, send or charge, with the provider’s https evidence; steps may be none', () => {
    for (const kind of ['create', 'send', 'charge'])
      expect(problems(cardWith(rule('order.note', '', []), kind))).toEqual([]);
    const { evidence: _e, ...bare } = rule('order.note', '');
    expect(problems(cardWith(bare))).toEqual([`${AT}.evidence`]);
    expect(problems(cardWith({ ...bare, evidence: 'docs/policy.md' }))).toContain(`${AT}.evidence`);
  });

  it.each(['set', 'upsert', 'delete', 'async-job', 'none', 'unknown'])(
    'not on a %s: a field left out there is not the provider’s default (on an update it is left unchanged)',
    (kind) => {
      const unknown =
        kind === 'unknown' ? { unverified: [{ field: 'sideEffect.kind', condition: 'c', source: 's' }] } : {};
      expect(problems(cardWith(rule('order.note', ''), kind, unknown))).toContain(`${AT}.providerDefault`);
    },
  );

  it('not on an intent field itself or an array item', () => {
    expect(problems(cardWith(rule('order', {})))).toEqual([`${AT}.providerDefault`]);
    expect(problems(cardWith(rule('lines.0', {})))).toEqual([`${AT}.field`]);
    expect(problems(cardWith(rule('lines.unit', 'each')))).toEqual([]);
  });

  it('on a param outside the intent, in a normalized comparison (steps may be none), never an exact one', () => {
    const compare = (c: object, kind = 'create') =>
      problems(cardWith(rule('order.note', ''), kind, { paramComparison: [{ ...rule('mrkdwn', true), ...c }] }));
    expect(compare({ compare: 'normalized' })).toEqual([]);
    expect(compare({ compare: 'normalized', steps: ['trim'] })).toEqual([]);
    expect(compare({ compare: 'exact' })).toEqual(['paramComparison[0].providerDefault']);
    expect(compare({ compare: 'normalized' }, 'set')).toEqual([
      `${AT}.providerDefault`,
      'paramComparison[0].providerDefault',
    ]);
  });

  it('a repeat that spells a compared param as its default (or leaves it out) compares as the same params', () => {
    const rules = [{ field: 'mrkdwn', compare: 'normalized', providerDefault: true }] as never;
    const of = (p: object) => fingerprint(normalizeParams({ channel: 'C1', ...p }, rules));
    expect(of({ mrkdwn: true })).toBe(of({}));
    expect(of({ mrkdwn: false })).not.toBe(of({}));
    const exact = [{ field: 'mrkdwn', compare: 'exact', providerDefault: true }] as never;
    expect(normalizeParams({ mrkdwn: true }, exact)).toEqual({ mrkdwn: true });
  });
});

describe('providerDefault: it fits the params schema at its field (defineAdapter)', () => {
  const paramsSchema = {
    type: 'object',
    required: ['order', 'lines'],
    properties: {
      order: { type: 'object', properties: { priority: { enum: ['low', 'normal', 'high'] } } },
      lines: { type: 'array', items: { type: 'object', properties: { unit: { type: 'string', minLength: 1 } } } },
    },
  };
  const adapterWith = (r: object, extra: object = {}, schema: JsonSchema = paramsSchema) => {
    const noKey = { providerKey: { ...base.providerKey, travels: fact('none', 's') } };
    const card = cardWith(r, 'create', { ...noKey, ...extra });
    const op: FrameOperation = { name: 'orders.create', description: 'd', card, paramsSchema: schema, keyRule: null };
    return () =>
      defineAdapter({
        provider: 'example',
        operations: { 'orders.create': op },
        execute: async () => ({ kind: 'not-applied', reason: 'x' }) as never,
        lookup: async () => ({ kind: 'not-found' }) as never,
      });
  };
  const refusal = (r: object, extra?: object, schema?: JsonSchema) => {
    try {
      adapterWith(r, extra, schema)();
    } catch (e) {
      if (!CardValidationError.isInstance(e)) throw e;
      return e.problems.map((p) => p.path);
    }
    return [];
  };

  it('a default the schema takes is accepted, on a field or on every item', () => {
    expect(refusal(rule('order.priority', 'normal'))).toEqual([]);
    expect(refusal(rule('lines.unit', 'each'))).toEqual([]);
  });

  it('a compared param’s default is checked too', () => {
    const compared = (v: unknown) => ({ paramComparison: [{ ...rule('notify', v), compare: 'normalized' }] });
    const schema = { ...paramsSchema, properties: { ...paramsSchema.properties, notify: { type: 'boolean' } } };
    expect(refusal(rule('order.priority', 'normal'), compared(true), schema)).toEqual([]);
    expect(refusal(rule('order.priority', 'normal'), compared('yes'), schema)).toEqual([
      'paramComparison[0].providerDefault',
    ]);
  });

  it('a default the schema refuses, or a field the schema does not declare, is a CardValidationError', () => {
    expect(refusal(rule('order.priority', 'urgent'))).toEqual([`${AT}.providerDefault`]);
    expect(refusal(rule('lines.unit', ''))).toEqual([`${AT}.providerDefault`]);
    expect(refusal(rule('order.note', ''))).toEqual([`${AT}.providerDefault`]);
  });
});
