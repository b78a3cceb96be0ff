import {
  AdapterConfigurationError,
  asBusinessOperationId,
  CardValidationError,
  type RetrySafetyCard,
  UnknownOperationError,
  UnsupportedCapabilityError,
} from '@retrysafe/contract';
import { executeContext, lookupContext, operationIdFor } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { ordersCreateCard } from './http-cards.js';
import {
  asyncExportsCreate,
  createHttpAdapter,
  etagDocumentsUpdate,
  type HttpOperationSpec,
  ietfOrdersCreate,
} from './index.js';

const base = { provider: 'acme-orders', baseUrl: 'http://127.0.0.1:9', timeoutMs: 1000 };
const withOp = (spec: HttpOperationSpec) => ({ ...base, operations: { 'orders.create': spec } });
const card = ordersCreateCard('acme-orders');
const spec = ietfOrdersCreate('acme-orders');

/** documents.update (its schema open, so only the adapter's own checks speak) run once on `params`. */
async function updateDocument(params: Record<string, unknown>) {
  const docs = etagDocumentsUpdate('acme-docs');
  const a = createHttpAdapter({
    ...base,
    provider: 'acme-docs',
    operations: { 'documents.update': { ...docs, paramsSchema: { type: 'object' } } },
  });
  return a.doExecute(
    'documents.update',
    params,
    executeContext(a, 'documents.update', operationIdFor(a, 'documents.update', params)),
  );
}

