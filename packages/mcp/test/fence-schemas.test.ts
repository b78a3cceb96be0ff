/**
 * Upstream tools with input schemas of every shape a server may list, fenced in process: a real SDK server as the
 * upstream, the fence server, and the real SDK client as the host. A schema the fence cannot use for one tool must
 * not take the others down, and the key argument the fence sets is never one the caller must send.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as z4 from 'zod/v4';
import { followUpstream } from '../src/fence/fence-adapter.js';
import type { Upstream } from '../src/fence/upstream.js';
import { createFenceAdapter, FenceConfigError, parseFenceConfig } from '../src/index.js';
import { type Answer, clientOf, fenceOver } from './fence-helpers.js';

/** An upstream listing `tools`, whose every call is recorded and answered with its arguments (also as structured
 * content). A call's progressToken is recorded apart (`tokens`): the fence asks for the progress of each fenced call. */
async function upstreamOf(tools: Tool[]) {
  const calls: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> }[] = [];
  const tokens: unknown[] = [];
  const server = new Server({ name: 'odd', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const { progressToken, ...meta } = req.params._meta ?? {};
    tokens.push(progressToken);
    const { _meta, ...params } = req.params;
    calls.push(Object.keys(meta).length > 0 ? { ...params, _meta: meta } : params);
    const args = req.params.arguments ?? {};
    return { content: [{ type: 'text', text: JSON.stringify(args) }], structuredContent: args };
  });
  return { upstream: await linked(server, tools), calls, tokens };
}

/** The fence's upstream: a client of `server`, in process. */
async function linked(server: Pick<Server, 'connect'>, tools: Tool[]) {
  const client = await clientOf(server, 'fence');
  return {
    tools,
    capabilities: client.getServerCapabilities() ?? {},
    ready: async () => undefined,
    request: (req: never, schema: never, opts: never) => client.request(req, schema, opts),
    callTool: (p: never, _: undefined, opts: never) => client.callTool(p, undefined, opts),
    onNotification: () => () => true,
    close: () => client.close(),
  } as unknown as Upstream;
}

/** The host's client to a fence over `tools` (of `given`, else an upstream that answers its arguments) with `fenced`
 * as the fence file's tools. */
async function host(tools: Tool[], fenced: Record<string, unknown>, given?: Upstream) {
  const { upstream, calls, tokens } = given ? { upstream: given, calls: [], tokens: [] } : await upstreamOf(tools);
  const config = parseFenceConfig({ name: 'odd', ledger: './unused.db', tools: fenced });
  const client = await clientOf(fenceOver(config, upstream));
  const call = (name: string, args: Record<string, unknown>) =>
    client.callTool({ name, arguments: args }) as Promise<Answer>;
  return { client, call, calls, tokens };
}

describe("the fence's key argument", () => {
  it('an upstream tool that requires its idempotency key: a call without it is sent, with the key the fence derived', async () => {
    const create: Tool = {
      name: 'create',
      inputSchema: {
        type: 'object',
        properties: { title: { type: 'string' }, idempotency_key: { type: 'string' } },
        required: ['title', 'idempotency_key'],
        additionalProperties: false,
      },
    };
    const { client, call, calls } = await host([create], {
      create: { kind: 'create', intent: ['title'], key: { argument: 'idempotency_key' } },
    });
    const listed = (await client.listTools()).tools.find((t) => t.name === 'create')!;
    expect(listed.inputSchema.required).toEqual(['title']);
    const a = await call('create', { title: 'Q3 report' });
    expect(a._meta?.retrysafe?.status).toBe('done');
    expect(calls).toEqual([
      { name: 'create', arguments: { title: 'Q3 report', idempotency_key: expect.stringMatching(/^rs-/) } },
    ]);
  });
});

