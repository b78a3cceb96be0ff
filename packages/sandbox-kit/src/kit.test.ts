import { describe, expect, it } from 'vitest';
import { type ClockSource, createSandboxClock } from './clock.js';
import { type CallScript, createFaultQueue, createFaultScripts, faultAt } from './faults.js';
import { createKeyStore, type KeyAnswers } from './key-store.js';
import { createCounts, createRequestLog } from './request-log.js';
import {
  ANSWERED,
  type LoopbackRequest,
  parseJsonBody,
  routeRequest,
  type SandboxReply,
  startLoopbackServer,
} from './server.js';

describe('sandbox clock', () => {
  it.each<[name: string, base: ClockSource, steps: number[], expected: number]>([
    ['starts at the base source (function)', () => 1_000, [], 1_000],
    ['starts at the base source (object)', { now: () => 5 }, [], 5],
    ['advance adds up', () => 1_000, [10, 0, 2.5], 1_012.5],
  ])('%s', (_name, base, steps, expected) => {
    const clock = createSandboxClock(base);
    for (const s of steps) clock.advance(s);
    expect(clock.now()).toBe(expected);
  });
  it('follows a moving base (the drill clock) plus its own offset', () => {
    let t = 100;
    const clock = createSandboxClock(() => t);
    clock.advance(50);
    t = 200;
    expect(clock.now()).toBe(250);
  });
  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])('refuses advance(%s) with a named RangeError', (ms) => {
    expect(() => createSandboxClock(() => 0, 'hubspot sandbox').advance(ms)).toThrow(
      /^hubspot sandbox: advance\(ms\) must be a non-negative number/,
    );
  });
  it('set moves forward to a time and never back', () => {
    const clock = createSandboxClock(() => 1_000);
    clock.set(4_000);
    expect(clock.now()).toBe(4_000);
    expect(() => clock.set(3_999)).toThrow(RangeError);
  });
});

describe('fault scripts', () => {
  const script: CallScript<string> = ['pass', 'status-500'];
  it.each([
    [script, 1, 'pass'],
    [script, 2, 'status-500'],
    [script, 3, 'pass'], // past the end of an array: pass
    [(call: number) => (call % 2 === 0 ? '429' : 'pass'), 4, '429'],
    [undefined, 7, 'pass'],
  ] as const)('faultAt(%s, call %i) = %s', (s, call, expected) => {
    expect(faultAt(s as CallScript<string> | undefined, call, 'pass')).toBe(expected);
  });
  it('counts calls per operation and restarts the numbering when a script is set', () => {
    const scripts = createFaultScripts<'a' | 'b', string>('pass', { a: ['x', 'y'] });
    expect(scripts.take('a')).toEqual({ call: 1, fault: 'x' });
    expect(scripts.take('b')).toEqual({ call: 1, fault: 'pass' });
    expect(scripts.take('a')).toEqual({ call: 2, fault: 'y' });
    scripts.set('a', (call) => `call-${call}`);
    expect(scripts.calls('a')).toBe(0);
    expect(scripts.take('a')).toEqual({ call: 1, fault: 'call-1' });
    scripts.set('a', undefined);
    expect(scripts.take('a').fault).toBe('pass');
  });
  it('a queue serves the next matching calls in order; replace discards what was queued', () => {
    const q = createFaultQueue<{ status: number; method: string }>();
    q.add({ status: 429, method: 'GET' });
    q.add({ status: 500, method: 'POST' }, 2);
    expect(q.size).toBe(3);
    expect(q.take((f) => f.method === 'POST')).toEqual({ status: 500, method: 'POST' });
    expect(q.take()).toEqual({ status: 429, method: 'GET' });
    q.replace({ status: 503, method: 'POST' }, 1);
    expect(q.size).toBe(1);
    expect(q.take((f) => f.method === 'GET')).toBeUndefined();
    expect(q.take()?.status).toBe(503);
    expect(q.take()).toBeUndefined();
    expect(() => q.add({ status: 1, method: 'x' }, -1)).toThrow(RangeError);
  });
});

describe('request log and counts', () => {
  it('numbers entries from 1, filters and waits', async () => {
    const log = createRequestLog<{ n: number; method: string; status: number }>();
    log.record({ method: 'POST', status: 201 });
    const second = log.record({ method: 'GET', status: 200 });
    expect(second.n).toBe(2);
    expect(log.count((e) => e.method === 'POST')).toBe(1);
    setTimeout(() => log.record({ method: 'POST', status: 409 }), 10);
    await log.waitFor((es) => es.length === 3);
    await expect(log.waitFor(() => false, 20)).rejects.toThrow(/not met within 20 ms/);
  });
  it('counts per operation', () => {
    const c = createCounts();
    expect(c.bump('a')).toBe(1);
    expect(c.bump('a')).toBe(2);
    c.bump('b', 3);
    expect([c.get('a'), c.get('b'), c.get('c'), c.total()]).toEqual([2, 3, 0, 5]);
    c.reset('a');
    expect(c.total()).toBe(3);
  });
});

