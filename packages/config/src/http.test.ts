import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AdapterV1, BusinessOperationId } from '@retrysafe/contract';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { startClientTokenSandbox, startIetfKeySandbox } from '@retrysafe/http/sandbox';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { problemsOf } from '../test/problems.js';
import { createAdapters, loadConfig, parseConfig } from './index.js';

// The example the docs show is the file under test.
const exampleDir = join(dirname(fileURLToPath(import.meta.url)), '../examples/http-api');
const example = () =>
  parseYaml(readFileSync(join(exampleDir, 'retrysafe.yaml'), 'utf8')) as {
    adapters: { acme: Record<string, unknown> & { operations: Record<string, Record<string, unknown>> } };
  };
/** The adapter's own lookup, as the runner would call it after a lost answer. */
const lookup = (adapter: AdapterV1, operation: string, id: BusinessOperationId, params: unknown) =>
  adapter.doLookup!(operation, {
    businessOperationId: id,
    providerKey: adapter.deriveProviderKey(operation, id),
    params,
    runId: 'run_x' as never,
    attemptId: 'att_x' as never,
    statusRef: null,
    firstDispatchedAt: Date.now(),
    now: Date.now(),
  });
const problems = (raw: unknown) => problemsOf(raw, exampleDir);

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

describe('an HTTP API declared in the config, no code (fails on main: no http adapter type)', () => {
  it('the docs example passes the schema, and builds all four operations with their cards read from files', async () => {
    const config = loadConfig(join(exampleDir, 'retrysafe.yaml'));
    const { acme } = await createAdapters(config, { ACME_AUTH: 'Bearer t' });
    expect(acme!.provider).toBe('acme');
    expect(Object.keys(acme!.operations)).toEqual([
      'orders.create',
      'exports.create',
      'documents.update',
      'instances.run',
    ]);
    expect(acme!.operations['orders.create']!.card.lookup.method.value).toBe('search');
    await (acme as AdapterV1 & { close(): Promise<void> }).close();
  });

  it('the example cards are @retrysafe/http’s reference cards for provider acme (regenerate: node packages/config/scripts/write-example-cards.mjs)', async () => {
    // @ts-expect-error — a plain .mjs script without types
    const { EXAMPLE_CARDS, render } = (await import('../scripts/write-example-cards.mjs')) as {
      EXAMPLE_CARDS: Record<string, (p: string) => unknown>;
      render: (c: unknown) => string;
    };
    for (const [file, make] of Object.entries(EXAMPLE_CARDS))
      expect(readFileSync(join(exampleDir, file), 'utf8'), file).toBe(render(make('acme')));
  });

  it('runs through the runner against the IETF sandbox: body mapped from the template, key and Authorization sent, the search lookup finds the order', async () => {
    const sb = await startIetfKeySandbox({ port: 0 });
    closers.push(() => sb.close());
    const raw = example();
    raw.adapters.acme.baseUrl = sb.url;
    const config = parseConfig(raw, exampleDir);
    const { acme } = await createAdapters(config, { ACME_AUTH: 'Bearer from-env' });
    closers.push(() => (acme as AdapterV1 & { close(): Promise<void> }).close());
    const runner = createRunner({ ledger: createMemoryLedger() });
    const params = { customer: 'cus_1', sku: 'sku_1', quantity: 2, orderRef: 'A-1' };
    const r = await runner.run(acme!, 'orders.create', { params });
    expect(r).toMatchObject({ status: 'done', providerRef: 'ord_1' });
    expect(sb.records()).toHaveLength(1);
    expect(sb.records()[0]).toMatchObject({
      customer: 'cus_1',
      sku: 'sku_1',
      quantity: 2,
      reference: r.businessOperationId,
    });
    expect(sb.requests[0]!.headers['idempotency-key']).toMatch(/^"rs-/);
    const found = await lookup(acme!, 'orders.create', r.businessOperationId, params);
    expect(found).toMatchObject({ kind: 'found', outcome: { kind: 'succeeded', providerRef: 'ord_1' } });
  });

  it('headersFromEnv sends the credential from the environment', async () => {
    let seen: string | undefined;
    const server = createServer((req, res) => {
      seen = req.headers.authorization;
      req.resume();
      req.on('end', () => res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":"ord_9"}'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    closers.push(() => new Promise((r) => server.close(() => r())));
    const raw = example();
    raw.adapters.acme.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const { acme } = await createAdapters(parseConfig(raw, exampleDir), { ACME_AUTH: 'Bearer from-env' });
    closers.push(() => (acme as AdapterV1 & { close(): Promise<void> }).close());
    const r = await createRunner({ ledger: createMemoryLedger() }).run(acme!, 'orders.create', {
      params: { customer: 'c', sku: 's', quantity: 1, orderRef: 'A-9' },
    });
    expect(r).toMatchObject({ status: 'done', providerRef: 'ord_9' });
    expect(seen).toBe('Bearer from-env');
  });

  it('a body-field key (client token) and a lookup matched on {key}', async () => {
    const sb = await startClientTokenSandbox({ port: 0 });
    closers.push(() => sb.close());
    const raw = example();
    raw.adapters.acme.baseUrl = sb.url;
    const { acme } = await createAdapters(parseConfig(raw, exampleDir), { ACME_AUTH: 'x' });
    closers.push(() => (acme as AdapterV1 & { close(): Promise<void> }).close());
    const params = { imageId: 'ami-0abcdef12', instanceType: 't3.micro', launchRef: 'L-1' };
    const r = await createRunner({ ledger: createMemoryLedger() }).run(acme!, 'instances.run', { params });
    expect(r).toMatchObject({ status: 'done' });
    const id = r.businessOperationId;
    const found = await lookup(acme!, 'instances.run', id, params);
    expect(found).toMatchObject({
      kind: 'found',
      outcome: { kind: 'succeeded', providerRef: (r as { providerRef: string }).providerRef },
    });
  });

  it('typos inside an operation are schema errors with suggestions', () => {
    const raw = example();
    const op = raw.adapters.acme.operations['orders.create']!;
    op.key = { travels: 'headr', name: 'Idempotency-Key' };
    op.lookup = { method: 'search', path: '/orders', mtch: { where: { reference: '{businessOperationId}' } } };
    (raw.adapters.acme.operations['exports.create']!.errors as { rules: Record<string, unknown>[] }).rules[0]!.outcome =
      'rejectd';
    raw.adapters.acme.operations['documents.update']!.method = 'GET';
    raw.adapters.acme.timeotMs = 5;
    const m = problems(raw);
    expect(m).toContain(
      'adapters.acme.operations.orders.create.key.travels: expected one of "header", "body", "query", "none", got "headr" (did you mean "header"?)',
    );
    expect(m).toContain('adapters.acme.operations.orders.create.lookup.match: required');
    expect(m).toContain('adapters.acme.operations.orders.create.lookup.mtch: unknown key (did you mean "match"?)');
    expect(m).toContain(
      'adapters.acme.operations.exports.create.errors.rules[0].outcome: expected one of "rejected", "not-applied", "in-progress", "unknown", got "rejectd" (did you mean "rejected"?)',
    );
    expect(m).toContain(
      'adapters.acme.operations.documents.update.method: expected one of "POST", "PUT", "PATCH", "DELETE", got "GET"',
    );
    expect(m).toContain('adapters.acme.timeotMs: unknown key (did you mean "timeoutMs"?)');
  });

  it('the adapter’s own consistency checks apply to a declaration: a template outside the intent, a card that disagrees', async () => {
    const raw = example();
    raw.adapters.acme.operations['orders.create']!.body = { customer: '{custmer}' };
    await expect(createAdapters(parseConfig(raw, exampleDir), { ACME_AUTH: 'x' })).rejects.toThrow(
      /adapters\.acme: .*operation orders\.create: body template \{custmer\}/,
    );
    const raw2 = example();
    raw2.adapters.acme.operations['orders.create']!.key = { travels: 'query', name: 'key', rule: { maxLength: 64 } };
    await expect(createAdapters(parseConfig(raw2, exampleDir), { ACME_AUTH: 'x' })).rejects.toThrow(
      /key travels in query but card.providerKey.travels says header/,
    );
    const raw3 = example();
    raw3.adapters.acme.operations['orders.create']!.card = './missing.card.yaml';
    await expect(createAdapters(parseConfig(raw3, exampleDir), { ACME_AUTH: 'x' })).rejects.toThrow(
      `adapters.acme.operations.orders.create.card: ${join(exampleDir, 'missing.card.yaml')}: cannot read: no such file`,
    );
    await expect(createAdapters(parseConfig(example(), exampleDir), {})).rejects.toThrow(
      /headersFromEnv\.Authorization: environment variable ACME_AUTH is not set/,
    );
  });

  it('a credential written into headers is refused', () => {
    const raw = example();
    raw.adapters.acme.headers = { Authorization: 'Bearer sk_inline' };
    const m = problems(raw);
    expect(m).toContain('adapters.acme.headers.Authorization: credentials come from environment variables only');
    expect(m).not.toContain('sk_inline');
    // a param named like a credential is a name, not a value
    const named = example();
    named.adapters.acme.operations['orders.create']!.paramsSchema = {
      type: 'object',
      properties: { token: { type: 'string' } },
    };
    expect(() => parseConfig(named, exampleDir)).not.toThrow();
  });
});