describe("the fence's key argument that another argument's schema refers to (the SDK's #/properties/… for a zod schema used twice)", () => {
  it('hidden, its schema stays where the other argument reads it: the call is checked, sent once, with the key', async () => {
    const Id = z.string().min(1);
    const calls: unknown[] = [];
    /** A server written with the official SDK: its input schema uses Id twice. */
    const crm = () => {
      const server = new McpServer({ name: 'crm', version: '1.0.0' });
      server.registerTool('create_contact', { inputSchema: { request_id: Id, customer_id: Id } }, async (args) => {
        calls.push(args);
        return { content: [{ type: 'text', text: 'created' }] };
      });
      return server;
    };
    const direct = await clientOf(crm());
    const { tools } = await direct.listTools();
    expect(tools[0]?.inputSchema.properties?.customer_id).toEqual({ $ref: '#/properties/request_id' });
    const fenced = { create_contact: { kind: 'create', intent: ['customer_id'], key: { argument: 'request_id' } } };
    const { client, call } = await host(tools, fenced, await linked(crm(), tools));
    const listed = (await client.listTools()).tools.find((t) => t.name === 'create_contact')!;
    expect((await call('create_contact', { customer_id: '' }))._meta?.retrysafe?.status).toBe('invalid-input');
    expect((await call('create_contact', { customer_id: 'cus_1' }))._meta?.retrysafe?.status).toBe('done');
    expect(listed.inputSchema.properties).toEqual({ customer_id: { type: 'string', minLength: 1 } });
    expect(calls).toEqual([{ customer_id: 'cus_1', request_id: expect.stringMatching(/^rs-/) }]);
  });
});

describe("the fence's key argument at a nested path", () => {
  it('is hidden from the listing and from the check of the arguments, and sent with the key the fence derived', async () => {
    const create: Tool = {
      name: 'create',
      inputSchema: {
        type: 'object',
        properties: {
          title: { type: 'string' },
          options: {
            type: 'object',
            properties: { idempotency_key: { type: 'string' }, notify: { type: 'boolean' } },
            required: ['idempotency_key'],
            additionalProperties: false,
          },
        },
        required: ['title', 'options'],
      },
    };
    const { client, call, calls } = await host([create], {
      create: { kind: 'create', intent: ['title'], key: { argument: 'options.idempotency_key' } },
    });
    const listed = (await client.listTools()).tools.find((t) => t.name === 'create')!;
    expect(listed.inputSchema.properties?.options).toEqual({
      type: 'object',
      properties: { notify: { type: 'boolean' } },
      required: [],
      additionalProperties: false,
    });
    const a = await call('create', { title: 'Q3 report', options: { notify: true } });
    expect(a._meta?.retrysafe?.status).toBe('done');
    expect(calls).toEqual([
      {
        name: 'create',
        arguments: { title: 'Q3 report', options: { notify: true, idempotency_key: expect.stringMatching(/^rs-/) } },
      },
    ]);
  });
});

describe("the fence's key argument declared through a reference or a combinator", () => {
  /** A request model as pydantic writes it for a Python server (FastMCP): under `$defs`, its key required, no others. */
  const Req = {
    type: 'object',
    properties: { title: { type: 'string' }, idempotency_key: { type: 'string' } },
    required: ['title', 'idempotency_key'],
    additionalProperties: false,
  };
  const Other = { ...Req, properties: { other: { type: 'string' }, idempotency_key: { type: 'string' } } };
  const shapes: [string, Record<string, unknown>, string][] = [
    ['a model argument ($ref to $defs)', { properties: { req: { $ref: '#/$defs/Req' } }, required: ['req'] }, 'req.'],
    [
      'a model argument whose model has its own $id (its #… references are into it)',
      {
        properties: { req: { $ref: '#/$defs/Req' } },
        required: ['req'],
        $defs: {
          Req: {
            ...Req,
            $id: 'urn:example:req',
            properties: { ...Req.properties, memo: { $ref: '#/properties/title' } },
          },
        },
      },
      'req.',
    ],
    ['a $ref at the root', { $ref: '#/$defs/Req' }, ''],
    ['allOf', { allOf: [{ $ref: '#/$defs/Req' }] }, ''],
    ['oneOf', { oneOf: [Req, { ...Other, required: ['other', 'idempotency_key'] }] }, ''],
    ['anyOf', { properties: Req.properties, required: ['title'], anyOf: [{ required: ['idempotency_key'] }] }, ''],
  ];
  it.each(shapes)(
    '%s: hidden from the listing and the check, sent with the key the fence derived',
    async (_, shape, at) => {
      const inputSchema = { type: 'object' as const, $defs: { Req }, ...shape };
      const fenced = { create: { kind: 'create', intent: [`${at}title`], key: { argument: `${at}idempotency_key` } } };
      const { client, call, calls } = await host([{ name: 'create', inputSchema }], fenced);
      const listed = (await client.listTools()).tools[0]!;
      const args = at ? { req: { title: 'Q3' } } : { title: 'Q3' };
      // The host's own check of the listed schema takes the call without the key.
      expect(new AjvJsonSchemaValidator().getValidator(listed.inputSchema as never)(args).valid).toBe(true);
      expect((await call('create', args))._meta?.retrysafe?.status).toBe('done');
      const key = expect.stringMatching(/^rs-/);
      const sent = at ? { req: { title: 'Q3', idempotency_key: key } } : { title: 'Q3', idempotency_key: key };
      expect(calls).toEqual([{ name: 'create', arguments: sent }]);
    },
  );
});