describe('idempotency-key store', () => {
  const answers: KeyAnswers<{ path: string }> = {
    inFlight: { status: 409, body: { error: 'in use' } },
    mismatch: (entry, req) => ({
      status: 400,
      body: { error: entry.meta.path === req.meta?.path ? 'params' : 'endpoint' },
    }),
    replayHeaders: { 'idempotent-replayed': 'true' },
  };
  const setup = (over: Partial<KeyAnswers<{ path: string }>> = {}, retentionMs: number | null = 1_000) => {
    const clock = createSandboxClock(() => 0);
    let executed = 0;
    const store = createKeyStore({ retentionMs, clock, answers: { ...answers, ...over } });
    const run = (
      key: string,
      fp: string,
      path = '/a',
      reply: SandboxReply = { status: 201, body: { id: executed + 1 } },
    ) =>
      store.run(key, { fingerprint: `${path} ${fp}`, meta: { path } }, () => {
        executed++;
        return reply;
      });
    return { store, clock, run, executed: () => executed };
  };

  it.each([
    // [name, second request (key, fingerprint, path), advance before it, expected result, status, executed]
    ['same key, same params: the stored response, marked replayed', ['k', 'p1', '/a'], 0, 'replayed', 201, 1],
    ['same key, other params: the mismatch answer', ['k', 'p2', '/a'], 0, 'mismatch', 400, 1],
    ['same key, other endpoint: the mismatch answer sees both metas', ['k', 'p1', '/b'], 0, 'mismatch', 400, 1],
    ['another key: executes again', ['k2', 'p1', '/a'], 0, 'executed', 201, 2],
    ['past retention: the key is forgotten, a re-send executes again', ['k', 'p1', '/a'], 1_000, 'executed', 201, 2],
    ['just inside retention: replayed', ['k', 'p1', '/a'], 999, 'replayed', 201, 1],
  ] as const)('%s', async (_name, [key, fp, path], advance, result, status, executed) => {
    const s = setup();
    await s.run('k', 'p1', '/a');
    s.clock.advance(advance);
    const second = await s.run(key, fp, path);
    expect(second.result).toBe(result);
    expect(second.reply.status).toBe(status);
    expect(s.executed()).toBe(executed);
    if (result === 'replayed')
      expect(second.reply).toEqual({ status: 201, body: { id: 1 }, headers: { 'idempotent-replayed': 'true' } });
    if (path === '/b') expect(second.reply.body).toEqual({ error: 'endpoint' });
  });

  it('a stored error is replayed too (endpoint execution began)', async () => {
    const s = setup();
    await s.run('k', 'p', '/a', { status: 500, body: { error: 'boom' } });
    expect((await s.run('k', 'p')).reply).toMatchObject({ status: 500, body: { error: 'boom' } });
  });

  it('`stores` keeps only the responses the provider stores; others release the key', async () => {
    const s = setup({ stores: (r) => r.status < 400 });
    await s.run('k', 'p', '/a', { status: 400, body: { error: 'invalid' } });
    expect(s.store.keys()).toEqual([]);
    expect((await s.run('k', 'p')).result).toBe('executed');
  });

  it.each([
    ['in-flight first (Stripe)', 'in-flight', 409],
    ['mismatch first (IETF draft)', 'mismatch', 400],
  ] as const)('a key in flight with other params: %s', async (_name, precedence, status) => {
    const s = setup({ precedence });
    let release!: () => void;
    const first = s.store.run(
      'k',
      { fingerprint: '/a p1', meta: { path: '/a' } },
      () => new Promise<SandboxReply>((r) => (release = () => r({ status: 201 }))),
    );
    expect((await s.run('k', 'p1')).result).toBe('in-flight');
    expect((await s.run('k', 'p2')).reply.status).toBe(status);
    release();
    expect((await first).result).toBe('executed');
    expect((await s.run('k', 'p1')).result).toBe('replayed');
  });

  it('a key in flight never expires; expire() forgets finished keys only (by filter)', async () => {
    const s = setup({}, 10);
    let release!: () => void;
    const first = s.store.run(
      'slow',
      { fingerprint: 'p' },
      () => new Promise<SandboxReply>((r) => (release = () => r({ status: 201 }))),
    );
    await s.run('a', 'p');
    await s.run('b', 'p');
    s.clock.advance(10);
    expect(s.store.keys()).toEqual(['slow']);
    release();
    await first;
    await s.run('c', 'p');
    await s.run('d', 'p');
    expect(s.store.expire((k) => k === 'c')).toBe(1);
    // 'slow' arrived at 0: once finished it is past its 10 ms like 'a' and 'b'.
    expect(s.store.keys()).toEqual(['d']);
    expect(s.store.expire()).toBe(1);
    expect(s.store.get('d')).toBeUndefined();
  });

  it('an endpoint that throws releases its key (no half-stored answer)', async () => {
    const s = setup();
    await expect(s.store.run('k', { fingerprint: 'p' }, () => Promise.reject(new Error('bug')))).rejects.toThrow('bug');
    expect(s.store.get('k')).toBeUndefined();
  });

  it('a provider may answer a known key with the current state (replay) instead of the stored response', async () => {
    let state = 'running';
    const s = setup({
      replay: (entry) => ({ status: 202, body: { id: (entry.reply!.body as { id: number }).id, state } }),
    });
    await s.run('k', 'p');
    state = 'succeeded';
    expect((await s.run('k', 'p')).reply).toEqual({ status: 202, body: { id: 1, state: 'succeeded' } });
  });

  it('without an in-flight answer, a key seen in flight is a sandbox bug (thrown), not a silent duplicate', async () => {
    const clock = createSandboxClock(() => 0);
    const store = createKeyStore({ retentionMs: null, clock, answers: { mismatch: { status: 400 } } });
    let release!: () => void;
    const first = store.run(
      'k',
      { fingerprint: 'p' },
      () => new Promise<SandboxReply>((r) => (release = () => r({ status: 200 }))),
    );
    await expect(store.run('k', { fingerprint: 'p' }, () => ({ status: 200 }))).rejects.toThrow(/in flight/);
    release();
    await first;
  });

  it('null retention keeps keys for ever', async () => {
    const s = setup({}, null);
    await s.run('k', 'p');
    s.clock.advance(10 ** 12);
    expect((await s.run('k', 'p')).result).toBe('replayed');
  });
});

