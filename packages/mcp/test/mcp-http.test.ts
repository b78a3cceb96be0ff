import { request } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { AdapterV1, Ledger, Outcome } from '@retrysafe/contract';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { createStripeAdapter } from '@retrysafe/stripe';
import { startStripeSandbox } from '@retrysafe/stripe/sandbox';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { afterCall, gated, latch } from '../../core/test/helpers.js';
import { createCoalescer, createRetrysafeMcpServer, serveHttp } from '../src/index.js';

/** The official client, connected to `http` with its bearer token. */
async function agentOf(
  http: { url: string; token: string; close(): Promise<void> },
  sandbox?: { close(): Promise<void> },
) {
  // Closed after the test, the client first, then what it talks to.
  onTestFinished(async () => {
    await http.close();
    await sandbox?.close();
  });
  const client = new Client({ name: 'http-agent', version: '1.0.0' });
  const requestInit = { headers: { authorization: `Bearer ${http.token}` } };
  await client.connect(new StreamableHTTPClientTransport(new URL(http.url), { requestInit }));
  onTestFinished(() => client.close());
  return client;
}

describe('retrysafe MCP server over streamable HTTP', () => {
  it('binds to loopback only', async () => {
    await expect(
      serveHttp(
        () => {
          throw new Error('unused');
        },
        { host: '0.0.0.0' },
      ),
    ).rejects.toThrow(/loopback only/);
  });

  it('a port in use is a rejected call, not a crash', async () => {
    const first = await serveHttp(() => {
      throw new Error('unused');
    });
    try {
      await expect(
        serveHttp(
          () => {
            throw new Error('unused');
          },
          { port: Number(new URL(first.url).port) },
        ),
      ).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      await first.close();
    }
  });

  it('serves the operation tools on 127.0.0.1: a repeated call is the same charge', async () => {
    const sandbox = await startStripeSandbox({ port: 0 });
    const ledger = createMemoryLedger();
    const runner = createRunner({ ledger });
    const adapter = createStripeAdapter({ apiKey: 'sk_test_mcp_http', baseUrl: sandbox.url, timeoutMs: 2000 });
    const http = await serveHttp(() =>
      createRetrysafeMcpServer({ runner, ledger, adapters: [adapter], operations: ['stripe.customers.create'] }),
    );
    const client = await agentOf(http, sandbox);
    expect(http.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'retrysafe_handoffs',
      'retrysafe_status',
      'stripe_customers_create',
    ]);
    const args = { customerRef: 'user-77', email: 'u77@example.test' };
    const a = (await client.callTool({ name: 'stripe_customers_create', arguments: args })).structuredContent as {
      status: string;
      providerRef: string;
      adopted: boolean;
    };
    const b = (
      await client.callTool({
        name: 'stripe_customers_create',
        arguments: { email: 'u77@example.test', customerRef: 'user-77' },
      })
    ).structuredContent as { status: string; providerRef: string; adopted: boolean };
    expect(a).toMatchObject({ status: 'done', adopted: false });
    expect(b).toMatchObject({ status: 'done', adopted: true, providerRef: a.providerRef });
    expect(sandbox.count('customer')).toBe(1);
  });

  it('two identical calls at once (one HTTP server per session): both answer done with the same customer, one created', async () => {
    const sandbox = await startStripeSandbox({ port: 0, processingMs: 600 });
    const ledger = createMemoryLedger();
    // The runner's own wait for another worker is short; the caller asks for a longer one on its call.
    const runner = createRunner({ ledger, policy: { waitForOtherMs: 50 } });
    const adapter = createStripeAdapter({ apiKey: 'sk_test_mcp_coalesce', baseUrl: sandbox.url, timeoutMs: 5000 });
    const coalescer = createCoalescer(ledger);
    const http = await serveHttp(() => createRetrysafeMcpServer({ runner, ledger, adapters: [adapter], coalescer }));
    const client = await agentOf(http, sandbox);
    const call = () =>
      client.callTool({
        name: 'stripe_customers_create',
        arguments: { customerRef: 'twice-1', email: 't1@example.test' },
        _meta: { 'retrysafe/waitMs': 10_000 },
      });
    const [a, b] = (await Promise.all([call(), call()])).map(
      (r) => r.structuredContent as { status: string; providerRef: string },
    );
    expect(a).toMatchObject({ status: 'done' });
    expect(b).toMatchObject({ status: 'done', providerRef: a!.providerRef });
    expect(sandbox.count('customer')).toBe(1);
  });

  it("an end told in one session is not told in another: that session's same call is answered the end, not sent", async () => {
    const sandbox = await startStripeSandbox({ port: 0 });
    const ledger = createMemoryLedger();
    const runner = createRunner({ ledger });
    const stripe = createStripeAdapter({ apiKey: 'sk_test_mcp_sessions', baseUrl: sandbox.url, timeoutMs: 2000 });
    let sends = 0;
    const step: Outcome = { kind: 'rejected', reason: 'action-required', message: 'open the URL first' };
    const adapter = { ...stripe, doExecute: async () => (sends++, step) };
    const http = await serveHttp(() => createRetrysafeMcpServer({ runner, ledger, adapters: [adapter] }));
    const [a, b] = [await agentOf(http, sandbox), await agentOf(http)];
    const call = async (client: Client) =>
      (await client.callTool({ name: 'stripe_customers_create', arguments: { customerRef: 'two-sessions' } }))
        .structuredContent;
    expect(await call(a)).toMatchObject({ status: 'needs-human' });
    expect([await call(b), sends]).toMatchObject([{ status: 'needs-human' }, 1]);
    await call(a); // told the user's step in this session: the same call after it is sent again
    expect(sends).toBe(2);
  });

  // The runner's wait for the worker holding the operation and the wait for the first call's answer run side by side:
  // one after the other, the defaults (each policy.waitForOtherMs) add up to the SDK client's 60 s request timeout.
  it("an identical call waits for the first's answer and, beside it, for the runner: not one after the other", async () => {
    const sandbox = await startStripeSandbox({ port: 0 });
    const ledger = createMemoryLedger();
    const waited: string[] = [];
    const logger = (e: { event: string }) => void (e.event === 'in-progress' && waited.push(e.event));
    const runner = createRunner({ ledger, policy: { waitForOtherMs: 50 }, logger });
    const adapter = createStripeAdapter({ apiKey: 'sk_test_mcp_coalesce', baseUrl: sandbox.url, timeoutMs: 5000 });
    const { held, atGate, gate } = gated(adapter);
    const coalescer = createCoalescer(ledger, 600_000);
    const http = await serveHttp(() => createRetrysafeMcpServer({ runner, ledger, adapters: [held], coalescer }));
    const client = await agentOf(http, sandbox);
    const call = () =>
      client
        .callTool({ name: 'stripe_customers_create', arguments: { customerRef: 'held-1' } })
        .then((r) => r.structuredContent as { status: string; providerRef: string });
    const first = call();
    await atGate.promise;
    const second = call();
    await vi.waitFor(() => expect(waited).toEqual(['in-progress']), { timeout: 5000 });
    gate.resolve();
    const [a, b] = await Promise.all([first, second]);
    expect(a).toMatchObject({ status: 'done' });
    expect(b).toMatchObject({ status: 'done', providerRef: a.providerRef });
    expect(sandbox.count('customer')).toBe(1);
  });

  // Answered in-progress because another process holds the operation, a call is followed in the ledger up to the
  // caller's deadline: answered from the operation's end, the runner called again only to take over one whose holder
  // died (its lease ran out), never to send what the holder handed off.
  describe('an in-progress call followed in the ledger', () => {
    const args = { customerRef: 'elsewhere-1' };
    const ACTION: Outcome = { kind: 'rejected', reason: 'action-required', message: 'open the URL first' };
    type Seen = (l: Ledger) => Ledger;
    /** This MCP server, and `other`: the runner of another process on the same ledger; each part (`other`, this
     * server's runner `mine`, its follow-up `follow`) sees the ledger as given. */
    async function twoProcesses(as: { other?: Seen; mine?: Seen; follow?: Seen } = {}) {
      const sandbox = await startStripeSandbox({ port: 0 });
      const ledger = createMemoryLedger();
      const seen = (part: Seen | undefined) => part?.(ledger) ?? ledger;
      const adapter = createStripeAdapter({ apiKey: 'sk_test_mcp_follow', baseUrl: sandbox.url, timeoutMs: 5000 });
      const waited: string[] = [];
      const logger = (e: { event: string }) => void (e.event === 'in-progress' && waited.push(e.event));
      const policy = { waitForOtherMs: 50, clockSkewMarginMs: 0 };
      const runner = createRunner({ ledger: seen(as.mine), policy, logger });
      const other = createRunner({ ledger: seen(as.other), owner: 'other-process', policy: { leaseMs: 300 } });
      const coalescer = createCoalescer(seen(as.follow));
      // What this server's adapter does (`serve`): the Stripe adapter's, unless a test gives another.
      let served: AdapterV1 = adapter;
      const front = { ...adapter, doExecute: (...a: Parameters<AdapterV1['doExecute']>) => served.doExecute(...a) };
      const http = await serveHttp(() => createRetrysafeMcpServer({ runner, ledger, adapters: [front], coalescer }));
      const client = await agentOf(http, sandbox);
      const call = (waitMs: number) =>
        client
          .callTool({ name: 'stripe_customers_create', arguments: args, _meta: { 'retrysafe/waitMs': waitMs } })
          .then((r) => r.structuredContent as { status: string });
      const answeredInProgress = () => vi.waitFor(() => expect(waited).toEqual(['in-progress']), { timeout: 5000 });
      /** The adapter, its calls held at `gate` (`reached` once one is) and answered `outcome`; `sends` counts them. */
      const refusing = (outcome: Outcome) => {
        const held = { reached: latch(), gate: latch(), sends: 0 };
        const doExecute = async () => (held.sends++, held.reached.resolve(), await held.gate.promise, outcome);
        return Object.assign(held, { adapter: { ...adapter, doExecute } });
      };
      const serve = (a: AdapterV1) => {
        served = a;
      };
      return { sandbox, adapter, other, call, answeredInProgress, refusing, serve };
    }

    it('handed off there for a step the user must take: answered needs-human, not sent again on its own', async () => {
      const p = await twoProcesses();
      const reached = latch();
      const gate = latch();
      let sends = 0;
      const refusing = {
        ...p.adapter,
        doExecute: async () => (sends++, reached.resolve(), await gate.promise, ACTION),
      };
      const held = p.other.run(refusing, 'customers.create', { params: args });
      await reached.promise;
      const answer = p.call(10_000);
      await p.answeredInProgress();
      gate.resolve();
      expect((await held).status).toBe('handed-off');
      expect(await answer).toMatchObject({
        status: 'needs-human',
        message: expect.stringMatching(/Once the user has/),
      });
      expect(sends).toBe(1);
      expect(p.sandbox.count('customer')).toBe(0);
    });

    // What is at rest is answered only when it is this call's own request: another caller's correction (here of a
    // refusal for a cause outside the params), handed off too, is not this call's hand-off.
    it("corrected by another caller between two polls and handed off again: a conflict, not the correction's hand-off", async () => {
      const polled = latch();
      const poll = latch();
      const follow: Seen = (l) => ({ ...l, get: async (id) => (polled.resolve(), await poll.promise, l.get(id)) });
      const p = await twoProcesses({ follow });
      const r = p.refusing({ kind: 'rejected', reason: 'permission', message: 'this key may not create customers' });
      const held = p.other.run(r.adapter, 'customers.create', { params: args });
      await r.reached.promise;
      const answer = p.call(10_000);
      await polled.promise;
      r.gate.resolve();
      expect((await held).status).toBe('handed-off');
      const corrected = { params: { ...args, name: 'Ada' } };
      expect((await p.other.run(r.adapter, 'customers.create', corrected)).status).toBe('handed-off');
      poll.resolve();
      expect(await answer).toMatchObject({ status: 'conflict', paths: ['name'] });
      expect(r.sends).toBe(2);
    });

    // A duplicate of a call in flight joins it: in the instant its hand-off is written (before its answer), the
    // duplicate's own run answers that end instead of taking the call for the user's own, made after the step.
    it("a duplicate arriving as the first call's hand-off is written: the same hand-off, not sent again", async () => {
      const written = latch();
      const go = latch();
      const mine: Seen = (l) => afterCall(l, 'handOff', async () => (written.resolve(), await go.promise));
      const p = await twoProcesses({ mine });
      const r = p.refusing(ACTION);
      r.gate.resolve();
      p.serve(r.adapter);
      const first = p.call(10_000);
      await written.promise;
      // its own run's answer counts at its deadline, and the first is held until it has answered: a short wait
      const duplicate = await p.call(300);
      go.resolve();
      expect(duplicate).toMatchObject({ status: 'needs-human', message: expect.stringMatching(/Once the user has/) });
      expect(await first).toMatchObject({ status: 'needs-human' });
      expect(r.sends).toBe(1);
    });

    // After the user's step, a call and its duplicate: the call sends it again; the duplicate, whose own run finds the
    // old hand-off at rest first, answers what the call gets, not that old hand-off.
    it("a duplicate of the call made after the user's step: the call's answer, not the old hand-off", async () => {
      const atClaim = latch();
      const go = latch();
      const claimed = latch();
      let claims = 0;
      const mine: Seen = (l) => ({
        ...l,
        claim: async (input) => {
          const n = ++claims;
          if (n === 2) atClaim.resolve(), await go.promise;
          const out = await l.claim(input);
          if (n === 3) claimed.resolve();
          return out;
        },
      });
      const p = await twoProcesses({ mine });
      let sends = 0;
      p.serve({ ...p.adapter, doExecute: async (...a) => (++sends === 1 ? ACTION : p.adapter.doExecute(...a)) });
      expect(await p.call(10_000)).toMatchObject({ status: 'needs-human' });
      const call = p.call(10_000);
      await atClaim.promise;
      const duplicate = p.call(10_000);
      await claimed.promise;
      go.resolve();
      expect(await call).toMatchObject({ status: 'done' });
      expect(await duplicate).toMatchObject({ status: 'done' });
      expect(p.sandbox.count('customer')).toBe(1);
    });

    it('whose holder died: taken over once its lease has run out, not answered in-progress at the deadline', async () => {
      // A process that stopped renews no lease.
      const p = await twoProcesses({ other: (l) => ({ ...l, renewLease: async () => {} }) });
      const reached = latch();
      const dead = { ...p.adapter, doExecute: () => (reached.resolve(), new Promise<never>(() => {})) };
      void p.other.run(dead, 'customers.create', { params: args }).catch(() => {});
      await reached.promise;
      expect(await p.call(1500)).toMatchObject({ status: 'done' });
      expect(p.sandbox.count('customer')).toBe(1);
    });
  });

  describe('refuses a browser page, a rebinding name and a caller without the token, before any tool runs', () => {
    const TOKEN = 'test-token-0123456789abcdef';
    const callBody = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'stripe_customers_create', arguments: { customerRef: 'evil-1', email: 'evil@example.test' } },
    });
    const post = (url: string, headers: Record<string, string | undefined>, body = callBody) =>
      new Promise<{ status: number; body: string; session?: string }>((resolve, reject) => {
        const u = new URL(url);
        const req = request(
          {
            host: u.hostname,
            port: u.port,
            path: u.pathname,
            method: 'POST',
            setHost: false,
            headers: {
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              'content-length': String(Buffer.byteLength(body)),
              ...Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)),
            },
          },
          (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString('utf8')));
            const session = res.headers['mcp-session-id'] as string | undefined;
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, session }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });

    async function withServer(
      run: (h: { url: string; port: string; count(): number; built(): number }) => Promise<void>,
      extra: { allowedHosts?: string[]; allowedOrigins?: string[] } = {},
    ) {
      const sandbox = await startStripeSandbox({ port: 0 });
      const ledger = createMemoryLedger();
      const runner = createRunner({ ledger });
      const adapter = createStripeAdapter({ apiKey: 'sk_test_mcp_guard', baseUrl: sandbox.url, timeoutMs: 2000 });
      let built = 0;
      const http = await serveHttp(
        () => {
          built++;
          return createRetrysafeMcpServer({
            runner,
            ledger,
            adapters: [adapter],
            operations: ['stripe.customers.create'],
          });
        },
        { token: TOKEN, ...extra },
      );
      try {
        await run({
          url: http.url,
          port: new URL(http.url).port,
          count: () => sandbox.count('customer'),
          built: () => built,
        });
        expect((await ledger.list()).length).toBe(0);
      } finally {
        await http.close();
        await sandbox.close();
      }
    }

    it('a DNS-rebinding Host (with and without a valid token) is 403, nothing reaches the provider or the ledger', async () => {
      await withServer(async (h) => {
        for (const headers of [
          { host: `evil.example:${h.port}` },
          { host: `evil.example:${h.port}`, authorization: `Bearer ${TOKEN}` },
          { host: 'evil.example', origin: 'http://evil.example', authorization: `Bearer ${TOKEN}` },
        ]) {
          const r = await post(h.url, headers);
          expect(r.status).toBe(403);
          expect(r.body).toContain('host not allowed');
        }
        expect(h.count()).toBe(0);
        expect(h.built()).toBe(0);
      });
    });

    it('a foreign Origin on a loopback Host is 403 even with the token', async () => {
      await withServer(async (h) => {
        const r = await post(h.url, {
          host: `127.0.0.1:${h.port}`,
          origin: 'http://evil.example',
          authorization: `Bearer ${TOKEN}`,
        });
        expect(r.status).toBe(403);
        expect(r.body).toContain('origin not allowed');
        expect(h.count()).toBe(0);
        expect(h.built()).toBe(0);
      });
    });

    it('no token or a wrong one is 401 (raw HTTP and the real MCP client); the right one works; a configured host and origin are accepted', async () => {
      await withServer(
        async (h) => {
          for (const headers of [
            { host: `127.0.0.1:${h.port}` },
            { host: `localhost:${h.port}`, authorization: 'Bearer test-token-0123456789abcdeX' },
            { host: `127.0.0.1:${h.port}`, authorization: TOKEN },
          ]) {
            const r = await post(h.url, headers);
            expect(r.status).toBe(401);
          }
          const noToken = new Client({ name: 'no-token', version: '1.0.0' });
          await expect(noToken.connect(new StreamableHTTPClientTransport(new URL(h.url)))).rejects.toThrow();
          expect(h.count()).toBe(0);
          expect(h.built()).toBe(0);

          // A listed origin with the token passes the guard (a session, then tools/list only: nothing is created).
          const listed = {
            host: `mcp.internal.test:${h.port}`,
            origin: 'https://agent.internal.test',
            authorization: `Bearer ${TOKEN}`,
          };
          const params = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } };
          const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params });
          const { session } = await post(h.url, listed, init);
          const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
          const ok = await post(h.url, { ...listed, 'mcp-session-id': session }, list);
          expect(ok.status).toBe(200);
          expect(ok.body).toContain('stripe.customers.create');
          expect(h.count()).toBe(0);
        },
        { allowedHosts: ['mcp.internal.test'], allowedOrigins: ['https://agent.internal.test'] },
      );
    });

    it('generates a token when none is configured, and refuses a short one', async () => {
      const a = await serveHttp(() => {
        throw new Error('unused');
      });
      try {
        expect(a.token.length).toBeGreaterThanOrEqual(32);
        expect((await post(a.url, { host: `127.0.0.1:${new URL(a.url).port}` })).status).toBe(401);
      } finally {
        await a.close();
      }
      await expect(
        serveHttp(
          () => {
            throw new Error('unused');
          },
          { token: 'short' },
        ),
      ).rejects.toThrow(/at least 16/);
    });
  });
});