describe("an upstream tool named like one of the fence's own tools", () => {
  const own = (name: string): Tool => ({ name, inputSchema: { type: 'object' } });
  const create: Tool = { name: 'create', inputSchema: { type: 'object' } };

  it("passed through: listed once (as the fence's own, which answers it), so the listing a host relays stays valid", async () => {
    const { client } = await host([create, own('retrysafe_status'), own('retrysafe_handoffs')], {
      create: { kind: 'create', intent: ['title'] },
    });
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names.sort()).toEqual(['create', 'retrysafe_handoffs', 'retrysafe_status']);
  });

  it("fenced: refused at start, since its calls would reach the fence's lookup and never the upstream", async () => {
    await expect(
      host([own('retrysafe_handoffs')], { retrysafe_handoffs: { kind: 'create', intent: ['title'] } }),
    ).rejects.toThrow(/retrysafe_handoffs/);
  });
});

describe('an upstream tool named as the MCP spec allows, not as an identifier (2fa_enable, a..b)', () => {
  it('is fenced: each its own operation, sent once, and its re-issue answered from the ledger', async () => {
    const tools = ['2fa_enable', 'a..b', '.'].map((name): Tool => ({ name, inputSchema: { type: 'object' } }));
    const fenced = Object.fromEntries(tools.map((t) => [t.name, { kind: 'set', intent: ['user'] }]));
    const { call, calls } = await host(tools, fenced);
    for (const { name } of tools)
      for (const adopted of [false, true])
        expect((await call(name, { user: 'u_1' }))._meta?.retrysafe).toMatchObject({
          status: 'done',
          adopted,
          businessOperationId: expect.stringMatching(new RegExp(`^odd\\.${name.replaceAll('.', '\\.')}:[0-9a-f]{32}$`)),
        });
    expect(calls.map((c) => c.name)).toEqual(['2fa_enable', 'a..b', '.']);
  });
});

describe('an upstream outputSchema the fence cannot compile', () => {
  it("the applied call's answer still reaches the host (the fence's own answer), once, and so does its re-issue", async () => {
    const create: Tool = {
      name: 'create',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object', properties: { id: { $ref: '#/$defs/Missing' } } },
    };
    const { call, calls } = await host([create], { create: { kind: 'create', intent: ['title'] } });
    for (const adopted of [false, true]) {
      const a = await call('create', { title: 'Q3 report' });
      expect(a.isError).toBeFalsy();
      expect(a._meta?.retrysafe).toMatchObject({ status: 'done', adopted });
      expect(a.structuredContent).toMatchObject({ retrysafe: { status: 'done' }, result: { title: 'Q3 report' } });
    }
    expect(calls).toHaveLength(1);
  });
});

describe('an upstream outputSchema whose $ref points into it (the SDK writes #/properties/… for a zod schema used twice)', () => {
  it("the host lists and calls the fenced tool as directly: the upstream's answer, then its stored copy", async () => {
    const Address = z.object({ city: z.string() });
    /** A server written with the official SDK: both schemas use Address twice. */
    const shipping = () => {
      const server = new McpServer({ name: 'shipping', version: '1.0.0' });
      server.registerTool(
        'ship',
        { inputSchema: { from: Address, to: Address }, outputSchema: { from: Address, to: Address } },
        async (args) => ({ content: [], structuredContent: args }),
      );
      return server;
    };
    const direct = await clientOf(shipping());
    const { tools } = await direct.listTools();
    expect(JSON.stringify(tools[0]?.outputSchema)).toContain('"$ref":"#/properties/from"');
    const fenced = { ship: { kind: 'create', intent: ['from', 'to'] } };
    const { client, call } = await host(tools, fenced, await linked(shipping(), tools));
    const listed = (await client.listTools()).tools.find((t) => t.name === 'ship');
    expect(listed?.outputSchema).toBeDefined();
    const shipment = { from: { city: 'Oslo' }, to: { city: 'Bergen' } };
    for (const adopted of [false, true]) {
      const answer = await call('ship', shipment);
      expect(answer._meta?.retrysafe).toMatchObject({ status: 'done', adopted });
      expect(answer.structuredContent).toEqual(shipment);
    }
  });
});

