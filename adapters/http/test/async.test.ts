import { createServer } from 'node:http';
import { startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { executeContext, operationIdFor } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { exportsCreateCard } from '../src/http-cards.js';
import { asyncExportsCreate, type HttpAdapter } from '../src/index.js';
import { startAsyncReplySandbox } from '../src/sandbox/index.js';
import { executeOn, lookupOn, paramsWith, rejected, sandboxPerTest, withAdapter } from './helpers.js';

const OP = 'exports.create';
const job = paramsWith({ dataset: 'sales-2026', format: 'csv', requestRef: 'R-1' });

describe('async request-reply: SDK → sandbox', () => {
  const env = sandboxPerTest(
    () => startAsyncReplySandbox({ port: 0, pollsUntilDone: 1, retryAfterS: 2 }),
    'acme-exports',
    OP,
    asyncExportsCreate,
  );

  it('202 + Location + Retry-After ⇒ in-progress with the absolute status URL; polling: 200 running ⇒ in-progress, then 303 ⇒ GET the resource ⇒ succeeded; never a second POST', async () => {
    const ctx = executeContext(env.adapter, OP, operationIdFor(env.adapter, OP, job()));
    const out = await env.adapter.doExecute(OP, job(), ctx);
    expect(out).toMatchObject({
      kind: 'in-progress',
      status: 202,
      statusRef: `${env.sb.url}/exports/status/exp_1`,
      retryAfterMs: 2000,
      requestId: 'req_1',
    });
    const statusRef = (out as { statusRef: string }).statusRef;
    const poll1 = await env.lookup(job(), { statusRef });
    expect(poll1).toMatchObject({ kind: 'found', outcome: { kind: 'in-progress', statusRef, retryAfterMs: 2000 } });
    const poll2 = await env.lookup(job(), { statusRef });
    expect(poll2).toMatchObject({
      kind: 'found',
      outcome: { kind: 'succeeded', providerRef: 'exp_1', result: { id: 'exp_1', status: 'succeeded', rows: 42 } },
    });
    expect(env.sb.count(OP)).toBe(1);
    expect(env.sb.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(env.sb.requests.map((r) => `${r.method} ${r.status}`)).toEqual([
      'POST 202',
      'GET 200',
      'GET 303',
      'GET 200',
    ]);
  });

  it('invalid request ⇒ validated before acceptance ⇒ 400 ⇒ rejected (validation), no work item', async () => {
    const bad = job({ format: 'xml' });
    // The declared schema refuses it before anything is sent, and a provider-side 400 is classified the same way.
    await env.expectRefused(bad, async (loose) => {
      expect(await executeOn(loose, OP, bad)).toMatchObject(rejected('validation', 400, 'InvalidRequest'));
    });
    expect(env.sb.count(OP)).toBe(0);
  });

  it('same Idempotency-Key ⇒ 202 with the EXISTING status URL, one work item; other payload ⇒ 422 ⇒ rejected (conflict)', async () => {
    const ctx = executeContext(env.adapter, OP, operationIdFor(env.adapter, OP, job()));
    const a = await env.adapter.doExecute(OP, job(), ctx);
    const b = await env.adapter.doExecute(OP, job(), { ...ctx, attempt: 2 });
    expect((b as { statusRef: string }).statusRef).toBe((a as { statusRef: string }).statusRef);
    expect(await env.adapter.doExecute(OP, job({ format: 'json' }), { ...ctx, attempt: 3 })).toMatchObject(
      rejected('conflict', 422),
    );
    expect(env.sb.count(OP)).toBe(1);
  });

  it('an error persisted at the status URL ⇒ found rejected, the same on every read', async () => {
    const broken = job({ dataset: 'broken-1' });
    const out = await env.execute(broken);
    const statusRef = (out as { statusRef: string }).statusRef;
    await env.lookup(broken, { statusRef });
    for (let i = 0; i < 2; i++) {
      expect(await env.lookup(broken, { statusRef })).toMatchObject({
        kind: 'found',
        outcome: { kind: 'rejected', reason: 'other', status: 422, code: 'ExportFailed' },
      });
    }
  });

  /** A job created, then its status poll answered `status` (with `body`) by the proxy: the lookup's answer. */
  async function pollAnswered(status: number, body?: object) {
    const proxy = closeAfterTest(
      await startFaultProxy({
        target: env.sb.url,
        faults: (_n, req) =>
          req.method === 'GET' && req.path.startsWith('/exports/status/') ? { kind: 'status', status, body } : 'pass',
      }),
    );
    let answer: unknown;
    await withAdapter(proxy.url, OP, asyncExportsCreate('acme-exports'), async (a) => {
      const out = await executeOn(a, OP, job());
      answer = await lookupOn(a, OP, job(), { statusRef: (out as { statusRef: string }).statusRef });
    });
    return answer;
  }

  it.each([401, 403])(
    "a %i on the status poll refuses this adapter's credentials, not the work item: cannot-tell, never a rejection",
    async (status) => {
      const body = { error: { code: status === 401 ? 'Unauthorized' : 'Forbidden' } };
      expect(await pollAnswered(status, body)).toMatchObject({ kind: 'cannot-tell', status });
      expect(env.sb.records()[0]!.state).toBe('running');
    },
  );

  // RFC 9110: these answer the poll request (its method, Accept, routing, headers) or the status resource's own
  // existence, not the work item; 410 is a status monitor that expired, so the work may well have completed.
  it.each([404, 405, 406, 410, 421, 431])(
    'a %i on the status poll says nothing about the work item: cannot-tell, never a rejection',
    async (status) => {
      expect(await pollAnswered(status)).toMatchObject({ kind: 'cannot-tell', status });
    },
  );

  it('the 202 was lost (no status URL): lookup finds the work item by clientRequestId and polls its status URL — no POST, one work item', async () => {
    const ctx = executeContext(env.adapter, OP, operationIdFor(env.adapter, OP, job()));
    await env.adapter.doExecute(OP, job(), ctx); // pretend this response never arrived
    const posts = () => env.sb.requests.filter((r) => r.method === 'POST').length;
    const found = await env.lookup(job());
    expect(found).toMatchObject({
      kind: 'found',
      outcome: { kind: 'in-progress', statusRef: `${env.sb.url}/exports/status/exp_1` },
    });
    expect(posts()).toBe(1);
    expect(env.sb.records()[0]!.clientRequestId).toBe(ctx.businessOperationId);
    // Not found; the card bounds no late apply, so that proves nothing.
    expect(await env.lookup(job({ requestRef: 'never-sent' }))).toMatchObject({ kind: 'cannot-tell' });
    expect(env.sb.count(OP)).toBe(1);
  });

  it('the 202 was lost and the status search misses, or matches once, on a page that links a next one (Link rel="next") ⇒ cannot-tell', async () => {
    const paged = await startAsyncReplySandbox({ port: 0, pageSize: 1 });
    // The sandbox ignores ?dataset=: every job is listed, one a page, the other job first.
    const spec = asyncExportsCreate('acme-exports');
    const w = (spec.lookup as { withoutStatusRef: object }).withoutStatusRef;
    const lookup = { ...spec.lookup, withoutStatusRef: { ...w, path: '/exports?dataset={dataset}' } };
    try {
      await withAdapter(paged.url, OP, { ...spec, lookup } as typeof spec, async (a) => {
        await executeOn(a, OP, job({ requestRef: 'other' }));
        await executeOn(a, OP, job());
        expect(await lookupOn(a, OP, job())).toMatchObject({
          kind: 'cannot-tell',
          reason: expect.stringMatching(/next/),
        });
        expect(await lookupOn(a, OP, job({ requestRef: 'other' }))).toMatchObject({
          kind: 'cannot-tell',
          reason: expect.stringMatching(/one match .*next/),
        });
        expect(paged.count(OP)).toBe(2);
      });
    } finally {
      await paged.close();
    }
  });

  // A step that found the work item (a 303: done; a search match) is not undone by a later request that fails:
  // the work item exists, so it is in-progress at its status URL (polled again), never "cannot tell".
  it('303 See Other (done), then the finished resource fails to load ⇒ found in-progress at the status URL', async () => {
    const proxy = closeAfterTest(
      await startFaultProxy({
        target: env.sb.url,
        faults: (_n, req) =>
          req.method === 'GET' && /^\/exports\/exp_/.test(req.path) ? { kind: 'status', status: 503 } : 'pass',
      }),
    );
    await withAdapter(proxy.url, OP, asyncExportsCreate('acme-exports'), async (a) => {
      const statusRef = ((await executeOn(a, OP, job())) as { statusRef: string }).statusRef;
      await lookupOn(a, OP, job(), { statusRef }); // running
      expect(await lookupOn(a, OP, job(), { statusRef })).toMatchObject({
        kind: 'found',
        outcome: { kind: 'in-progress', statusRef },
      });
    });
  });

  it('303 See Other (done) to another origin ⇒ not fetched with these headers, and found in-progress at the status URL', async () => {
    const proxy = closeAfterTest(
      await startFaultProxy({
        target: env.sb.url,
        faults: (_n, req) =>
          req.method === 'GET' && req.path.startsWith('/exports/status/')
            ? { kind: 'status', status: 303, headers: { location: 'http://127.0.0.2:9/exports/exp_1' } }
            : 'pass',
      }),
    );
    await withAdapter(proxy.url, OP, asyncExportsCreate('acme-exports'), async (a) => {
      const statusRef = ((await executeOn(a, OP, job())) as { statusRef: string }).statusRef;
      expect(await lookupOn(a, OP, job(), { statusRef })).toMatchObject({
        kind: 'found',
        outcome: { kind: 'in-progress', statusRef, status: 303 },
      });
    });
  });

  it('the 202 was lost; the search finds the work item, then its status poll fails ⇒ found in-progress at that status URL', async () => {
    const proxy = closeAfterTest(
      await startFaultProxy({
        target: env.sb.url,
        faults: (_n, req) =>
          req.method === 'GET' && req.path.startsWith('/exports/status/') ? { kind: 'status', status: 503 } : 'pass',
      }),
    );
    await withAdapter(proxy.url, OP, asyncExportsCreate('acme-exports'), async (a) => {
      await executeOn(a, OP, job()); // pretend this response never arrived
      expect(await lookupOn(a, OP, job())).toMatchObject({
        kind: 'found',
        outcome: { kind: 'in-progress', statusRef: `${proxy.url}/exports/status/exp_1` },
      });
    });
  });

  describe('fallback "resend-same-key" (an API without a list endpoint)', () => {
    const withResendVariant = (use: (a: HttpAdapter) => Promise<void>, card = exportsCreateCard('acme-exports')) =>
      withAdapter(
        env.sb.url,
        OP,
        {
          ...asyncExportsCreate('acme-exports'),
          card,
          lookup: {
            method: 'status-url',
            status: { field: 'status', pending: ['running'], done: ['succeeded'] },
            withoutStatusRef: 'resend-same-key',
          },
        },
        use,
      );

    it('inside retention: the re-send with the same key returns the EXISTING status resource — one work item', async () => {
      await withResendVariant(async (a) => {
        const ctx = executeContext(a, OP, operationIdFor(a, OP, job()));
        const first = await a.doExecute(OP, job(), ctx); // lost
        const found = await lookupOn(a, OP, job());
        expect(found).toMatchObject({
          kind: 'found',
          outcome: { kind: 'in-progress', statusRef: (first as { statusRef: string }).statusRef },
        });
        expect(env.sb.requests.filter((r) => r.method === 'POST')).toHaveLength(2);
        expect(env.sb.count(OP)).toBe(1);
      });
    });

    it('key past retention ⇒ cannot-tell, and nothing is sent', async () => {
      await withResendVariant(async (a) => {
        await executeOn(a, OP, job());
        const before = env.sb.requests.length;
        const now = Date.now();
        const res = await lookupOn(a, OP, job(), { firstDispatchedAt: now - 25 * 3_600_000, now });
        expect(res).toMatchObject({ kind: 'cannot-tell' });
        expect((res as { reason: string }).reason).toMatch(/past the provider's 24h retention/);
        expect(env.sb.requests.length).toBe(before);
      });
    });

    it('a card with retention unknown ⇒ the lookup never re-sends (cannot-tell), nothing reaches the provider', async () => {
      const card = exportsCreateCard('acme-exports');
      await withResendVariant(
        async (a) => {
          const res = await lookupOn(a, OP, job());
          expect(res).toMatchObject({ kind: 'cannot-tell' });
          expect((res as { reason: string }).reason).toMatch(
            /retention is not known \(card retention\.minimum = unknown\)/,
          );
          expect(env.sb.requests).toHaveLength(0);
        },
        {
          ...card,
          retention: { minimum: { value: 'unknown', source: 'test: not published' } },
          unverified: [
            ...card.unverified,
            { field: 'retention.minimum', condition: 'expiry not published', source: 'test' },
          ],
        },
      );
    });
  });

  it('DELETE on the status URL cancels a pending job; the status then reads "cancelled", which the declaration maps to rejected', async () => {
    const out = await env.execute(job());
    const statusRef = (out as { statusRef: string }).statusRef;
    const del = await fetch(statusRef, { method: 'DELETE' });
    expect(await del.json()).toMatchObject({ status: 'cancelled' });
    expect(await env.lookup(job(), { statusRef })).toMatchObject({
      kind: 'found',
      outcome: { kind: 'rejected', message: 'status cancelled' },
    });
    expect(env.sb.records()[0]!.state).toBe('cancelled');
  });

  it('a status URL on another origin is not polled with this adapter’s headers', async () => {
    const res = await env.lookup(job(), { statusRef: 'http://127.0.0.2:9/exports/status/exp_1' });
    expect(res).toMatchObject({ kind: 'cannot-tell' });
    expect(env.sb.requests).toHaveLength(0);
  });
});

describe('a base URL with a path', () => {
  it('a relative Location is read against the URL the POST went to (base path kept), as RFC 9110 resolves it', async () => {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.writeHead(202, { location: 'exports/status/exp_1', 'retry-after': '1' }).end();
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    closeAfterTest({ close: () => new Promise<void>((ok) => server.close(() => ok())) });
    const { port } = server.address() as { port: number };
    await withAdapter(`http://127.0.0.1:${port}/v1`, OP, asyncExportsCreate('acme-exports'), async (adapter) => {
      const out = await executeOn(adapter, OP, job());
      expect(seen).toEqual(['POST /v1/exports']);
      expect(out).toMatchObject({
        kind: 'in-progress',
        statusRef: `http://127.0.0.1:${port}/v1/exports/status/exp_1`,
      });
    });
  });
});
