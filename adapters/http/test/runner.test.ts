import { InvalidIntentError, InvalidParamsError, type RetrySafetyCard, UnsafeResumeError } from '@retrysafe/contract';
import { type FaultProxy, startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { ordersCreateCard } from '../src/http-cards.js';
import {
  asyncExportsCreate,
  etagDocumentsUpdate,
  type HttpAdapter,
  type HttpOperationSpec,
  ietfOrdersCreate,
} from '../src/index.js';
import { startAsyncReplySandbox, startEtagSandbox, startIetfKeySandbox } from '../src/sandbox/index.js';
import { adapterAt, testRunner } from './helpers.js';

async function harness(
  op: string,
  spec: HttpOperationSpec,
  sandbox: { url: string; close(): Promise<void> },
  timeoutMs = 1000,
) {
  closeAfterTest(sandbox);
  const proxy: FaultProxy = closeAfterTest(await startFaultProxy({ target: sandbox.url, recordHeaders: ['if-match'] }));
  const adapter: HttpAdapter = closeAfterTest(adapterAt(proxy.url, op, spec, timeoutMs));
  return { proxy, adapter, ...testRunner() };
}

const withUnknownRetention = (card: RetrySafetyCard): RetrySafetyCard => ({
  ...card,
  retention: { minimum: { value: 'unknown', source: 'test: this server publishes no expiry' } },
  unverified: [...card.unverified, { field: 'retention.minimum', condition: 'no published expiry', source: 'test' }],
});

describe('runner + sandbox + fault proxy', () => {
  it.each<[string, Record<string, string>, string]>([
    // It threw inside doExecute: unknown, re-sends, look-ups, a hand-off.
    ['a params typo the schema lets through (no precondition value)', { id: 'doc-1' }, 'etag'],
    ['a lone surrogate in a path placeholder (encodeURIComponent throws)', { id: 'doc-\ud800', etag: '"g1"' }, 'id'],
    ['a line break in the precondition header', { id: 'doc-1', etag: '"g1"\r\nX-Other: 1' }, 'etag'],
    ['a character above U+00FF in the precondition header', { id: 'doc-1', etag: '"g€"' }, 'etag'],
  ])('%s is refused before the claim: nothing sent, no row (it failed after the claim)', async (_, p, field) => {
    const sb = await startEtagSandbox({ port: 0 });
    const spec = etagDocumentsUpdate('acme-docs');
    const { proxy, adapter, runner, ledger, packets } = await harness(
      'documents.update',
      { ...spec, paramsSchema: { type: 'object' } },
      sb,
    );
    await expect(
      runner.run(adapter, 'documents.update', { params: { ...p, title: 'T', body: 'B' } }),
    ).rejects.toSatisfy((e) => InvalidParamsError.isInstance(e) && e.fields.some((f) => f.path === field));
    expect(proxy.requests).toHaveLength(0);
    expect([await ledger.list({}), packets]).toEqual([[], []]);
  });

  it('a body JSON cannot carry (a BigInt, a cycle) is refused before the claim: nothing sent, no row', async () => {
    const sb = await startEtagSandbox({ port: 0 });
    const { proxy, adapter, runner, ledger } = await harness('documents.update', etagDocumentsUpdate('acme-docs'), sb);
    const cyclic: Record<string, unknown> = { id: 'doc-1', etag: '"g1"', title: 'T' };
    cyclic.body = { back: cyclic };
    for (const params of [{ id: 'doc-1', etag: '"g1"', title: 'T', body: 10n }, cyclic])
      await expect(runner.run(adapter, 'documents.update', { params })).rejects.toSatisfy(
        (e) => InvalidIntentError.isInstance(e) && e.path.startsWith('body'),
      );
    expect(proxy.requests).toHaveLength(0);
    expect(await ledger.list({})).toHaveLength(0);
  });

  it('async request-reply: the 202 is lost; the retry with the same key gets the EXISTING status resource, which is polled to done — one work item', async () => {
    const sb = await startAsyncReplySandbox({ port: 0, pollsUntilDone: 1, retryAfterS: 1 });
    const { proxy, adapter, runner } = await harness('exports.create', asyncExportsCreate('acme-exports'), sb);
    proxy.setFaults(['drop-response']);
    const res = await runner.run(adapter, 'exports.create', {
      params: { dataset: 'sales-2026', format: 'csv', requestRef: 'R-9' },
    });
    expect(res).toMatchObject({ status: 'done', providerRef: 'exp_1', result: { id: 'exp_1', status: 'succeeded' } });
    expect(sb.count('exports.create')).toBe(1);
    const posts = sb.requests.filter((r) => r.method === 'POST');
    expect(posts).toHaveLength(2);
    expect(posts.map((p) => p.status)).toEqual([202, 202]);
    expect(posts[1]!.headers['idempotency-key']).toBe(posts[0]!.headers['idempotency-key']);
    // after the re-send, only status reads: 200 running, 303 See Other, the finished resource
    expect(sb.requests.slice(2).map((r) => `${r.method} ${r.status}`)).toEqual(['GET 200', 'GET 303', 'GET 200']);
  });

  for (const fault of ['drop-response', { kind: 'delay', ms: 1500 }] as const) {
    const label = typeof fault === 'string' ? fault : 'client timeout';
    it(`retention: unknown and no lookup ⇒ after a lost response (${label}) no blind resend: one request, one order, handed off`, async () => {
      const sb = await startIetfKeySandbox({ port: 0 });
      const spec = ietfOrdersCreate('acme-orders');
      const card = withUnknownRetention(ordersCreateCard('acme-orders'));
      const noLookup: RetrySafetyCard = {
        ...card,
        lookup: { ...card.lookup, method: { value: 'none', source: 'test: no search endpoint' } },
      };
      const { proxy, adapter, runner, packets } = await harness(
        'orders.create',
        { ...spec, card: noLookup, lookup: { method: 'none' } },
        sb,
        500,
      );
      proxy.setFaults([fault]);
      const res = await runner.run(adapter, 'orders.create', {
        params: { customer: 'cus_1', sku: 'sku_1', quantity: 1, orderRef: 'A-1' },
      });
      expect(res.status).toBe('handed-off');
      expect(packets).toHaveLength(1);
      expect(packets[0]!.reason).toBe('unknown-no-safe-resend');
      expect(proxy.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
      // the sandbox logs a request once it has answered it, which the proxy may still be forwarding
      await expect.poll(() => sb.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
      expect(sb.count('orders.create')).toBe(1);
    });
  }

  it('retention: unknown with a search lookup ⇒ the lost order is found and adopted, never re-sent', async () => {
    const sb = await startIetfKeySandbox({ port: 0 });
    const spec = ietfOrdersCreate('acme-orders');
    const { proxy, adapter, runner } = await harness(
      'orders.create',
      { ...spec, card: withUnknownRetention(spec.card) },
      sb,
    );
    proxy.setFaults(['drop-response']);
    const res = await runner.run(adapter, 'orders.create', {
      params: { customer: 'cus_1', sku: 'sku_1', quantity: 1, orderRef: 'A-2' },
    });
    expect(res).toMatchObject({ status: 'done', adopted: true, providerRef: 'ord_1' });
    expect(sb.requests.map((r) => r.method)).toEqual(['POST', 'GET']);
    expect(sb.count('orders.create')).toBe(1);
  });

  it.each([
    [401, 'authentication'],
    [403, 'permission'],
  ])(
    'a %i the declaration does not map is a refusal of the caller (%s): one request, handed off, never re-sent',
    async (status, reason) => {
      const sb = await startIetfKeySandbox({ port: 0 });
      const { proxy, adapter, runner, packets } = await harness('orders.create', ietfOrdersCreate('acme-orders'), sb);
      proxy.setFaults(() => ({ kind: 'status', status, body: { title: 'refused' } }));
      const res = await runner.run(adapter, 'orders.create', {
        params: { customer: 'cus_1', sku: 'sku_1', quantity: 1, orderRef: `A-${status}` },
      });
      expect(res.status).toBe('handed-off');
      expect(packets[0]).toMatchObject({ reason: 'rejected' });
      expect(packets[0]!.explanation).toContain(reason);
      expect(proxy.requests).toHaveLength(1);
    },
  );

  it('IETF key inside retention: a lost response is re-sent with the same key and the stored result replayed — one order', async () => {
    const sb = await startIetfKeySandbox({ port: 0 });
    const { proxy, adapter, runner } = await harness('orders.create', ietfOrdersCreate('acme-orders'), sb);
    proxy.setFaults(['drop-response']);
    const res = await runner.run(adapter, 'orders.create', {
      params: { customer: 'cus_1', sku: 'sku_1', quantity: 1, orderRef: 'A-3' },
    });
    expect(res).toMatchObject({ status: 'done', providerRef: 'ord_1' });
    const posts = sb.requests.filter((r) => r.method === 'POST');
    expect(posts).toHaveLength(2);
    expect(posts[1]!.headers['idempotency-key']).toBe(posts[0]!.headers['idempotency-key']);
    expect(sb.count('orders.create')).toBe(1);
  });

  it('precondition: a 412 on a re-send after an unknown outcome triggers a lookup that recognises the earlier write — one write', async () => {
    const sb = await startEtagSandbox({ port: 0 });
    const { proxy, adapter, runner } = await harness('documents.update', etagDocumentsUpdate('acme-docs'), sb);
    const params = { id: 'doc-1', etag: sb.etag('doc-1'), title: 'Final', body: 'Signed.' };
    // The PUT commits but its response is lost; every lookup GET fails, so the runner hands off.
    proxy.setFaults((_call, req) =>
      req.method === 'PUT'
        ? 'drop-response'
        : { kind: 'status', status: 503, body: { error: { code: 'backendError' } } },
    );
    const first = await runner.run(adapter, 'documents.update', { params });
    expect(first.status).toBe('handed-off');
    expect(sb.count('documents.update')).toBe(1);
    // A person resumes: the same PUT with the same If-Match gets 412, which on a re-send means "look up".
    // The packet marks a resume unsafe (no key folds re-sends), so the runner wants force: the person
    // checked that the If-Match makes a second write impossible.
    proxy.setFaults(() => 'pass');
    await expect(
      runner.resolve(first.businessOperationId, { action: 'resume' }, { adapters: [adapter] }),
    ).rejects.toSatisfy(UnsafeResumeError.isInstance);
    const resumed = await runner.resolve(
      first.businessOperationId,
      { action: 'resume', force: true },
      { adapters: [adapter] },
    );
    expect(resumed).toMatchObject({ status: 'done', adopted: true, result: { title: 'Final', generation: 2 } });
    const puts = sb.requests.filter((r) => r.method === 'PUT');
    expect(puts.map((r) => [r.status, r.headers['if-match']])).toEqual([
      [200, '"g1"'],
      [412, '"g1"'],
    ]);
    expect(sb.requests.at(-1)!.method).toBe('GET');
    expect(sb.count('documents.update')).toBe(1);
  });
});