describe('an upstream outputSchema with its own $id, whose references resolve inside it', () => {
  /** The host's answers from `server` (made twice: direct, then fenced), each call made twice through the fence. */
  async function directAndFenced(server: () => Pick<Server, 'connect'>, name: string, args: Record<string, unknown>) {
    const direct = await clientOf(server());
    const { tools } = await direct.listTools();
    const answer = await direct.callTool({ name, arguments: args });
    const { client, call } = await host(
      tools,
      { [name]: { kind: 'create', intent: Object.keys(args) } },
      await linked(server(), tools),
    );
    await client.listTools();
    const fenced = [await call(name, args), await call(name, args)];
    return { tools, answer, fenced };
  }

  it("the SDK's $id and #/definitions/… (a zod schema that refers to itself): the host lists and calls it as directly", async () => {
    const Part: z4.ZodType<{ name: string; parts: unknown[] }> = z4.object({
      name: z4.string(),
      get parts() {
        return z4.array(Part);
      },
    });
    const Invoice = z4.object({ total: z4.number(), tree: Part }).meta({ $id: 'https://example.com/invoice' });
    const billing = () => {
      const server = new McpServer({ name: 'billing', version: '1.0.0' });
      server.registerTool('invoice', { inputSchema: { ref: z4.string() }, outputSchema: Invoice }, async () => ({
        content: [],
        structuredContent: { total: 3, tree: { name: 'kit', parts: [{ name: 'bolt', parts: [] }] } },
      }));
      return server;
    };
    const { tools, answer, fenced } = await directAndFenced(billing, 'invoice', { ref: 'INV-1' });
    expect(tools[0]?.outputSchema).toMatchObject({ $id: 'https://example.com/invoice', definitions: {} });
    for (const a of fenced) expect(a.structuredContent).toEqual(answer.structuredContent);
  });

  /** A server listing `quote` with `outputSchema`, whose every call answers `{ net, gross }`. */
  const quotes = (outputSchema: Tool['outputSchema']) => () => {
    const quote: Tool = { name: 'quote', inputSchema: { type: 'object', properties: { ref: { type: 'string' } } } };
    const server = new Server({ name: 'quotes', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ ...quote, outputSchema }] }));
    server.setRequestHandler(CallToolRequestSchema, async () => ({
      content: [],
      structuredContent: { net: { amount: 10 }, gross: { amount: 12 } },
    }));
    return server;
  };

  it('$id and #/$defs/… written by hand: the host lists and calls it as directly', async () => {
    const Money = { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] };
    const { answer, fenced } = await directAndFenced(
      quotes({
        $id: 'urn:example:quote',
        $defs: { Money },
        type: 'object',
        properties: { net: { $ref: '#/$defs/Money' }, gross: { $ref: '#/$defs/Money' } },
        required: ['net', 'gross'],
      }),
      'quote',
      { ref: 'Q-1' },
    );
    for (const a of fenced) expect(a.structuredContent).toEqual(answer.structuredContent);
  });

  it('a property with its own $id, whose #/properties/… reference is into it: left as it is, listed and called as directly', async () => {
    const Money = {
      $id: 'urn:example:money',
      type: 'object',
      properties: { amount: { type: 'number' }, shown: { $ref: '#/properties/amount' } },
      required: ['amount'],
    };
    const { answer, fenced } = await directAndFenced(
      quotes({ type: 'object', properties: { net: Money, gross: { $ref: '#/properties/net' } } }),
      'quote',
      { ref: 'Q-1' },
    );
    for (const a of fenced) expect(a.structuredContent).toEqual(answer.structuredContent);
  });
});

