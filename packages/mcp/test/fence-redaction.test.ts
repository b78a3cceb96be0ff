/**
 * An upstream tool's error text often repeats the arguments it was called with ("unknown sku …", "cannot create an
 * order for <customer>"). The fence keeps that text in receipts, the handoff packet, log lines and the answer to the
 * host, so the argument values in it are blanked there, as an adapter's `sensitiveFields` are.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { createMemoryLedger, createRunner, exportReceiptsJsonl, type LogEntry } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import * as z from 'zod/v4';
import { UpstreamThrottledError } from '../src/fence/upstream.js';
import { createFenceAdapter, parseFenceConfig } from '../src/index.js';
import { fenceAdapter, hostOfFence, httpUpstream } from './fence-helpers.js';

const CUSTOMER = 'Jane Roe';
const LINE = 'insulin pen refill, 3 boxes';

describe("a fenced tool's error text that repeats the call's arguments", () => {
  it('keeps the text but not the argument values: RunResult, receipts, packet and log lines', async () => {
    const seen: string[] = [];
    const adapter = fenceAdapter({}, async () => ({
      isError: true,
      content: [{ type: 'text', text: `cannot create an order for ${CUSTOMER} (lines: ${LINE}): credit hold` }],
    }));
    const ledger = createMemoryLedger();
    const packets: unknown[] = [];
    const logs: LogEntry[] = [];
    const runner = createRunner({
      ledger,
      logger: (e) => logs.push(e),
      handoff: { send: async (p) => void packets.push(p) },
    });
    const r = await runner.run(adapter, 'create_order', {
      params: { customer: CUSTOMER, ref: 'PO-77', lines: [LINE] },
    });
    expect(r.status).toBe('handed-off');
    seen.push(JSON.stringify(r), await exportReceiptsJsonl(ledger), JSON.stringify(packets), JSON.stringify(logs));
    const all = seen.join('\n');
    expect(all).toContain('credit hold');
    expect(all).not.toContain(CUSTOMER);
    expect(all).not.toContain('insulin');
  });

  const properties = {
    ref: { type: 'string' },
    quantity: { type: 'integer' },
    express: { type: 'boolean' },
    recipient: { type: 'object', properties: { name: { type: 'string' } } },
  };
  it.each([
    ['listed', { type: 'object', properties }],
    ['a model under $defs (a Python tool)', { type: 'object', $defs: { Ship: { properties } }, $ref: '#/$defs/Ship' }],
    [
      'optional (a Python tool: Optional[int] is anyOf integer, null)',
      { type: 'object', properties: { ...properties, quantity: { anyOf: [{ type: 'integer' }, { type: 'null' }] } } },
    ],
  ])(
    'blanks every argument but numbers and flags, which stay readable (the runner writes its own counts and waits): %s',
    async (_, inputSchema) => {
      const adapter = shipRefusing(`cannot ship 1500 units to ${CUSTOMER} under S-4411`, inputSchema);
      const ledger = createMemoryLedger();
      const r = await createRunner({ ledger }).run(adapter, 'ship', {
        params: { ref: 'S-4411', quantity: 1500, express: true, recipient: { name: CUSTOMER } },
      });
      expect(r.status).toBe('handed-off');
      const receipts = await exportReceiptsJsonl(ledger);
      expect(receipts).toContain('cannot ship 1500 units to [redacted] under [redacted]');
    },
  );

  it('blanks a string argument of digits where it stands whole, not inside the numbers of the text', async () => {
    const adapter = shipRefusing('order 500: 1500 per hour, id=500,', {
      type: 'object',
      properties: { ref: { type: 'string' } },
    });
    const ledger = createMemoryLedger();
    await createRunner({ ledger }).run(adapter, 'ship', { params: { ref: '500' } });
    expect(await exportReceiptsJsonl(ledger)).toContain('order [redacted]: 1500 per hour, id=[redacted],');
  });
});

describe("a fenced tool's answer that echoes the call's arguments (its resultRef among them)", () => {
  it('is stored whole for a re-issued call, but its provider ref is blanked in the record as in receipts, packets and logs', async () => {
    const answer = { id: `order of ${CUSTOMER}`, customer: CUSTOMER, lines: [LINE] };
    const adapter = fenceAdapter({}, async () => ({ content: [], structuredContent: answer }));
    const ledger = createMemoryLedger();
    const logs: LogEntry[] = [];
    const runner = createRunner({ ledger, logger: (e) => logs.push(e) });
    const params = { customer: CUSTOMER, ref: 'PO-78', lines: [LINE] };
    const r = await runner.run(adapter, 'create_order', { params });
    expect(r).toMatchObject({ status: 'done', providerRef: 'order of [redacted]' });
    const [row] = await ledger.list();
    expect(row?.result).toEqual({ content: [], structuredContent: answer });
    // What `ledger ls` and `show`, a packet and retrysafe_status print of it: the record's reference.
    const { result: _kept, params: _sent, ...printed } = row!;
    const all = [JSON.stringify(printed), await exportReceiptsJsonl(ledger), JSON.stringify(logs)].join('\n');
    expect(all).toContain('order of [redacted]');
    expect(all).not.toContain(CUSTOMER);
  });
});

describe("an HTTP upstream's 429 body that quotes a credential, cut where the fence clips the message", () => {
  // The fence keeps 200 characters of the upstream's error: wherever the cut falls, no part of the secret is kept.
  const credentials = [
    ['re_', 're_dZZbxz2e_PgDV7jYu3yT8BKwbE5B2wxPQ'],
    ['AIza', 'AIzaSyD3x9Qm4Lk2Rt7Vb8Nc1Zp6Wq0Es5Yh2Uf'],
    ['ghp_', 'ghp_R8f2kLm9Qx4Tz7Vb1Nc6Wp3Ys0Ej5Hu2Ga8'],
    ['xoxb-', 'xoxb-7360119284-Qm4Lk2Rt7Vb8Nc1Zp6Wq0Es5'],
    ['sk-', 'sk-proj-Qm4Lk2Rt7Vb8Nc1Zp6Wq0Es5Yh2Uf'],
    ['pat-', 'pat-na1-3f9a2c71-8b4e-4d2a-9c6f-1e7b5a0d3c82'],
    ['sk_live_', 'sk_live_51Qm4Lk2Rt7Vb8Nc1Zp6Wq0Es5'],
  ] as const;
  const lead = new UpstreamThrottledError('the upstream answered HTTP 429: ', null).message.length;
  it.each(credentials)('%s…: blanked in the RunResult, receipts and packet', async (prefix, secret) => {
    for (const kept of [prefix.length + 1, prefix.length + 6, secret.length - 1]) {
      const body = `${'-'.repeat(200 - lead - kept)}${secret} exceeded`;
      const adapter = fenceAdapter({}, async () => {
        throw new UpstreamThrottledError(`the upstream answered HTTP 429: ${body}`, '3600');
      });
      const ledger = createMemoryLedger();
      const packets: unknown[] = [];
      const runner = createRunner({ ledger, handoff: { send: async (p) => void packets.push(p) } });
      const r = await runner.run(adapter, 'create_order', { params: { customer: 'cus_1', ref: `PO-${kept}` } });
      expect(r.status).toBe('handed-off');
      const all = [JSON.stringify(r), await exportReceiptsJsonl(ledger), JSON.stringify(packets)].join('\n');
      expect(all).toContain('…');
      expect(all, `${kept} characters kept`).not.toContain(secret.slice(0, prefix.length + 1));
    }
  });
});

describe("a fenced tool's error text that repeats the host request's _meta the fence passed on", () => {
  it('keeps the text but not the values the host sent in _meta: answer and receipts', async () => {
    // Its numbers and flags (a priority, a debug switch) stay readable, as the arguments' do: blanked, each spelling
    // of the number would go from the text wherever it stood, inside other numbers too.
    const meta = { 'example.com/user': 'u-48f1c2', session: { id: 'sess-9d03aa71' }, priority: 500, debug: true };
    const make = () => {
      const server = new McpServer({ name: 'orders', version: '1.0.0' });
      server.registerTool('create_order', { inputSchema: { ref: z.string() } }, async (_args, extra) => ({
        isError: true,
        content: [{ type: 'text', text: `quota exceeded (1500 per hour; true): ${JSON.stringify(extra._meta)}` }],
      }));
      return server;
    };
    const { client, ledger } = await hostOfFence(
      { url: await httpUpstream(make) },
      { name: 'orders', tools: { create_order: { kind: 'create', intent: ['ref'] } } },
    );
    const answer = await client.callTool({ name: 'create_order', arguments: { ref: 'PO-1' }, _meta: meta });
    const all = [JSON.stringify(answer), await exportReceiptsJsonl(ledger)].join('\n');
    expect(all).toContain('quota exceeded (1500 per hour; true)');
    expect(all).not.toContain('u-48f1c2');
    expect(all).not.toContain('sess-9d03aa71');
  });

  it("keeps the numbers and flags it holds readable, as the arguments' are, and takes any key", async () => {
    const meta = { '': 'u-48f1c2', 'example.com/limits': { perHour: 500, strict: true } };
    const make = () => {
      const server = new McpServer({ name: 'orders', version: '1.0.0' });
      server.registerTool('create_order', { inputSchema: { ref: z.string() } }, async () => ({
        isError: true,
        content: [{ type: 'text', text: 'quota of 500 per hour exceeded for u-48f1c2: strict is true' }],
      }));
      return server;
    };
    const { client, ledger } = await hostOfFence(
      { url: await httpUpstream(make) },
      { name: 'orders', tools: { create_order: { kind: 'create', intent: ['ref'] } } },
    );
    await client.callTool({ name: 'create_order', arguments: { ref: 'PO-1' }, _meta: meta });
    expect(await exportReceiptsJsonl(ledger)).toContain(
      'quota of 500 per hour exceeded for [redacted]: strict is true',
    );
  });
});

/** A fenced `ship` whose upstream refuses every call with `text` (a tool error read as a rejection). */
function shipRefusing(text: string, inputSchema: unknown) {
  const config = parseFenceConfig({
    name: 'shop',
    ledger: './unused.db',
    tools: { ship: { kind: 'send', intent: ['ref'], toolErrors: 'rejected' } },
  });
  return createFenceAdapter({
    config,
    client: { callTool: async () => ({ isError: true, content: [{ type: 'text', text }] }) },
    tools: [{ name: 'ship', inputSchema: inputSchema as { type: 'object' } }],
  });
}
