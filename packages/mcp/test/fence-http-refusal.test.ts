// A Streamable HTTP upstream that refuses the POST of a tools/call (401/403: its token expired, or lacks a scope)
// never ran the tool, and refuses the same call again: a rejection, handed off after one call, not looked up. One that
// throttles it (429) did not run it either: the call is sent again after the upstream's Retry-After, within the
// runner's cap on it.
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { asBusinessOperationId } from '@retrysafe/contract';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import * as z from 'zod/v4';
import { UpstreamThrottledError } from '../src/fence/upstream.js';
import { type Answer, fenceAdapter, hostOfFence, httpUpstream, lookupOrder } from './fence-helpers.js';

describe('an upstream HTTP 401/403 on the call itself', () => {
  it.each([
    [401, 'authentication'],
    [403, 'permission'],
  ])('%i ⇒ rejected (%s): one upstream call, then a handoff', async (status, reason) => {
    let calls = 0;
    const adapter = fenceAdapter({}, async () => {
      calls++;
      throw new StreamableHTTPError(status, `Error POSTing to endpoint: {"error":"invalid_token"}`);
    });
    const packets: { reason: string; explanation: string }[] = [];
    const runner = createRunner({ ledger: createMemoryLedger(), handoff: { send: (p) => void packets.push(p) } });
    const r = await runner.run(adapter, 'create_order', { params: { customer: 'cus_1', ref: `PO-${status}` } });
    expect(r.status).toBe('handed-off');
    expect(packets).toMatchObject([{ reason: 'rejected' }]);
    expect(packets[0]!.explanation).toContain(reason);
    expect(calls).toBe(1);
  });
});