describe("the upstream answer's _meta (MCP Apps: a result names the UI it is shown in)", () => {
  it('a fenced answer carries it as the direct one does, with _meta.retrysafe beside it, and so does its stored copy', async () => {
    /** A server written with the official SDK whose tool answers with _meta, as MCP Apps servers do. */
    const charts = () => {
      const server = new McpServer({ name: 'charts', version: '1.0.0' });
      const ui = { ui: { resourceUri: 'ui://charts/bar' } };
      server.registerTool('create_chart', { inputSchema: { title: z.string() }, _meta: ui }, async ({ title }) => ({
        content: [{ type: 'text', text: `chart ${title}`, _meta: { 'example.com/format': 'plain' } }],
        structuredContent: { id: 'ch_1', title },
        _meta: { ...ui, 'example.com/view': { width: 640 } },
      }));
      return server;
    };
    const direct = await clientOf(charts());
    const { tools } = await direct.listTools();
    const { _meta, ...answer } = await direct.callTool({ name: 'create_chart', arguments: { title: 'Q3' } });
    expect(_meta).toEqual({ ui: { resourceUri: 'ui://charts/bar' }, 'example.com/view': { width: 640 } });
    const fenced = { create_chart: { kind: 'create', intent: ['title'] } };
    const { call } = await host(tools, fenced, await linked(charts(), tools));
    for (const adopted of [false, true]) {
      const { _meta: meta, ...rest } = await call('create_chart', { title: 'Q3' });
      expect(rest).toEqual(answer);
      expect(meta).toEqual({ ..._meta, retrysafe: expect.objectContaining({ status: 'done', adopted }) });
    }
  });
});

