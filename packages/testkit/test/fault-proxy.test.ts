import { createHash } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../src/index.js';

/** A tiny upstream that counts committed writes (what a provider "holds"). */
interface Upstream {
  url: string;
  committed: string[];
  close(): Promise<void>;
  server: Server;
}

async function startUpstream(): Promise<Upstream> {
  const committed: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (req.method === 'POST') committed.push(body);
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json', 'x-upstream': 'yes' });
      res.end(JSON.stringify({ n: committed.length, path: req.url }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    committed,
    server,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

interface Reply {
  status?: number;
  headers?: Record<string, string | string[] | undefined>;
  body?: string;
  error?: string;
}

/** One request with node:http (real TCP), with a client timeout; never throws. */
function send(
  url: string,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
  timeoutMs = 2_000,
): Promise<Reply> {
  return new Promise((resolve) => {
    const req = request(
      url + path,
      { method, headers: { 'content-type': 'application/json', ...headers }, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('client timeout'), { code: 'CLIENT_TIMEOUT' })));
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
    req.end(body);
  });
}

const sha = (s: string) => 'sha256:' + createHash('sha256').update(s).digest('hex');

describe('fault proxy', () => {
  let up: Upstream;
  let proxy: FaultProxy;
  beforeEach(async () => {
    up = await startUpstream();
  });
  afterEach(async () => {
    await proxy?.close();
    await up.close();
  });

  it('passes requests through and records method, path, idempotency key and body hash', async () => {
    proxy = await startFaultProxy({ target: up.url, recordHeaders: ['X-Request-Tag'] });
    const r = await send(proxy.url, 'POST', '/v1/things?x=1', '{"a":1}', {
      'Idempotency-Key': 'k-1',
      'X-Request-Tag': 't',
      Authorization: 'Bearer secret',
    });
    expect(r.status).toBe(201);
    expect(JSON.parse(r.body!)).toEqual({ n: 1, path: '/v1/things?x=1' });
    expect(r.headers!['x-upstream']).toBe('yes');
    expect(up.committed).toEqual(['{"a":1}']);
    expect(proxy.requests).toHaveLength(1);
    const rec = proxy.requests[0]!;
    expect(rec).toMatchObject({
      n: 1,
      method: 'POST',
      path: '/v1/things?x=1',
      fault: 'pass',
      forwarded: true,
      upstreamStatus: 201,
      bodyBytes: 7,
    });
    expect(rec.bodyHash).toBe(sha('{"a":1}'));
    // only idempotency-related headers are recorded: never the Authorization secret
    expect(rec.headers).toEqual({ 'idempotency-key': 'k-1', 'x-request-tag': 't' });
  });

  it('drop-response: the upstream commits, the client sees a reset', async () => {
    proxy = await startFaultProxy({ target: up.url, faults: ['drop-response'] });
    const r = await send(proxy.url, 'POST', '/charge', '{"amount":5}');
    expect(r.status).toBeUndefined();
    expect(r.error).toMatch(/ECONNRESET|socket hang up/);
    expect(up.committed).toEqual(['{"amount":5}']);
    expect(proxy.requests[0]).toMatchObject({ fault: 'drop-response', forwarded: true, upstreamStatus: 201 });
  });

  it('truncate-response: the upstream commits, the client gets the status and headers but cannot read the body', async () => {
    proxy = await startFaultProxy({ target: up.url, faults: ['truncate-response', 'pass'] });
    const r = await fetch(proxy.url + '/charge', {
      method: 'POST',
      body: '{"amount":5}',
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(201);
    expect(r.headers.get('x-upstream')).toBe('yes');
    expect(Number(r.headers.get('content-length'))).toBe(JSON.stringify({ n: 1, path: '/charge' }).length);
    await expect(r.text()).rejects.toThrow();
    expect(up.committed).toEqual(['{"amount":5}']);
    expect(proxy.requests[0]).toMatchObject({ fault: 'truncate-response', forwarded: true, upstreamStatus: 201 });
    // The next call passes: the script cut exactly one answer.
    const again = await send(proxy.url, 'GET', '/x');
    expect(again.status).toBe(200);
  });

  it('truncate-response on an answer without a body (a 202): the body is announced and never ends', async () => {
    const empty = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(202, { 'request-id': 'r-1' }).end());
    });
    await new Promise<void>((r) => empty.listen(0, '127.0.0.1', () => r()));
    try {
      proxy = await startFaultProxy({
        target: `http://127.0.0.1:${(empty.address() as AddressInfo).port}`,
        faults: ['truncate-response'],
      });
      const r = await fetch(proxy.url + '/sendMail', { method: 'POST', body: '{}' });
      expect(r.status).toBe(202);
      expect(r.headers.get('request-id')).toBe('r-1');
      await expect(r.text()).rejects.toThrow();
      expect(proxy.requests[0]).toMatchObject({ fault: 'truncate-response', forwarded: true, upstreamStatus: 202 });
    } finally {
      await proxy.close();
      empty.closeAllConnections();
      await new Promise<void>((r) => empty.close(() => r()));
    }
  });

  it('reset-before: the client sees a reset and the upstream never sees the request', async () => {
    proxy = await startFaultProxy({ target: up.url, faults: ['reset-before'] });
    const r = await send(proxy.url, 'POST', '/charge', '{"amount":5}');
    expect(r.error).toMatch(/ECONNRESET|socket hang up/);
    expect(up.committed).toEqual([]);
    expect(proxy.requests[0]).toMatchObject({ fault: 'reset-before', forwarded: false });
    expect(proxy.requests[0]!.upstreamStatus).toBeUndefined();
  });

  it('delay: the upstream commits, the client times out before any answer', async () => {
    proxy = await startFaultProxy({ target: up.url, faults: [{ kind: 'delay', ms: 5_000 }] });
    const r = await send(proxy.url, 'POST', '/charge', '{"amount":5}', {}, 150);
    expect(r.error).toBe('CLIENT_TIMEOUT');
    // the proxy forwards and hears of the client's close on its own sockets, maybe after the client's timeout fired
    await expect.poll(() => up.committed).toHaveLength(1);
    await expect
      .poll(() => proxy.requests[0])
      .toMatchObject({
        fault: { kind: 'delay', ms: 5_000 },
        forwarded: true,
        clientGaveUp: true,
      });
  });

  it('delay: a client without a timeout is dropped by the proxy after the hold, and the record says so', async () => {
    proxy = await startFaultProxy({ target: up.url, faults: [{ kind: 'delay', ms: 100 }] });
    const r = await send(proxy.url, 'POST', '/charge', '{"amount":5}', {}, 5_000);
    expect(r.error).toMatch(/ECONNRESET|socket hang up/);
    expect(up.committed).toHaveLength(1);
    expect(proxy.requests[0]).toMatchObject({ clientGaveUp: false });
  });

  it('delay: a client that timed out while the process stalled past the hold is still seen giving up', async () => {
    proxy = await startFaultProxy({ target: up.url, faults: [{ kind: 'delay', ms: 300 }] });
    const client = request(`${proxy.url}/charge`, { method: 'POST' });
    const reply = new Promise((resolve) => client.on('error', (e) => resolve(e.message)));
    client.end('{}');
    while (proxy.requests[0]?.upstreamStatus === undefined) await new Promise(setImmediate);
    // The hold has begun: the client's timeout comes due, and the process stalls past it and the hold alike.
    setTimeout(() => client.destroy(new Error('client timeout')), 10);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    expect(await reply).toBe('client timeout');
    await vi.waitFor(() => expect(proxy.requests[0]?.clientGaveUp).toBeDefined(), { timeout: 10_000 });
    expect(proxy.requests[0]).toMatchObject({ clientGaveUp: true });
  });

  it('status: answers by itself with Retry-After and a JSON body, never forwarding', async () => {
    proxy = await startFaultProxy({
      target: up.url,
      faults: [
        { kind: 'status', status: 429, retryAfterS: 2, body: { error: { type: 'rate_limit' } } },
        { kind: 'status', status: 503, headers: { 'x-why': 'maintenance' }, body: 'down' },
      ],
    });
    const a = await send(proxy.url, 'POST', '/x', '{}');
    expect(a.status).toBe(429);
    expect(a.headers!['retry-after']).toBe('2');
    expect(a.headers!['content-type']).toBe('application/json');
    expect(JSON.parse(a.body!)).toEqual({ error: { type: 'rate_limit' } });
    const b = await send(proxy.url, 'POST', '/x', '{}');
    expect(b).toMatchObject({ status: 503, body: 'down' });
    expect(b.headers!['x-why']).toBe('maintenance');
    expect(up.committed).toEqual([]);
    expect(proxy.requests.map((r) => r.forwarded)).toEqual([false, false]);
  });

  it("status: the fault's own Retry-After and the body's length replace a header of that name in any case (one of each on the wire)", async () => {
    proxy = await startFaultProxy({
      target: up.url,
      faults: [
        { kind: 'status', status: 429, retryAfterS: 5, headers: { 'Retry-After': '1' } },
        {
          kind: 'status',
          status: 429,
          headers: { 'Content-Length': '0', 'Content-Type': 'application/problem+json' },
          body: { a: 1 },
        },
      ],
    });
    const a = await send(proxy.url, 'POST', '/x', '{}');
    expect(a.status).toBe(429);
    expect(a.headers!['retry-after']).toBe('5');
    const b = await send(proxy.url, 'POST', '/x', '{}');
    expect(b).toMatchObject({ status: 429, body: '{"a":1}' });
    expect(b.headers!['content-type']).toBe('application/problem+json');
  });

  it('status with forward: the upstream commits, the client gets the scripted answer instead', async () => {
    proxy = await startFaultProxy({
      target: up.url,
      faults: [{ kind: 'status', status: 409, body: { error: { code: 'idempotency_key_in_use' } }, forward: true }],
    });
    const r = await send(proxy.url, 'POST', '/x', '{"k":1}');
    expect(r.status).toBe(409);
    expect(JSON.parse(r.body!)).toEqual({ error: { code: 'idempotency_key_in_use' } });
    expect(up.committed).toEqual(['{"k":1}']);
    expect(proxy.requests[0]).toMatchObject({ forwarded: true, upstreamStatus: 201 });
  });

  it('arrays script one call each and pass past their end', async () => {
    proxy = await startFaultProxy({ target: up.url, faults: ['reset-before', { kind: 'status', status: 500 }] });
    const replies = [];
    for (let i = 0; i < 4; i += 1) replies.push(await send(proxy.url, 'POST', '/x', `{"i":${i}}`));
    expect(replies.map((r) => r.status ?? r.error)).toEqual(['ECONNRESET', 500, 201, 201]);
    expect(proxy.requests.map((r) => r.n)).toEqual([1, 2, 3, 4]);
    expect(up.committed).toEqual(['{"i":2}', '{"i":3}']);
  });

  it('functions script by 1-based call number and see the method and path', async () => {
    const seen: string[] = [];
    proxy = await startFaultProxy({
      target: up.url,
      faults: (call, req) => {
        seen.push(`${call}:${req.method} ${req.path}`);
        return call % 2 === 1 ? { kind: 'status', status: 502 } : 'pass';
      },
    });
    const statuses = [];
    for (let i = 0; i < 4; i += 1)
      statuses.push((await send(proxy.url, i === 3 ? 'GET' : 'POST', `/p${i}`, i === 3 ? undefined : '{}')).status);
    expect(statuses).toEqual([502, 201, 502, 200]);
    expect(seen).toEqual(['1:POST /p0', '2:POST /p1', '3:POST /p2', '4:GET /p3']);
    expect(proxy.requests[3]!.bodyHash).toBe(sha(''));
  });

  it('setFaults swaps the script; call numbering continues', async () => {
    proxy = await startFaultProxy({ target: up.url });
    await send(proxy.url, 'POST', '/a', '{}');
    proxy.setFaults((call) => (call === 2 ? { kind: 'status', status: 418 } : 'pass'));
    expect((await send(proxy.url, 'POST', '/a', '{}')).status).toBe(418);
    proxy.setFaults(['reset-before']);
    expect((await send(proxy.url, 'POST', '/a', '{}')).status).toBe(201);
    expect(proxy.requests.map((r) => r.n)).toEqual([1, 2, 3]);
  });

  it('concurrent requests are numbered and recorded once each', async () => {
    proxy = await startFaultProxy({ target: up.url, faults: (call) => (call <= 8 ? 'pass' : 'reset-before') });
    const replies = await Promise.all(
      Array.from({ length: 16 }, (_, i) => send(proxy.url, 'POST', '/c', `{"i":${i}}`)),
    );
    expect(replies.filter((r) => r.status === 201)).toHaveLength(8);
    expect(replies.filter((r) => r.error)).toHaveLength(8);
    expect(proxy.requests.map((r) => r.n).sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    expect(up.committed).toHaveLength(8);
  });

  it('waitForRequests resolves once they arrived, and rejects after timeoutMs when they never come', async () => {
    proxy = await startFaultProxy({ target: up.url });
    const arrived = proxy.waitForRequests(1);
    await send(proxy.url, 'POST', '/a', '{}');
    await arrived;
    await expect(proxy.waitForRequests(2, 50)).rejects.toThrow(/1 of 2 requests within 50 ms/);
  }, 3000);

  it('waitForRequests counts a request that reached it while the process stalled past timeoutMs', async () => {
    proxy = await startFaultProxy({ target: up.url });
    const arrived = proxy.waitForRequests(1, 100);
    const client = request(`${proxy.url}/a`, { method: 'POST' }, (res) => res.resume()).on('error', () => {});
    // Sent, not yet read by the proxy: the process stalls past the wait's timeout, which then fires first.
    client.end('{}', () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300));
    await expect(arrived).resolves.toBeUndefined();
  });

  it('labels requests with the label set when they arrived', async () => {
    proxy = await startFaultProxy({ target: up.url });
    proxy.label = 'execute#1';
    await send(proxy.url, 'POST', '/a', '{}');
    proxy.label = undefined;
    await send(proxy.url, 'GET', '/a');
    expect(proxy.requests.map((r) => r.label)).toEqual(['execute#1', undefined]);
  });

  it('a script that throws answers 500 and keeps the reason', async () => {
    proxy = await startFaultProxy({
      target: up.url,
      faults: () => {
        throw new Error('script bug');
      },
    });
    expect((await send(proxy.url, 'POST', '/a', '{}')).status).toBe(500);
    expect(proxy.scriptErrors).toEqual(['call 1: script bug']);
    expect(up.committed).toEqual([]);
  });

  it('refuses a non-loopback target and malformed faults with clear errors', async () => {
    await expect(startFaultProxy({ target: 'http://api.stripe.com' })).rejects.toThrow(/loopback/);
    await expect(startFaultProxy({ target: 'https://127.0.0.1:1' })).rejects.toThrow(/plain http/);
    await expect(startFaultProxy({ target: up.url, faults: ['explode' as never] })).rejects.toThrow(
      /faults\[0\] \(call 1\)/,
    );
    // The refusal names every fault the proxy takes.
    const said = await startFaultProxy({ target: up.url, faults: ['explode' as never] }).catch((e: Error) => e.message);
    for (const kind of ["'truncate-response'", "kind: 'delay', ms", "kind: 'late-commit', afterMs", "kind: 'status'"])
      expect(said).toContain(kind);
    await expect(startFaultProxy({ target: up.url, faults: [{ kind: 'status', status: 42 }] })).rejects.toThrow(
      /100–599/,
    );
    await expect(startFaultProxy({ target: up.url, faults: [{ kind: 'delay', ms: -1 }] })).rejects.toThrow(/ms >= 0/);
    proxy = await startFaultProxy({ target: up.url });
  });

  it('works with fetch (undici) too: a dropped response surfaces as a fetch failure', async () => {
    proxy = await startFaultProxy({ target: up.url, faults: ['drop-response', 'pass'] });
    const first = await fetch(proxy.url + '/f', { method: 'POST', body: '{}' }).then(
      (r) => r.status,
      (e: Error) => `failed: ${(e.cause as NodeJS.ErrnoException | undefined)?.code ?? e.message}`,
    );
    expect(first).toMatch(/^failed/);
    const second = await fetch(proxy.url + '/f', { method: 'POST', body: '{}' });
    expect(second.status).toBe(201);
    expect(up.committed).toHaveLength(2);
  });
});