describe('createHttpAdapter: declarations are checked against the card', () => {
  /** documents.update's own checks (checkParams) with `id` declared as `id`. */
  const docsCheck = (id: object) =>
    createHttpAdapter({
      ...base,
      provider: 'acme-docs',
      operations: {
        'documents.update': {
          ...etagDocumentsUpdate('acme-docs'),
          paramsSchema: { type: 'object', properties: { id } },
        },
      },
    }).operations['documents.update']!.checkParams!;

  it('builds a v1 adapter whose operations carry the card and its intent fields', () => {
    const a = createHttpAdapter(withOp(spec));
    expect(a.specificationVersion).toBe('v1');
    expect(a.operations['orders.create']!.card).toBe(spec.card);
    expect(a.operations['orders.create']!.intentFields).toEqual(['customer', 'orderRef']);
  });

  it.each([
    ['a bad baseUrl', { ...withOp(spec), baseUrl: 'not a url' }, /not an absolute URL/],
    ['a non-http baseUrl', { ...withOp(spec), baseUrl: 'ftp://127.0.0.1' }, /must be http/],
    ['no operations', { ...base, operations: {} }, /at least one operation/],
    [
      'a card of another provider',
      { ...base, provider: 'other', operations: { 'orders.create': spec } },
      /card.provider/,
    ],
    [
      'the key in a different header than the card',
      withOp({
        ...spec,
        key: { travels: 'header', name: 'X-Request-Key', encoding: 'sf-string', rule: { maxLength: 64 } },
      }),
      /card.providerKey.name/,
    ],
    [
      'the key in a body field spelt in another case than the card (a body field or query name is case-sensitive)',
      withOp({
        ...spec,
        card: {
          ...card,
          providerKey: {
            ...card.providerKey,
            travels: { value: 'body', source: 'test' },
            name: { value: 'clientToken', source: 'test' },
          },
        },
        key: { travels: 'body', name: 'ClientToken', rule: { maxLength: 64 } },
      }),
      /card.providerKey.name/,
    ],
    [
      'the key in the body while the card says header',
      withOp({ ...spec, key: { travels: 'body', name: 'Idempotency-Key', rule: { maxLength: 64 } } }),
      /card.providerKey.travels says header/,
    ],
    [
      'a key rule longer than the card allows',
      withOp({
        ...spec,
        card: { ...card, providerKey: { ...card.providerKey, maxLength: { value: 32, source: 'test' } } },
        key: { travels: 'header', name: 'Idempotency-Key', rule: { maxLength: 64 } },
      }),
      /exceeds card.providerKey.maxLength 32/,
    ],
    [
      'an unknown max length with no declared rule',
      withOp({ ...spec, key: { travels: 'header', name: 'Idempotency-Key' } }),
      /maxLength is unknown: declare key.rule.maxLength/,
    ],
    [
      'a lookup other than the card’s',
      withOp({ ...spec, lookup: { method: 'resend-same-key' } }),
      /card.lookup.method says search/,
    ],
    [
      'a path placeholder outside the intent',
      withOp({ ...spec, path: '/tenants/{tenant}/orders' }),
      /placeholder \{tenant\}/,
    ],
    [
      'a path placeholder on an intent field the id trims (one id, yet `/orders/ a` and `/orders/a` are two objects)',
      withOp({ ...spec, method: 'PUT', path: '/orders/{orderRef}' }),
      /path placeholder \{orderRef\}.*normalises/,
    ],
    [
      'a query precondition on an intent field the id trims (one id, two validators on the wire)',
      withOp({ ...spec, precondition: { param: 'orderRef', query: 'ifMatch' } }),
      /precondition.param orderRef.*normalises/,
    ],
    [
      'a code rule without codePath',
      withOp({ ...spec, errors: { rules: [{ status: 409, code: 'x', outcome: 'in-progress' }] } }),
      /codePath is not declared/,
    ],
  ] as const)('refuses %s', (_name, options, message) => {
    expect(() => createHttpAdapter(options as never)).toThrow(AdapterConfigurationError);
    expect(() => createHttpAdapter(options as never)).toThrow(message);
  });

  it('a path placeholder beneath an intent field is within the intent (as the card reads a path); one above it is not', () => {
    expect(() => createHttpAdapter(withOp({ ...spec, path: '/customers/{customer.id}/orders' }))).not.toThrow();
    const nested = {
      ...card,
      businessOperationId: { ...card.businessOperationId, intentFields: ['customer.id', 'sku', 'orderRef'] },
    };
    expect(() => createHttpAdapter(withOp({ ...spec, card: nested, path: '/customers/{customer}/orders' }))).toThrow(
      /placeholder \{customer\}/,
    );
  });

  it('a normalised path placeholder is accepted with the provider’s evidence that it treats the spellings as one', () => {
    const rules = [
      { field: 'orderRef', steps: ['trim'], source: 'test', evidence: 'https://example.com/refs' },
    ] as const;
    const bo = { ...card.businessOperationId, normalize: rules };
    const put = { ...spec, method: 'PUT', path: '/orders/{orderRef}' } as const;
    expect(() => createHttpAdapter(withOp({ ...put, card: { ...card, businessOperationId: bo } }))).not.toThrow();
  });

  it('an invalid card is a CardValidationError listing the field; an unknown fact not listed in unverified is refused', () => {
    const broken = { ...card, retention: { minimum: { value: 'unknown', source: 'x' } } } as RetrySafetyCard;
    expect(() => createHttpAdapter(withOp({ ...spec, card: broken }))).toThrow(CardValidationError);
    expect(() => createHttpAdapter(withOp({ ...spec, card: broken }))).toThrow(/retention.minimum/);
  });

  it('a search path that names nothing of the operation is refused: its miss would be a miss among other operations', () => {
    const search = (path: string) =>
      withOp({ ...spec, lookup: { ...spec.lookup, path } as HttpOperationSpec['lookup'] });
    expect(() => createHttpAdapter(search('/orders'))).toThrow(/lookup path \/orders names nothing of this operation/);
    expect(() => createHttpAdapter(search('/orders?status={status}'))).toThrow(/names nothing of this operation/);
    expect(() => createHttpAdapter(search('/orders?customer={customer}'))).not.toThrow();
    expect(() => createHttpAdapter(search('/orders?token={key}'))).not.toThrow();
    const exports = asyncExportsCreate('acme-orders');
    const w = (exports.lookup as { withoutStatusRef: object }).withoutStatusRef;
    const lookup = { ...exports.lookup, withoutStatusRef: { ...w, path: '/exports' } } as HttpOperationSpec['lookup'];
    expect(() => createHttpAdapter({ ...base, operations: { 'exports.create': { ...exports, lookup } } })).toThrow(
      /lookup path \/exports names nothing of this operation/,
    );
  });

  it('a card with unknown travels forbids sending a key', () => {
    const c = {
      ...card,
      providerKey: { ...card.providerKey, travels: { value: 'unknown', source: 'x' } },
      unverified: [...card.unverified, { field: 'providerKey.travels', condition: 'x', source: 'x' }],
    } as RetrySafetyCard;
    expect(() => createHttpAdapter(withOp({ ...spec, card: c }))).toThrow(/travels is unknown/);
    // as the refusal advises, it is built with key { travels: 'none' }
    expect(
      createHttpAdapter(withOp({ ...spec, card: c, key: { travels: 'none' } })).deriveProviderKey(
        'orders.create',
        asBusinessOperationId('o-1'),
      ),
    ).toBeNull();
  });

  it('unknown operation ⇒ UnknownOperationError; lookup "none" ⇒ UnsupportedCapabilityError (never a silent no-op)', async () => {
    const c = { ...card, lookup: { ...card.lookup, method: { value: 'none', source: 'test' } } } as RetrySafetyCard;
    const a = createHttpAdapter(withOp({ ...spec, card: c, lookup: { method: 'none' } }));
    const params = { customer: 'c', sku: 's', quantity: 1, orderRef: 'r' };
    const ctx = lookupContext(a, 'orders.create', operationIdFor(a, 'orders.create', params), params);
    await expect(a.doLookup('orders.create', ctx)).rejects.toThrow(UnsupportedCapabilityError);
    await expect(a.doLookup('orders.nope', ctx)).rejects.toThrow(UnknownOperationError);
    expect(() => a.deriveProviderKey('orders.nope', ctx.businessOperationId)).toThrow(UnknownOperationError);
  });

  it('lookup "unknown" (nobody states a lookup) ⇒ UnsupportedCapabilityError too, not an untyped error', async () => {
    const c = {
      ...card,
      lookup: { ...card.lookup, method: { value: 'unknown', source: 'test' } },
      unverified: [...card.unverified, { field: 'lookup.method', condition: 'x', source: 'x' }],
    } as RetrySafetyCard;
    const a = createHttpAdapter(withOp({ ...spec, card: c, lookup: { method: 'none' } }));
    const params = { customer: 'c', sku: 's', quantity: 1, orderRef: 'r' };
    const ctx = lookupContext(a, 'orders.create', operationIdFor(a, 'orders.create', params), params);
    await expect(a.doLookup('orders.create', ctx)).rejects.toThrow(UnsupportedCapabilityError);
  });

  it('keys are derived from the business-operation id: stable, prefixed, and within the rule', () => {
    const a = createHttpAdapter(withOp(spec));
    const id = asBusinessOperationId('acme-orders.orders.create:0123456789abcdef0123456789abcdef');
    expect(a.deriveProviderKey('orders.create', id)).toBe(`rs-${id}`);
    expect(a.deriveProviderKey('orders.create', id)).toBe(a.deriveProviderKey('orders.create', id));
    const long = asBusinessOperationId('x'.repeat(120));
    expect(a.deriveProviderKey('orders.create', long)!.length).toBeLessThanOrEqual(64);
  });

  it.each(['.', '..', ''])(
    'a path placeholder value %j (a dot segment or nothing: the URL would name another path) is refused, nothing sent',
    async (id) => {
      expect(await updateDocument({ id, etag: '"g1"', title: 't', body: 'b' })).toMatchObject({
        kind: 'rejected',
        reason: 'validation',
        fields: [{ path: 'id' }],
      });
    },
  );

  it.each(['..', ''])(
    'a lookup path placeholder value %j is refused too: the lookup would read another resource as this one',
    async (orderRef) => {
      const search = { ...spec.lookup, path: '/orders/by-ref/{orderRef}' } as HttpOperationSpec['lookup'];
      const a = createHttpAdapter(withOp({ ...spec, lookup: search, paramsSchema: { type: 'object' } }));
      const params = { customer: 'c', sku: 's', quantity: 1, orderRef };
      const ctx = executeContext(a, 'orders.create', operationIdFor(a, 'orders.create', params));
      expect(await a.doExecute('orders.create', params, ctx)).toMatchObject({
        kind: 'rejected',
        reason: 'validation',
        fields: [{ path: 'orderRef' }],
      });
    },
  );

  it('a number in the path is refused unless the schema pins the field to numbers: 5 and "5" name one URL but two ids', async () => {
    expect(await updateDocument({ id: 5, etag: '"g1"', title: 't', body: 'b' })).toMatchObject({
      kind: 'rejected',
      reason: 'validation',
      fields: [{ path: 'id', message: expect.stringMatching(/send it as a string/) }],
    });
    expect(await updateDocument({ id: 'doc-1', etag: 7, title: 't', body: 'b' })).toMatchObject({
      kind: 'rejected',
      fields: [{ path: 'etag' }],
    });
    const doc5 = { id: 5, etag: '"g1"', title: 't', body: 'b' };
    expect(docsCheck({ type: 'integer' })(doc5)).toEqual([]);
    expect(docsCheck({ type: ['integer'] })(doc5)).toEqual([]);
    expect(docsCheck({ type: ['integer', 'string'] })(doc5)).toEqual([
      { path: 'id', message: expect.stringMatching(/send it as a string/) },
    ]);
  });

  it('an integer past 2^53 in the path is refused even where the schema pins numbers: JSON reads two such ids as one', () => {
    const check = docsCheck({ type: 'integer' });
    // Two documents' ids as an agent writes them; JSON.parse (an MCP host, the CLI) gives both as one double.
    const [a, b] = [JSON.parse('1234567890123456789'), JSON.parse('1234567890123456788')] as number[];
    expect(a).toBe(b);
    for (const id of [a, 1e21])
      expect(check({ id, etag: '"g1"', title: 't', body: 'b' })).toEqual([
        { path: 'id', message: expect.stringMatching(/2\^53.*send it as a string/) },
      ]);
    expect(check({ id: Number.MAX_SAFE_INTEGER, etag: '"g1"', title: 't', body: 'b' })).toEqual([]);
  });

  it('a code body that names the params it puts inside text (bodyTextParams) has them checked as text', () => {
    const noted = createHttpAdapter(
      withOp({
        ...spec,
        body: (p, ids) => ({ note: `Order ${String(p.quantity)}`, reference: ids.businessOperationId }),
        bodyTextParams: ['quantity'],
        paramsSchema: { type: 'object' }, // nothing pins quantity to numbers
      }),
    ).operations['orders.create']!.checkParams!;
    const params = { customer: 'cus_1', sku: 'sku_1', orderRef: 'R-1' };
    expect(noted({ ...params, quantity: 5 })).toEqual([
      { path: 'quantity', message: expect.stringMatching(/send it as a string/) },
    ]);
    expect(noted({ ...params, quantity: '5' })).toEqual([]);
  });

  it('an empty precondition value is refused like an absent one: If-Match with no validator is no precondition', async () => {
    expect(await updateDocument({ id: 'doc-1', etag: '', title: 't', body: 'b' })).toMatchObject({
      kind: 'rejected',
      reason: 'validation',
      fields: [{ path: 'etag', message: expect.stringMatching(/precondition value/) }],
    });
  });

  it('a header name Node refuses (the key’s, the precondition’s) is refused when the adapter is built: every request would fail after its claim', () => {
    const docs = etagDocumentsUpdate('acme-docs');
    const badPc: HttpOperationSpec = { ...docs, precondition: { ...docs.precondition!, header: 'If Match' } };
    const buildPc = () =>
      createHttpAdapter({ ...base, provider: 'acme-docs', operations: { 'documents.update': badPc } });
    expect(buildPc).toThrow(AdapterConfigurationError);
    expect(buildPc).toThrow(/"If Match" is not a header name/);
    const pk = { ...card.providerKey, name: { ...card.providerKey.name, value: 'Idempotency Key' } };
    const badKey: HttpOperationSpec = {
      ...spec,
      card: { ...card, providerKey: pk },
      key: { ...spec.key, name: 'Idempotency Key' } as HttpOperationSpec['key'],
    };
    expect(() => createHttpAdapter(withOp(badKey))).toThrow(/"Idempotency Key" is not a header name/);
  });

  it('a static header Node refuses (a line break in its value, a space in its name) is refused when the adapter is built', () => {
    const build = (headers: Record<string, string>) => () => createHttpAdapter({ ...withOp(spec), headers });
    expect(build({ Authorization: 'Bearer a\r\nX-Other: 1' })).toThrow(/headers: .*"Authorization"/);
    expect(build({ 'X Api Key': 'k' })).toThrow(AdapterConfigurationError);
    expect(build({ Authorization: 'Bearer é' })).not.toThrow();
  });

  it('a precondition param that is a nested intent field (version.etag) is refused: the request reads a top-level param', () => {
    const docs = etagDocumentsUpdate('acme-docs');
    const bo = { ...docs.card.businessOperationId, intentFields: ['id', 'version.etag', 'title', 'body'] };
    const nested: HttpOperationSpec = {
      ...docs,
      card: { ...docs.card, businessOperationId: bo },
      precondition: { ...docs.precondition!, param: 'version.etag' },
    };
    const build = () =>
      createHttpAdapter({ ...base, provider: 'acme-docs', operations: { 'documents.update': nested } });
    expect(build).toThrow(AdapterConfigurationError);
    expect(build).toThrow(/precondition.param version.etag/);
  });

  it('a precondition operation never sends without its precondition value (rejected, nothing sent: never a throw the runner would read as unknown)', async () => {
    const a = createHttpAdapter({
      ...base,
      provider: 'acme-docs',
      operations: { 'documents.update': etagDocumentsUpdate('acme-docs') },
    });
    // The context of a valid edit; the params below lack the precondition value.
    const edit = { id: 'doc-1', etag: '"g1"', title: 't', body: 'b' };
    const ctx = executeContext(a, 'documents.update', operationIdFor(a, 'documents.update', edit));
    // The schema requires etag; with a schema that does not, the operation's own check still refuses it.
    expect(await a.doExecute('documents.update', { id: 'doc-1', title: 't', body: 'b' }, ctx)).toMatchObject({
      kind: 'rejected',
      reason: 'validation',
      code: 'retrysafe_invalid_params',
    });
    const spec = etagDocumentsUpdate('acme-docs');
    const loose = createHttpAdapter({
      ...base,
      provider: 'acme-docs',
      operations: { 'documents.update': { ...spec, paramsSchema: { type: 'object' } } },
    });
    const o = await loose.doExecute('documents.update', { id: 'doc-1', title: 't', body: 'b' }, ctx);
    expect(o).toMatchObject({
      kind: 'rejected',
      reason: 'validation',
      fields: [{ path: 'etag', message: expect.stringMatching(/precondition value/) }],
    });
  });
});