describe('loopback server', () => {
  it('listens on 127.0.0.1, answers JSON with content-length, runs the route table, and closes', async () => {
    const seen: string[] = [];
    const server = await startLoopbackServer({
      trailingSlash: true,
      headers: () => ({ 'request-id': 'r-1', 'x-version': 'v' }),
      onReply: (req, reply) => seen.push(`${req.method} ${req.path}${req.search} ${reply.status}`),
      handle: (req: LoopbackRequest) => {
        const hit = routeRequest<SandboxReply>(
          [
            {
              method: 'POST',
              path: '/things',
              handle: (r) => ({ status: 201, body: { echo: parseJsonBody(r.rawBody) } }),
            },
            {
              method: 'GET',
              path: /^\/things\/(\w+)$/,
              handle: (_r, m) => ({ status: 200, headers: { 'x-version': 'mine' }, body: { id: m![1] } }),
            },
            {
              method: 'GET',
              path: '/boom',
              handle: () => {
                throw new Error('kaput');
              },
            },
            { method: 'GET', path: '/empty', handle: () => ({ status: 204 }) },
          ],
          req,
        );
        return hit ? hit.value : { status: 404, body: { error: 'no route' } };
      },
    });
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const post = await fetch(`${server.url}things`, { method: 'POST', body: '{"a":1}' });
    expect([post.status, post.headers.get('content-type'), post.headers.get('request-id'), await post.json()]).toEqual([
      201,
      'application/json',
      'r-1',
      { echo: { ok: true, value: { a: 1 } } },
    ]);
    const get = await fetch(`${server.url}things/t1?x=1`);
    expect([get.status, get.headers.get('x-version'), await get.json()]).toEqual([200, 'mine', { id: 't1' }]);
    const boom = await fetch(`${server.url}boom`);
    expect([boom.status, await boom.json()]).toEqual([500, { error: { code: 'sandbox_bug', message: 'kaput' } }]);
    const empty = await fetch(`${server.url}empty`);
    expect([empty.status, empty.headers.get('content-length'), await empty.text()]).toEqual([204, null, '']);
    expect((await fetch(`${server.url}nope`)).status).toBe(404);
    expect(seen).toEqual([
      'POST /things 201',
      'GET /things/t1?x=1 200',
      'GET /boom 500',
      'GET /empty 204',
      'GET /nope 404',
    ]);
    await server.close();
    await server.close(); // a second close is harmless
    await expect(fetch(server.url)).rejects.toThrow();
  });

  it('a handler may answer by itself (ANSWERED); close drops connections still waiting', async () => {
    const server = await startLoopbackServer({ handle: () => ANSWERED });
    const pending = fetch(`${server.url}/hang`).then(
      () => 'answered',
      () => 'dropped',
    );
    await new Promise((r) => setTimeout(r, 50));
    await server.close();
    expect(await pending).toBe('dropped');
  });

  it('refuses a non-loopback host', async () => {
    await expect(startLoopbackServer({ host: '0.0.0.0', handle: () => ({ status: 200 }) })).rejects.toThrow(/loopback/);
  });

  it.each([
    ['', { ok: true, value: undefined }],
    ['{"a":[1]}', { ok: true, value: { a: [1] } }],
    ['{nope', { ok: false }],
  ] as const)('parseJsonBody(%j)', (raw, expected) => {
    expect(parseJsonBody(raw)).toEqual(expected);
  });
});
