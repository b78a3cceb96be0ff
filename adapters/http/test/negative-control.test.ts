import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { executeContext, operationIdFor } from '@retrysafe/testkit/conformance';
import axios from 'axios';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpAdapter, ietfOrdersCreate } from '../src/index.js';

/**
 * Negative control for "one retrying layer": axios has no retry, but by default it follows up to 21
 * redirects, and on a 307/308 it re-sends the POST with its body. A server that commits and then
 * answers 307 (a moved endpoint, a load balancer) gets the business action twice from ONE axios call.
 */
async function movedEndpointServer() {
  const posts: string[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST') posts.push(req.url ?? '');
      if (req.url === '/orders') res.writeHead(307, { location: '/v2/orders', 'content-length': '0' }).end();
      else
        res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: `ord_${posts.length}` }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    posts,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('negative control: the SDK default would have re-sent', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  });

  it('default axios follows the 307 and POSTs twice; the adapter POSTs once and reports unknown (the runner decides)', async () => {
    const srv = await movedEndpointServer();
    closers.push(srv.close);
    const res = await axios.post(`${srv.url}/orders`, { customer: 'cus_1' }, { proxy: false, timeout: 2000 });
    expect(res.status).toBe(201);
    expect(srv.posts).toEqual(['/orders', '/v2/orders']); // two business actions from one call

    srv.posts.length = 0;
    const adapter = createHttpAdapter({
      provider: 'acme-orders',
      baseUrl: srv.url,
      timeoutMs: 2000,
      operations: { 'orders.create': ietfOrdersCreate('acme-orders') },
    });
    closers.push(() => adapter.close());
    const params = { customer: 'cus_1', sku: 'sku_1', quantity: 1, orderRef: 'A-1' };
    const out = await adapter.doExecute(
      'orders.create',
      params,
      executeContext(adapter, 'orders.create', operationIdFor(adapter, 'orders.create', params)),
    );
    expect(out).toMatchObject({ kind: 'unknown', status: 307 });
    expect(srv.posts).toEqual(['/orders']);
  });

  it('default axios has no timeout (0): the adapter refuses to be built without one', () => {
    expect(axios.defaults.timeout).toBe(0);
    expect(() =>
      createHttpAdapter({
        provider: 'acme-orders',
        baseUrl: 'http://127.0.0.1:9',
        timeoutMs: 0,
        operations: { 'orders.create': ietfOrdersCreate('acme-orders') },
      }),
    ).toThrow(/timeoutMs must be a positive number/);
  });
});
