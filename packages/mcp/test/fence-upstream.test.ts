/**
 * The fence and its upstream's life: a stdio upstream that dies is restarted, and a call it could not send is
 * never claimed nor handed off; what the fence does not fence (resources, prompts, completions, logging, the
 * tool list and its changes) passes through; an unknown tool is the protocol error the spec lists.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/sdk/shared/stdio.js';
import {
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { openLedger } from '@retrysafe/config';
import { TERMINAL_STATES } from '@retrysafe/contract/ledger';
import { describe, expect, it, vi } from 'vitest';
import * as z from 'zod/v4';
import { connectUpstream } from '../src/fence/upstream.js';
import { onCleanup } from './child-helpers.js';
import {
  type Answer,
  bin,
  closeStdinMidCall,
  connect,
  filesystemServer,
  hostOfFence,
  httpUpstream,
  memoryServer,
  ordersFence,
  ordersServer,
  sharedByTests,
  tempDir,
  ticketsServer,
  wrapped,
  writeFence,
} from './fence-helpers.js';

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }, undefined, { timeout: 30_000 }) as Promise<Answer>;
const orders = async (client: Client) =>
  ((await call(client, 'list_orders', {})).structuredContent as { orders: { ref: string }[] }).orders;
const handoffs = async (client: Client) =>
  ((await call(client, 'retrysafe_handoffs', {})).structuredContent as { handoffs: unknown[] }).handoffs;

/** The fence over an orders server that writes its pid into `dir` (killAndWait reads it), with flags of its own. */
const ordersWithPid = (dir: string, flags: string[]) =>
  wrapped(ordersFence(dir, 2000), ['--', process.execPath, ordersServer, '--pid-file', join(dir, 'pid'), ...flags]);