describe('an upstream HTTP 429 on the call itself', () => {
  /** The fence over an upstream on HTTP whose first tools/call is answered 429 with `retryAfter` (and `date`); the orders it made. */
  async function throttledOnce(retryAfter: string, date?: string) {
    const orders: string[] = [];
    const make = () => {
      const server = new McpServer({ name: 'orders', version: '1.0.0' });
      server.registerTool('create_order', { inputSchema: { ref: z.string() } }, async ({ ref }) => {
        orders.push(ref);
        return { content: [{ type: 'text', text: `made ${ref}` }] };
      });
      return server;
    };
    let throttled = false;
    const limiter = ({ method }: { method?: string }) => {
      if (method !== 'tools/call' || throttled) return undefined;
      throttled = true;
      return { status: 429, headers: { 'retry-after': retryAfter, ...(date === undefined ? {} : { date }) } };
    };
    const { client, ledger } = await hostOfFence(
      { url: await httpUpstream(make, limiter) },
      {
        name: 'orders',
        policy: { baseMs: 10, capMs: 50 },
        tools: { create_order: { kind: 'create', intent: ['ref'] } },
      },
    );
    const answer = (await client.callTool({ name: 'create_order', arguments: { ref: 'PO-1' } })) as Answer;
    const id = asBusinessOperationId(answer._meta!.retrysafe!.businessOperationId!);
    return { answer, orders, record: await ledger.get(id), receipts: await ledger.receipts(id) };
  }

  it("⇒ not applied: sent again once the upstream's Retry-After has passed, and made once", async () => {
    const { answer, orders, receipts } = await throttledOnce('1');
    expect(answer._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect(orders).toEqual(['PO-1']);
    expect(receipts.map((r) => r.outcome)).toEqual(['not-applied', 'succeeded']);
    expect(receipts[0]!.decision.delayMs).toBeGreaterThanOrEqual(1000);
  });

  it("an HTTP-date Retry-After is waited for by the upstream's own Date, though our clock runs an hour ahead", async () => {
    const at = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
    const { orders, receipts } = await throttledOnce(new Date(at + 1000).toUTCString(), new Date(at).toUTCString());
    expect(orders).toEqual(['PO-1']);
    expect(receipts.map((r) => r.outcome)).toEqual(['not-applied', 'succeeded']);
    expect(receipts[0]!.decision.delayMs).toBeGreaterThanOrEqual(1000);
  });

  it("on the lookup tool: it cannot tell yet, and the next lookup waits the upstream's Retry-After", async () => {
    const adapter = fenceAdapter({}, async () => {
      throw new UpstreamThrottledError('the upstream answered HTTP 429: slow down', '7');
    });
    expect(await lookupOrder(adapter, { customer: 'cus_1', ref: 'PO-1' })).toMatchObject({
      kind: 'cannot-tell',
      status: 429,
      retryAfterMs: 7000,
    });
  });

  it('a Retry-After beyond the cap is not waited for: handed off at once as not applied, nothing made', async () => {
    const { answer, orders, record } = await throttledOnce('3600');
    expect(answer._meta?.retrysafe?.status).toBe('needs-human');
    expect(orders).toEqual([]);
    expect(record).toMatchObject({ lastOutcome: 'not-applied', handoff: { reason: 'retry-exhausted' } });
  });
});

describe("the official SDK server's refusal of a call before its tool runs (answered as a tool error)", () => {
  it('arguments its own check refuses, a tool it disabled: rejected, and corrected arguments are then sent', async () => {
    const sent: string[] = [];
    const make = () => {
      const server = new McpServer({ name: 'mail', version: '1.0.0' });
      // A check of the server's that its listed JSON Schema cannot carry: the fence's own check lets the call pass.
      const to = z.string().refine((v) => /\.\w+$/.test(v), 'the domain needs a dot');
      server.registerTool('send', { inputSchema: { to, subject: z.string() } }, async (args) => {
        sent.push(args.to);
        return { content: [{ type: 'text', text: `sent to ${args.to}` }] };
      });
      const archive = server.registerTool('archive', { inputSchema: { subject: z.string() } }, async () => {
        sent.push('archived');
        return { content: [] };
      });
      if (sent.length > 0) archive.disable(); // listed at the fence's start, disabled by the time it is called
      return server;
    };
    const url = await httpUpstream(make);
    const { client, ledger } = await hostOfFence(
      { url },
      {
        name: 'mail',
        tools: { send: { kind: 'create', intent: ['subject'] }, archive: { kind: 'create', intent: ['subject'] } },
      },
    );
    const send = (to: string) => client.callTool({ name: 'send', arguments: { to, subject: 'hi' } }) as Promise<Answer>;
    expect((await send('a@b'))._meta?.retrysafe?.status).toBe('needs-human');
    expect(await ledger.list({})).toEqual([expect.objectContaining({ lastOutcome: 'rejected' })]);
    expect((await send('a@b.example'))._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect(sent).toEqual(['a@b.example']);
    const archived = (await client.callTool({ name: 'archive', arguments: { subject: 'hi' } })) as Answer;
    expect(archived._meta?.retrysafe?.status).toBe('needs-human');
    expect(sent).toEqual(['a@b.example']);
    expect((await ledger.list({})).map((r) => r.lastOutcome)).toEqual(['succeeded', 'rejected']);
  });

  it("a tool's own invalid params after its effect: unknown, never sent again; the SDK's element-count refusal: rejected", async () => {
    const sent: string[] = [];
    const make = () => {
      const server = new McpServer({ name: 'orders', version: '1.0.0' }, { maxToolInputElements: 3 });
      // The SDK answers whatever a handler throws as a tool error with its message: these ran first.
      const ranThenThrew = (name: string, message: string) =>
        server.registerTool(name, { inputSchema: { order: z.string() } }, async ({ order }) => {
          sent.push(`${name} ${order}`);
          throw new McpError(ErrorCode.InvalidParams, message);
        });
      ranThenThrew('refund_order', 'Tool refund_order: order 42 not found');
      ranThenThrew('close_order', 'Input validation error: order 42 is closed');
      server.registerTool('tag_order', { inputSchema: { order: z.string(), tags: z.array(z.string()) } }, async () => {
        sent.push('tagged');
        return { content: [] };
      });
      return server;
    };
    const { client, ledger } = await hostOfFence(
      { url: await httpUpstream(make) },
      {
        name: 'orders',
        tools: {
          refund_order: { kind: 'create', intent: ['order'] },
          close_order: { kind: 'create', intent: ['order'] },
          tag_order: { kind: 'create', intent: ['order'] },
        },
      },
    );
    const call = (name: string, args: Record<string, unknown>) =>
      client.callTool({ name, arguments: args }) as Promise<Answer>;
    for (const name of ['refund_order', 'close_order', 'refund_order', 'close_order'])
      expect((await call(name, { order: '42' }))._meta?.retrysafe?.status).toBe('needs-human');
    expect(sent).toEqual(['refund_order 42', 'close_order 42']);
    expect((await ledger.list({})).map((r) => r.lastOutcome)).toEqual(['unknown', 'unknown']);
    expect((await call('tag_order', { order: '42', tags: ['a', 'b', 'c'] }))._meta?.retrysafe?.status).toBe(
      'needs-human',
    );
    expect((await call('tag_order', { order: '42', tags: ['a'] }))._meta?.retrysafe?.status).toBe('done');
    expect(sent).toEqual(['refund_order 42', 'close_order 42', 'tagged']);
    expect((await ledger.list({})).map((r) => r.lastOutcome).sort()).toEqual(['succeeded', 'unknown', 'unknown']);
  });
});
