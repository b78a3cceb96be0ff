import type { OperationSpec } from '@retrysafe/contract';
import { RunnerConfigurationError } from '@retrysafe/core';
import { assertParams, paramsErrors } from '@retrysafe/core/internal';
import { describe, expect, it } from 'vitest';

const spec = (paramsSchema: Record<string, unknown>) =>
  ({ card: { operation: 'acme.orders.create' }, paramsSchema }) as unknown as OperationSpec;
const schema = {
  type: 'object',
  additionalProperties: false,
  required: ['qty'],
  properties: {
    qty: { type: 'integer' },
    email: { type: 'string', format: 'email' },
    items: { type: 'array', items: { type: 'object', required: ['sku'] } },
  },
};

describe('params validated with ajv against the operation schema (issue 16)', () => {
  it('every failing field by path (nested, array items), with why and never the value', () => {
    const errs = paramsErrors(spec(schema), {
      qty: '3',
      email: 'jane-at-example',
      extra: 1,
      items: [{ sku: 'a' }, {}],
    });
    expect(errs).toEqual(
      expect.arrayContaining([
        { path: 'qty', message: 'must be integer' },
        { path: 'email', message: 'must match format "email"' },
        { path: 'extra', message: 'is not a field of this operation' },
        { path: 'items[1].sku', message: 'is required' },
      ]),
    );
    expect(JSON.stringify(errs)).not.toContain('jane-at-example');
    expect(paramsErrors(spec(schema), { qty: 3 })).toEqual([]);
    expect(() => assertParams(spec(schema), {})).toThrow(/qty is required; nothing was claimed or sent/);
  });

  it('reads the dialect the schema names (draft-07 by default, 2019-09, 2020-12); a schema that does not compile is a configuration error', () => {
    for (const $schema of [
      'https://json-schema.org/draft/2020-12/schema',
      'https://json-schema.org/draft/2019-09/schema',
      'http://json-schema.org/draft-07/schema#',
    ])
      expect(paramsErrors(spec({ ...schema, $schema }), { qty: 1.5 })).toEqual([
        { path: 'qty', message: 'must be integer' },
      ]);
    expect(() => paramsErrors(spec({ type: 'object', properties: { a: { type: 'no-such-type' } } }), {})).toThrow(
      RunnerConfigurationError,
    );
  });

  it("checks each operation against its own schema: another operation's schema of the same $id neither breaks it nor stands in for a $ref", () => {
    const order = spec({ $id: 'params', type: 'object', required: ['qty'], properties: { qty: { type: 'integer' } } });
    const mail = spec({ $id: 'params', type: 'object', required: ['to'], properties: { to: { type: 'string' } } });
    expect(paramsErrors(order, { qty: 1 })).toEqual([]);
    expect(paramsErrors(mail, { to: 'a' })).toEqual([]);
    expect(paramsErrors(mail, { qty: 1 })).toEqual([{ path: 'to', message: 'is required' }]);
    // A $ref to a schema this operation does not hold does not compile, whatever other operations were checked before.
    const shared = { $id: 'https://example.com/order.json', type: 'object', required: ['qty'] };
    const refers = spec({ $ref: 'https://example.com/order.json' });
    expect(paramsErrors(spec(shared), {})).toEqual([{ path: 'qty', message: 'is required' }]);
    expect(() => paramsErrors(refers, {})).toThrow(RunnerConfigurationError);
  });
});

describe('text no request can carry', () => {
  it('a lone surrogate anywhere in the params (a value, an item, a field name) is refused; a pair is text', () => {
    const params = { sku: 'a\ud800', lines: [{ note: 'x\udc00y' }], meta: { 'k\udbff': 1 } };
    expect(paramsErrors(spec({ type: 'object' }), params)).toEqual([
      { path: 'sku', message: 'holds a lone surrogate, which no request can carry' },
      { path: 'lines[0].note', message: 'holds a lone surrogate, which no request can carry' },
      { path: 'meta', message: 'has a field name with a lone surrogate, which no request can carry' },
    ]);
    expect(paramsErrors(spec({ type: 'object' }), { sku: '😀 \ud83d\ude00' })).toEqual([]);
  });
});