describe("the host request's _meta (a host's locale or user, a trace context)", () => {
  it("reaches the upstream with a fenced call, as with a passed-through one; the fence's own keys do not", async () => {
    const tools: Tool[] = ['create', 'list'].map((name) => ({ name, inputSchema: { type: 'object' } }));
    const { client, calls, tokens } = await host(tools, { create: { kind: 'create', intent: ['title'] } });
    const _meta = { 'openai/locale': 'de-DE', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    for (const name of ['create', 'list'])
      await client.callTool({ name, arguments: { title: 'Q3' }, _meta: { ..._meta, 'retrysafe/waitMs': 1000 } });
    expect(calls.map((c) => c._meta)).toEqual([_meta, { ..._meta, 'retrysafe/waitMs': 1000 }]);
    // The fenced call asks for the upstream's progress though the host did not: another host may join its run asking.
    expect(tokens).toEqual([expect.anything(), undefined]);
  });
});

describe('an input schema that names no dialect', () => {
  const route = (items: unknown): Tool => ({
    name: 'route',
    inputSchema: {
      type: 'object',
      properties: { ref: { type: 'string' }, at: { type: 'array', minItems: 2, maxItems: 2, ...(items as object) } },
      required: ['ref', 'at'],
    },
  });
  it("is read as JSON Schema 2020-12, MCP's default: a closed tuple (prefixItems, items: false) is sent", async () => {
    const tuple = { prefixItems: [{ type: 'number' }, { type: 'number' }], items: false };
    const { call, calls } = await host([route(tuple)], { route: { kind: 'create', intent: ['ref'] } });
    const a = await call('route', { ref: 'r-1', at: [52.5, 13.4] });
    expect(a._meta?.retrysafe?.status).toBe('done');
    expect(calls).toHaveLength(1);
    const refused = await call('route', { ref: 'r-2', at: [52.5, 'north'] });
    expect(refused.isError).toBe(true);
    expect(calls).toHaveLength(1);
  });
  it('written for draft-07 before (an array of items), it still works as draft-07', async () => {
    const { call, calls } = await host([route({ items: [{ type: 'number' }, { type: 'number' }] })], {
      route: { kind: 'create', intent: ['ref'] },
    });
    expect((await call('route', { ref: 'r-1', at: [52.5, 13.4] }))._meta?.retrysafe?.status).toBe('done');
    expect((await call('route', { ref: 'r-2', at: [52.5, 'north'] })).isError).toBe(true);
    expect(calls).toHaveLength(1);
  });
});

describe("a fenced tool's listing (mcp-fence and card-rules records)", () => {
  it('idempotentHint is true through the fence; _meta.retrysafe.upstreamFoldsResends is the card rule: only a key the upstream folds', async () => {
    const tool = (name: string): Tool => ({
      name,
      inputSchema: { type: 'object', properties: { title: { type: 'string' }, key: { type: 'string' } } },
      annotations: { idempotentHint: false },
    });
    const folding = {
      argument: 'key',
      semantics: 'replays',
      retention: '24h',
      concurrency: 'rejects-in-progress',
      parameterMatching: 'mismatch-error',
      source: 'test: the upstream replays a same-key call',
    };
    const { client } = await host([tool('plain'), tool('keyed'), tool('unsure')], {
      plain: { kind: 'create', intent: ['title'] },
      keyed: { kind: 'create', intent: ['title'], key: folding },
      // Concurrency not declared: a duplicate that arrives while the first runs may be a second effect.
      unsure: { kind: 'create', intent: ['title'], key: { ...folding, concurrency: undefined } },
    });
    const { tools } = await client.listTools();
    const meta = (name: string) => {
      const t = tools.find((x) => x.name === name)!;
      const r = (t._meta as { retrysafe: { upstreamFoldsResends: boolean } }).retrysafe;
      return [t.annotations?.idempotentHint, r.upstreamFoldsResends];
    };
    expect([meta('plain'), meta('keyed'), meta('unsure')]).toEqual([
      [true, false],
      [true, true],
      [true, false],
    ]);
  });
});

describe('an intent argument the upstream tool does not take', () => {
  // The upstream reads customer and ref (a Python tool ignores other arguments); the fence file misspells ref.
  const create: Tool = {
    name: 'create',
    inputSchema: { type: 'object', properties: { customer: { type: 'string' }, ref: { type: 'string' } } },
  };

  /** The upstream's calls for two requests it reads as one (customer c1, ref PO-1), or 'refused' at start. */
  async function effectsOrRefusal(intent: string[], tools: Tool[] = [create]): Promise<number | 'refused'> {
    let fenced: Awaited<ReturnType<typeof host>>;
    try {
      fenced = await host(tools, { create: { kind: 'create', intent } });
    } catch (e) {
      if (e instanceof FenceConfigError) return 'refused';
      throw e;
    }
    await fenced.call('create', { customer: 'c1', ref: 'PO-1', reference: 'PO-1' });
    await fenced.call('create', { customer: 'c1', ref: 'PO-1', reference: 'po-1' });
    return fenced.calls.length;
  }

  it('is refused at start: two calls the upstream reads as one would be two operations, two effects', async () => {
    expect(await effectsOrRefusal(['customer', 'reference'])).toBe('refused');
  });

  it('is refused at start where the arguments are a model under $defs (a Python tool), whose listing is a $ref', async () => {
    const model: Tool = {
      name: 'create',
      inputSchema: {
        type: 'object',
        $defs: { Order: create.inputSchema },
        $ref: '#/$defs/Order',
      } as Tool['inputSchema'],
    };
    expect(await effectsOrRefusal(['customer', 'reference'], [model])).toBe('refused');
    expect(await effectsOrRefusal(['customer', 'ref'], [model])).toBe(1);
  });

  it('a declared one, or one beneath a property the schema leaves open, is taken: the repeat is one operation', async () => {
    expect(await effectsOrRefusal(['customer', 'ref'])).toBe(1);
    const open: Tool = { name: 'create', inputSchema: { type: 'object' } };
    expect(await effectsOrRefusal(['customer', 'ref'], [open])).toBe(1);
    // A schema that takes more through a combinator cannot say: not refused.
    const composed = { ...create, inputSchema: { ...create.inputSchema, allOf: [{ type: 'object' }] } } as Tool;
    expect(await effectsOrRefusal(['customer', 'reference'], [composed])).not.toBe('refused');
  });
});

describe('a key argument the upstream tool does not take', () => {
  // The upstream folds calls by request_id; the fence file misspells it, and declares that the upstream replays.
  const create: Tool = {
    name: 'create',
    inputSchema: {
      type: 'object',
      properties: { customer: { type: 'string' }, ref: { type: 'string' }, request_id: { type: 'string' } },
    },
  };
  const replays = {
    semantics: 'replays',
    retention: '24h',
    concurrency: 'waits-then-replays',
    parameterMatching: 'mismatch-error',
  };

  /** The upstream's effects for one call whose first answer is lost, or 'refused' at start. */
  async function effectsOrRefusal(argument: string): Promise<number | 'refused'> {
    const made = new Map<unknown, number>();
    let lost = false;
    const callTool = async (p: { arguments?: Record<string, unknown> }) => {
      const id = p.arguments?.request_id ?? Symbol('a call without a request_id');
      if (!made.has(id)) made.set(id, made.size + 1);
      if (!lost) {
        lost = true;
        throw Object.assign(new Error('Request timed out'), { code: -32001 });
      }
      return { content: [], structuredContent: { id: made.get(id) } };
    };
    const config = parseFenceConfig({
      name: 'odd',
      ledger: './unused.db',
      policy: { baseMs: 1, capMs: 5 },
      tools: { create: { kind: 'create', intent: ['customer', 'ref'], key: { argument, ...replays } } },
    });
    let adapter: ReturnType<typeof createFenceAdapter>;
    try {
      adapter = createFenceAdapter({ config, client: { callTool }, tools: [create] });
    } catch (e) {
      if (e instanceof FenceConfigError) return 'refused';
      throw e;
    }
    await createRunner({ ledger: createMemoryLedger() }).run(adapter, 'create', {
      params: { customer: 'c1', ref: 'PO-1' },
    });
    return made.size;
  }

  it('is refused at start: the upstream would ignore the key, and the re-send the card calls safe would be a second effect', async () => {
    expect(await effectsOrRefusal('requestId')).toBe('refused');
  });

  it('a declared one is taken: the re-send under the key is folded, one effect', async () => {
    expect(await effectsOrRefusal('request_id')).toBe(1);
  });
});

describe('the fence over a tool list that changes (followUpstream)', () => {
  it('a key argument the new schema drops refuses that tool alone; listed as before, it is fenced again', () => {
    const tool = (name: string, ...args: string[]): Tool => ({
      name,
      inputSchema: { type: 'object', properties: Object.fromEntries(args.map((a) => [a, { type: 'string' }])) },
    });
    const upstream = {
      tools: [tool('a', 'title', 'request_id'), tool('b', 'title')],
      callTool: async () => ({ content: [] }),
    };
    const config = parseFenceConfig({
      name: 'odd',
      ledger: './unused.db',
      tools: {
        a: { kind: 'create', intent: ['title'], key: { argument: 'request_id' } },
        b: { kind: 'create', intent: ['title'] },
      },
    });
    const fence = followUpstream(config, upstream);
    const now = () => {
      const { adapter, refused } = fence.current();
      return { fenced: Object.keys(adapter.operations), refused: [...refused.keys()] };
    };
    expect(now()).toEqual({ fenced: ['a', 'b'], refused: [] });
    upstream.tools = [tool('a', 'title'), tool('b', 'title')];
    expect(now()).toEqual({ fenced: ['b'], refused: ['a'] });
    expect(fence.current().refused.get('a')).toMatch(/tools\.a\.key\.argument names request_id/);
    upstream.tools = [tool('a', 'title', 'request_id'), tool('b', 'title')];
    expect(now()).toEqual({ fenced: ['a', 'b'], refused: [] });
    upstream.tools = [tool('a', 'name'), tool('b', 'name')]; // none it can fence: each is refused
    expect(now().refused).toEqual(['a', 'b']);
  });

  it('a provider default the new schema does not take refuses that tool alone, named by the fence file', () => {
    const tool = (name: string, priority: object): Tool => ({
      name,
      inputSchema: { type: 'object', properties: { issue: { type: 'object', properties: { priority } } } },
    });
    const upstream = { tools: [tool('a', { type: 'string' }), tool('b', {})], callTool: async () => ({ content: [] }) };
    const priority = { field: 'issue.priority', steps: [], providerDefault: 'normal', source: 's' };
    const evidence = 'https://tracker.example/docs/issues#priority';
    const config = parseFenceConfig({
      name: 'tracker',
      ledger: './unused.db',
      tools: {
        a: { kind: 'create', intent: ['issue'], normalize: [{ ...priority, evidence }] },
        b: { kind: 'create', intent: ['issue'] },
      },
    });
    const fence = followUpstream(config, upstream);
    expect(fence.current().refused.size).toBe(0);
    upstream.tools = [tool('a', { type: 'integer' }), tool('b', {})];
    expect(Object.keys(fence.current().adapter.operations)).toEqual(['b']);
    expect(fence.current().refused.get('a')).toMatch(
      /tools\.a\.normalize\[0\]\.providerDefault: does not fit the params schema/,
    );
  });
});