async function killAndWait(dir: string): Promise<void> {
  const pid = Number(readFileSync(join(dir, 'pid'), 'utf8'));
  process.kill(pid, 'SIGKILL');
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('a dead stdio upstream', () => {
  it('is restarted: a new intent after the kill is answered normally, and nothing is handed off', async () => {
    const dir = tempDir('retrysafe-restart-');
    const client = await ordersWithPid(dir, ['--store', join(dir, 'orders.json')]);
    const ref = `PO-${randomBytes(3).toString('hex')}`;
    expect(
      (await call(client, 'create_order', { customer: 'cus_r', ref, sku: 'sku_1', quantity: 1 }))._meta?.retrysafe
        ?.status,
    ).toBe('done');
    await killAndWait(dir);
    const next = await call(client, 'create_order', { customer: 'cus_r', ref: `${ref}-2`, sku: 'sku_1', quantity: 1 });
    expect(next._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect((await orders(client)).map((o) => o.ref).sort()).toEqual([ref, `${ref}-2`]);
    expect(await handoffs(client)).toEqual([]);
  });

  it('killed mid-call after it committed: the call is unknown, reconciled by the lookup on the restarted upstream — done, one order', async () => {
    const dir = tempDir('retrysafe-midcall-');
    const store = join(dir, 'orders.json');
    const client = await ordersWithPid(dir, ['--store', store, '--reply-delay-ms', '1500']);
    const ref = `PO-${randomBytes(3).toString('hex')}`;
    const pending = call(client, 'create_order', { customer: 'cus_m', ref, sku: 'sku_1', quantity: 1 });
    // the order is stored before the server answers: kill it while the answer is still on its way
    while (!(existsSync(store) && readFileSync(store, 'utf8').includes(ref)))
      await new Promise((r) => setTimeout(r, 20));
    await killAndWait(dir);
    const answer = await pending;
    expect(answer._meta?.retrysafe).toMatchObject({ status: 'done', adopted: true });
    expect((await orders(client)).filter((o) => o.ref === ref)).toHaveLength(1);
  });

  it('that cannot be restarted: a call is refused as not sent (a protocol error), never claimed nor handed off', async () => {
    const dir = tempDir('retrysafe-norestart-');
    const started = join(dir, 'started');
    const client = await ordersWithPid(dir, ['--start-once', started]);
    await killAndWait(dir);
    // The fence may reap the child before its pipes close: the call waits until the fence has seen the death (its
    // restart was refused), or it is claimed against a connection that is already gone.
    while (!readFileSync(started, 'utf8').includes('refused')) await new Promise((r) => setTimeout(r, 20));
    const ref = `PO-${randomBytes(3).toString('hex')}`;
    await expect(
      call(client, 'create_order', { customer: 'cus_n', ref, sku: 'sku_1', quantity: 1 }),
    ).rejects.toMatchObject({ code: -32603, message: expect.stringMatching(/nothing was sent/) });
    expect(await handoffs(client)).toEqual([]);
  });
});

describe('a stdio upstream that exits after each call (one call per process)', () => {
  it('once seen to end itself, each call gets a process of its own: every later call is answered, one order each', async () => {
    const dir = tempDir('retrysafe-one-call-');
    const client = await ordersWithPid(dir, ['--store', join(dir, 'orders.json'), '--exit-after-call']);
    const pid = () => readFileSync(join(dir, 'pid'), 'utf8');
    const create = (ref: string) => call(client, 'create_order', { customer: 'cus_o', ref, sku: 'sku_1', quantity: 1 });
    const first = pid();
    expect((await create('PO-1'))._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    // The fence has seen it end once it has started the next one (which writes its pid).
    await expect.poll(pid).not.toBe(first);
    // Each sent as soon as the one before is answered: none goes to a process about to end.
    expect((await create('PO-2'))._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect((await orders(client)).map((o) => o.ref)).toEqual(['PO-1', 'PO-2']);
    expect(await handoffs(client)).toEqual([]);
  });
});

/** An orders upstream in process with `flags`, its pid written in `dir`, what the fence logs kept in `logs`. */
async function ordersUpstream(dir: string, flags: string[], logs: string[]) {
  const args = [ordersServer, '--pid-file', join(dir, 'pid'), '--store', join(dir, 'orders.json'), ...flags];
  const upstream = await connectUpstream({ command: process.execPath, args }, undefined, { log: (l) => logs.push(l) });
  onCleanup(() => upstream.close());
  const pid = () => readFileSync(join(dir, 'pid'), 'utf8');
  const create = (ref: string) =>
    upstream.callTool({ name: 'create_order', arguments: { customer: 'cus_o', ref, sku: 'sku_1', quantity: 1 } });
  return { upstream, pid, create };
}

describe('a stdio upstream that serves one request per process', () => {
  it("is not sent what the hosts asked of the process before (a log level): it would take the call's place", async () => {
    const logs: string[] = [];
    const { upstream, create } = await ordersUpstream(
      tempDir('retrysafe-one-request-'),
      ['--exit-after-call', '--say-answered'],
      logs,
    );
    upstream.addHost({ capabilities: () => ({}), ask: async () => ({}), subscribed: new Set(), level: 'info' });
    await create('PO-1');
    await expect.poll(() => logs.join('\n')).toMatch(/a process of its own/);
    expect(await create('PO-2')).toMatchObject({ structuredContent: { ref: 'PO-2' } });
  });

  it('is taken for one only when it exits just after an answer: one that exits cleanly on a signal, idle, is not', async () => {
    const logs: string[] = [];
    const { upstream, pid, create } = await ordersUpstream(tempDir('retrysafe-sigterm-'), ['--exit-on-sigterm'], logs);
    const first = pid();
    process.kill(Number(first), 'SIGTERM');
    await expect.poll(pid).not.toBe(first);
    await upstream.ready();
    const second = pid();
    await create('PO-1');
    await create('PO-2');
    expect(pid()).toBe(second); // one process served both
    expect(logs).toEqual([]);
  });

  it('is not taken for one when the SDK closes it over an answer too long for its stdio buffer (server-filesystem)', async () => {
    const dir = tempDir('retrysafe-big-answer-');
    writeFileSync(join(dir, 'big.txt'), 'x'.repeat(STDIO_DEFAULT_MAX_BUFFER_SIZE + 1));
    const logs: string[] = [];
    const target = { command: process.execPath, args: [filesystemServer, dir] };
    const upstream = await connectUpstream(target, undefined, { log: (l) => logs.push(l) });
    onCleanup(() => upstream.close());
    const read = (name: string) => upstream.callTool({ name: 'read_text_file', arguments: { path: join(dir, name) } });
    // Lost on the way (the tool ran, its answer did not arrive), as with the SDK's client directly.
    await expect(read('big.txt')).rejects.toMatchObject({ code: -32000 });
    await upstream.ready();
    expect(await upstream.callTool({ name: 'list_allowed_directories', arguments: {} })).not.toHaveProperty('isError');
    // the fence closed the upstream, which then exited 0 as a server does at the end of its stdin: it did not end itself
    expect(logs).toEqual([]);
  });
});

describe('a stdio upstream that writes lines other than JSON-RPC to stdout (console.log)', () => {
  it('is served as any other: the call is done once, its answer reaches the host', async () => {
    const client = await ordersWithPid(tempDir('retrysafe-noisy-'), ['--noisy']);
    const args = { customer: 'cus_n', ref: 'PO-n', sku: 'sku_1', quantity: 1 };
    expect((await call(client, 'create_order', args))._meta?.retrysafe).toMatchObject({ status: 'done' });
    expect((await call(client, 'create_order', args))._meta?.retrysafe).toMatchObject({ adopted: true });
    expect((await orders(client)).map((o) => o.ref)).toEqual(['PO-n']);
  });
});

describe('a stdio upstream that dies each time it starts', () => {
  it('is restarted a bounded number of times, not for ever; the next call tries again', async () => {
    const starts = join(tempDir('retrysafe-crashloop-'), 'starts');
    const upstream = await connectUpstream({ command: process.execPath, args: [ordersServer, '--crash-loop', starts] });
    const count = () => (existsSync(starts) ? readFileSync(starts, 'utf8').split('\n').length - 1 : 0);
    try {
      let seen = -1;
      while (seen !== count()) {
        seen = count();
        await new Promise((r) => setTimeout(r, 1000));
      }
      // the first start, then five restarts (each of at most five tries)
      expect(seen).toBeLessThanOrEqual(1 + 5 * 5);
      await upstream.ready().catch(() => undefined);
      expect(count()).toBeGreaterThan(seen);
    } finally {
      await upstream.close();
    }
  });
});

describe('the host closes stdin while a fenced call runs (MCP stdio shutdown)', () => {
  it('the call ends and is answered, its ledger row terminal, then the fence exits', async () => {
    const dir = tempDir('retrysafe-stdin-');
    const store = join(dir, 'orders.json');
    const server = [process.execPath, ordersServer, '--store', store, '--reply-delay-ms', '700', '--exit-on-eof'];
    const params = { name: 'create_order', arguments: { customer: 'cus_s', ref: 'PO-s', sku: 'sku_1', quantity: 1 } };
    const { code, answers } = await closeStdinMidCall(
      [bin, 'wrap', '--config', ordersFence(dir, 3000), '--', ...server],
      params,
      // the order is made, its answer on its way
      () => existsSync(store) && readFileSync(store, 'utf8').includes('PO-s'),
    );
    expect(code).toBe(0);
    expect(answers.find((a) => a.id === 1)?.result?._meta?.retrysafe?.status).toBe('done');
    const ledger = await openLedger('./fence.db', dir);
    const rows = await ledger.list();
    await ledger.close();
    expect(rows.map((r) => TERMINAL_STATES.includes(r.state))).toEqual([true]);
  });
});

describe('what the fence does not fence passes through', () => {
  it('resources of server-memory, and an unknown tool is -32602', async () => {
    const dir = tempDir('retrysafe-passthrough-');
    const fence = writeFence(dir, {
      name: 'memory',
      tools: { create_entities: { kind: 'create', intent: ['entities'] } },
    });
    const client = await wrapped(fence, ['--', process.execPath, memoryServer], {
      MEMORY_FILE_PATH: join(dir, 'memory.jsonl'),
    });
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toContain('memory://knowledge-graph');
    const read = await client.readResource({ uri: 'memory://knowledge-graph' });
    expect(read.contents[0]?.uri).toBe('memory://knowledge-graph');
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
  });

  it('a passed-through call has no deadline of the fence: it runs for as long as its host waits', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let started = false;
    const make = () => {
      const server = new McpServer({ name: 'builds', version: '1.0.0' });
      server.registerTool('build', { inputSchema: {} }, async () => {
        started = true;
        await held;
        return { content: [{ type: 'text', text: 'built' }] };
      });
      server.registerTool('deploy', { inputSchema: { ref: z.string() } }, async () => ({ content: [] }));
      return server;
    };
    const fence = { name: 'builds', tools: { deploy: { kind: 'create', intent: ['ref'] } } };
    const { client } = await hostOfFence({ url: await httpUpstream(make) }, fence);
    // The host waits an hour; past the SDK's default request timeout, the fence must not have given up for it.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    onCleanup(() => vi.useRealTimers());
    const answer = client.callTool({ name: 'build', arguments: {} }, undefined, { timeout: 3_600_000 });
    while (!started) await new Promise((r) => setImmediate(r));
    vi.advanceTimersByTime(2 * DEFAULT_REQUEST_TIMEOUT_MSEC);
    release();
    expect((await answer).content).toEqual([{ type: 'text', text: 'built' }]);
  });

  it('prompts, completions, logging, and a changed tool list (followed, and announced to the host)', async () => {
    const dir = tempDir('retrysafe-extras-');
    const upstream = ['--', process.execPath, ordersServer, '--extras', '--progress-heard'];
    // The SDK client drops progress it reads with the answer: the upstream answers once this host says it heard it.
    const client = await connect(
      process.execPath,
      [bin, 'wrap', '--config', ordersFence(dir, 2000), ...upstream],
      {},
      { capabilities: { roots: { listChanged: true } } },
    );
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(['order_summary']);
    const progress: number[] = [];
    const prompt = await client.getPrompt(
      { name: 'order_summary', arguments: { customer: 'cus_1' } },
      {
        timeout: 20_000, // without the progress, the upstream never answers
        onprogress: (p) => {
          progress.push(p.progress);
          void client.sendRootsListChanged();
        },
      },
    );
    expect(JSON.stringify(prompt.messages)).toContain('cus_1');
    expect(progress).toEqual([1]); // the upstream's progress, under the host's token
    const done = await client.complete({
      ref: { type: 'ref/prompt', name: 'order_summary' },
      argument: { name: 'customer', value: 'cus_' },
    });
    expect(done.completion.values).toEqual(['cus_1', 'cus_2']);
    const logs: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params.data));
    await client.setLoggingLevel('info');
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
    await call(client, 'create_order', { customer: 'cus_l', ref: 'PO-log', sku: 'sku_1', quantity: 1 });
    await call(client, 'enable_refunds', {});
    // The list change is told after the answer (the fence lists the tools again first): waited for, not timed.
    await expect.poll(() => changed).toBeGreaterThan(0);
    await expect.poll(() => logs.length).toBeGreaterThan(0);
    expect(logs).toEqual([expect.stringMatching(/^created ord_/)]);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('refund_order');
    expect((await call(client, 'refund_order', { id: 'ord_1' })).content).toEqual([
      { type: 'text', text: 'refunded ord_1' },
    ]);
  });
});

describe("a fenced tool whose input schema the upstream changes (tools/list_changed, an McpServer's tool.update)", () => {
  /** The host, through the fence, to the tickets server, create_ticket fenced by its title. */
  async function tickets() {
    const dir = tempDir('retrysafe-schema-change-');
    const fence = writeFence(dir, { name: 'tickets', tools: { create_ticket: { kind: 'create', intent: ['title'] } } });
    // through a shell that writes its pid (killAndWait reads it)
    const upstream = ['sh', '-c', 'echo $$ > "$0"; exec "$1" "$2"', join(dir, 'pid'), process.execPath, ticketsServer];
    const client = await wrapped(fence, ['--', ...upstream]);
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
    /** Asks the upstream for its next schema; resolves once the host is told the list changed. */
    const nextSchema = async () => {
      const before = changes;
      await call(client, 'next_schema', {});
      await expect.poll(() => changes).toBeGreaterThan(before);
    };
    const created = async () =>
      ((await call(client, 'list_tickets', {})).structuredContent as { tickets: unknown[] }).tickets.length;
    const listed = async () => (await client.listTools()).tools.find((t) => t.name === 'create_ticket')!;
    return { client, nextSchema, created, listed, dir, changes: () => changes };
  }
  const status = (a: Answer) => a._meta?.retrysafe?.status;

  it('restarted, it lists its first schema again: the host is told the list changed', async () => {
    const { nextSchema, listed, dir, changes } = await tickets();
    await nextSchema();
    expect((await listed()).inputSchema.required).toEqual(['title', 'priority', 'queue']);
    const before = changes();
    await killAndWait(dir);
    await expect.poll(changes).toBeGreaterThan(before);
    expect((await listed()).inputSchema.required).toEqual(['title', 'priority']);
  });

  it('the arguments are checked against the schema it lists now: a call the new one takes is sent, one it refuses is not', async () => {
    const { client, nextSchema, created, listed } = await tickets();
    expect(status(await call(client, 'create_ticket', { title: 'Printer', priority: 'high' }))).toBe('done');
    await nextSchema();
    expect((await listed()).inputSchema.required).toEqual(['title', 'priority', 'queue']);
    const urgent = await call(client, 'create_ticket', { title: 'Outage', priority: 'urgent', queue: 'ops' });
    expect(status(urgent)).toBe('done');
    // Its answer fits the outputSchema listed now (of the same $id as before): given as the upstream gave it.
    expect(urgent.structuredContent).toEqual({ id: 't_2', title: 'Outage', priority: 'urgent', queue: 'ops' });
    // Without the queue the new schema requires: refused before anything is sent, never a tool error handed off.
    const noQueue = await call(client, 'create_ticket', { title: 'Mouse', priority: 'low' });
    expect(status(noQueue)).toBe('invalid-input');
    expect(await created()).toBe(2);
  });

  it('a new schema without an intent argument: the tool is refused (nothing sent) until the fence file names it and the fence restarts', async () => {
    const { client, nextSchema, created, listed } = await tickets();
    await nextSchema();
    expect(status(await call(client, 'create_ticket', { title: 'Outage', priority: 'urgent', queue: 'ops' }))).toBe(
      'done',
    );
    await nextSchema(); // title is renamed subject: the intent the fence file names is no longer an argument
    expect((await listed()).description).toMatch(/refused by retrysafe.*tools\.create_ticket\.intent names title/s);
    for (const args of [
      { subject: 'Outage', priority: 'urgent', queue: 'ops' },
      { title: 'Outage', subject: 'Outage', priority: 'urgent', queue: 'ops' },
    ])
      await expect(call(client, 'create_ticket', args)).rejects.toThrow(/nothing was sent.*restart/s);
    expect(await created()).toBe(1);
  });
});

describe('the upstream environment', () => {
  const secrets = {
    RETRYSAFE_PARAMS_KEYS: 'p1:params-key-of-the-fence-0123456789',
    RETRYSAFE_RECEIPT_KEYS: 'r1:receipt-key-of-the-fence-0123456789',
    RETRYSAFE_MCP_TOKEN: 'bearer-token-of-the-fence-0123456789',
  };
  type Env = Record<string, string | null>;
  /** What the upstream of a fence over the orders server sees of `names`, the wrap process given `wrapEnv`. */
  const echoed = async (names: string[], wrapEnv: Record<string, string>, fenceEnv?: Env) => {
    const client = await wrapped(
      ordersFence(tempDir('retrysafe-env-'), 2000, fenceEnv ? { env: fenceEnv } : {}),
      ['--', process.execPath, ordersServer, '--echo-env', names.join(',')],
      wrapEnv,
    );
    return ((await call(client, 'list_orders', {})).structuredContent as { env: Env }).env;
  };
  // The fence file sets no variable: both tests below read this one upstream's environment.
  const plain = sharedByTests(() =>
    echoed(['ORDERS_TOKEN', ...Object.keys(secrets)], { ORDERS_TOKEN: 'from-host', ...secrets }),
  );

  it('a variable set for the wrap process reaches the upstream; the fence file sets or removes one', async () => {
    const env = (fenceEnv: Env) => echoed(['ORDERS_TOKEN'], { ORDERS_TOKEN: 'from-host' }, fenceEnv);
    const changed = await Promise.all([env({ ORDERS_TOKEN: 'from-fence' }), env({ ORDERS_TOKEN: null })]);
    expect([plain(), ...changed].map((e) => e.ORDERS_TOKEN)).toEqual(['from-host', 'from-fence', null]);
  });

  it("the fence's own secrets (params and receipt keys, its bearer token) do not reach the upstream", () => {
    const names = Object.keys(secrets);
    expect(plain()).toEqual({ ORDERS_TOKEN: 'from-host', ...Object.fromEntries(names.map((name) => [name, null])) });
  });
});
