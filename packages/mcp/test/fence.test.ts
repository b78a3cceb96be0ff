/**
 * Fencing someone else's MCP server (issue 22). The upstream is a real MCP server written for the purpose
 * (test/fixtures/orders-server.mjs: create_order has no idempotency guard); the host is the real MCP client;
 * the fence is `retrysafe-mcp wrap` as a child process. Faults: the upstream commits and then answers late
 * (the fence's upstream call times out: response lost between proxy and upstream), and the host times out
 * and re-issues its call with a new call id and re-ordered arguments (response lost between host and proxy).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { UnknownOperationError } from '@retrysafe/contract';
import { describe, expect, it } from 'vitest';
import {
  createFenceAdapter,
  FenceConfigError,
  type ProbeReceipt,
  parseFenceConfig,
  runProbe,
  UNFENCED_NOTE,
} from '../src/index.js';
import {
  type Answer,
  bin,
  connect,
  onCleanup,
  ordersServer,
  ordersTool,
  sharedByTests,
  tempDir,
  wrapped,
  writeJson,
} from './fence-helpers.js';

function fenceFile(overrides: Record<string, unknown> = {}, tool: Record<string, unknown> = {}): string {
  const dir = tempDir('retrysafe-fence-');
  const file = writeJson(dir, 'fence.json', {
    name: 'orders',
    ledger: './fence.db',
    handoffs: './handoffs.jsonl',
    timeoutMs: 250,
    policy: { lookupWindowMs: 3000, waitForOtherMs: 8000, baseMs: 10, capMs: 50 },
    tools: { create_order: { ...ordersTool(), ...tool } },
    ...overrides,
  });
  return file;
}

/** An order as the orders server's `list_orders` answers it. */
type Order = { id: string; customer: string; ref: string; sku: string; quantity: number };

const orders = async (client: Client, customer?: string) =>
  (
    (await client.callTool({ name: 'list_orders', arguments: customer ? { customer } : {} })).structuredContent as {
      orders: Order[];
    }
  ).orders;

/** The agent's pattern: call; on a timeout or "in-progress", call again (new call id, re-formatted args), bounded. */
async function agentCalls(
  client: Client,
  args: Record<string, unknown>,
  reformat: (a: Record<string, unknown>) => Record<string, unknown>,
  hostTimeoutMs: number,
) {
  const seen: string[] = [];
  let current = args;
  for (let i = 0; i < 20; i++) {
    try {
      const a = (await client.callTool({ name: 'create_order', arguments: current }, undefined, {
        timeout: hostTimeoutMs,
      })) as Answer;
      const status = a._meta?.retrysafe?.status ?? (a.isError ? 'error' : 'done');
      seen.push(status);
      if (status !== 'in-progress') return { answer: a, seen };
    } catch (e) {
      seen.push((e as { code?: number }).code === -32001 ? 'host-timeout' : 'error');
    }
    current = reformat(current);
    hostTimeoutMs = Math.max(hostTimeoutMs, 10_000); // after the first loss the agent waits longer
  }
  throw new Error(`no final answer: ${seen.join(', ')}`);
}
const reorder = (a: Record<string, unknown>) => Object.fromEntries(Object.entries(a).reverse());

describe('fence file', () => {
  it('refuses unknown keys with the nearest known one, and bad values, naming the path', () => {
    const base = JSON.parse(readFileSync(fenceFile(), 'utf8')) as Record<string, unknown>;
    expect(() => parseFenceConfig({ ...base, ledgr: 'x.db' })).toThrow(
      /ledgr: unknown key \(did you mean "ledger"\?\)/,
    );
    const tool = (t: Record<string, unknown>) => ({
      ...base,
      tools: { create_order: { kind: 'create', intent: ['ref'], ...t } },
    });
    expect(() => parseFenceConfig(tool({ intnet: ['x'] }))).toThrow(
      /tools\.create_order\.intnet: unknown key \(did you mean "intent"\?\)/,
    );
    expect(() => parseFenceConfig(tool({ kind: 'explode' }))).toThrow(/tools\.create_order\.kind: expected one of/);
    expect(() => parseFenceConfig(tool({ intent: [] }))).toThrow(/tools\.create_order\.intent: needs at least 1 item/);
    expect(() => parseFenceConfig(tool({ key: { argument: 'k', retention: 'a day' } }))).toThrow(
      /key\.retention: the value does not have the expected form \(a duration/,
    );
    expect(() => parseFenceConfig(tool({ rejectWhen: ['('] }))).toThrow(/not a valid regular expression/);
    // A duration a card accepts (a fraction of a unit) is one the fence file accepts too.
    const fraction = parseFenceConfig(tool({ key: { argument: 'k', retention: '1.5h' } }));
    expect(fraction.tools.create_order?.key?.retention).toBe('1.5h');
    expect(() => parseFenceConfig({ ...base, tools: {} })).toThrow(FenceConfigError);
    expect(() => parseFenceConfig(tool({ intent: ['ref', 'request_id'], key: { argument: 'request_id' } }))).toThrow(
      /intent cannot name the key argument request_id/,
    );
    expect(() => parseFenceConfig({ ...base, env: { TOKEN: 3 } })).toThrow(/env\.TOKEN: expected string or null/);
  });

  it('refuses a credential written in it, as the config file does, never repeating it', () => {
    const base = JSON.parse(readFileSync(fenceFile(), 'utf8')) as Record<string, unknown>;
    const token = `ghp_${'a1B2'.repeat(9)}`;
    const refused = (raw: Record<string, unknown>, path: RegExp) => {
      expect(() => parseFenceConfig(raw)).toThrow(FenceConfigError);
      expect(() => parseFenceConfig(raw)).toThrow(path);
      expect(() => parseFenceConfig(raw)).not.toThrow(/hunter2|a1B2/);
    };
    refused({ ...base, ledger: 'postgres://fence:hunter2@db.internal/ledger' }, /ledger: the URL carries a password/);
    refused({ ...base, env: { GITHUB_TOKEN: token, DEBUG: null } }, /env\.GITHUB_TOKEN: looks like a credential/);
    const tools = base.tools as Record<string, Record<string, unknown>>;
    const lookup = { ...tools.create_order!.lookup!, arguments: { customer: '{{customer}}', auth: token } };
    refused({ ...base, tools: { create_order: { ...tools.create_order, lookup } } }, /lookup\.arguments\.auth/);
    // A setting, a variable removed, a user name in a PostgreSQL URL and templates hold no credential.
    const env = { ORDERS_LOG_LEVEL: 'debug', GITHUB_TOKEN: null, API_KEY_FILE: '/run/secrets/orders' };
    expect(() => parseFenceConfig({ ...base, env, ledger: 'postgres://fence@db.internal/ledger' })).not.toThrow();
  });

  // MCP 2025-11-25, Tools, "Tool Names": 1–128 of A-Z a-z 0-9 _ - . (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-names).
  it('a tool whose name the MCP spec does not allow is refused at start, not on every call; every name it allows is fenced', () => {
    const base = JSON.parse(readFileSync(fenceFile(), 'utf8')) as Record<string, unknown>;
    const named = (name: string) => ({ ...base, tools: { [name]: { kind: 'create', intent: ['ref'] } } });
    for (const name of ['github:create_issue', 'repo/create', 'créer', 'create order', 'a,b', '', 'x'.repeat(161)])
      expect(() => parseFenceConfig(named(name)), name).toThrow(FenceConfigError);
    expect(() => parseFenceConfig(named('github:create_issue'))).toThrow(
      /tools\.github:create_issue: .*business operation/,
    );
    for (const name of ['create_order', 'create-issue', 'issues.create', 'x'.repeat(160)])
      expect(() => parseFenceConfig(named(name)), name).not.toThrow();
    for (const name of ['2fa_enable', 'DATA_EXPORT_v2', '_private', '-x', '.hidden', 'a..b', 'v2.', '.', '0'])
      expect(() => parseFenceConfig(named(name)), name).not.toThrow();
    // Allowed by MCP, but every call would miss its operation: refused at start, saying so.
    expect(() => parseFenceConfig(JSON.parse(JSON.stringify(named('x')).replace('"x"', '"__proto__"')))).toThrow(
      /tools\.__proto__: cannot be fenced/,
    );
  });

  it('a fenced tool the upstream does not list is refused at start, with the tools it has', () => {
    const config = parseFenceConfig(JSON.parse(readFileSync(fenceFile(), 'utf8')));
    const client = { callTool: async () => ({}) };
    const e = (() => {
      try {
        createFenceAdapter({ config, client, tools: [{ name: 'list_orders', inputSchema: { type: 'object' } }] });
      } catch (x) {
        return x;
      }
    })();
    expect(UnknownOperationError.isInstance(e)).toBe(true);
    expect(String((e as Error).message)).toMatch(/create_order/);
  });

  it('undeclared facts are unknown on the card and listed as unverified', () => {
    const config = parseFenceConfig(
      JSON.parse(readFileSync(fenceFile({}, { key: { argument: 'idempotency_key' }, lookup: undefined }), 'utf8')),
    );
    const adapter = createFenceAdapter({
      config,
      client: { callTool: async () => ({}) },
      tools: [
        { name: 'create_order', inputSchema: { type: 'object' } },
        { name: 'list_orders', inputSchema: { type: 'object' } },
      ],
    });
    const card = adapter.operations.create_order!.card;
    expect(card.providerKey.travels.value).toBe('body');
    expect(card.storedResult.semantics.value).toBe('unknown');
    expect(card.retention.minimum.value).toBe('unknown');
    expect(card.unverified.map((u) => u.field).sort()).toEqual([
      'concurrency',
      'parameterMatching',
      'retention.minimum',
      'storedResult.includesErrors',
      'storedResult.semantics',
    ]);
    // with a lookup, how late the upstream may still apply a call is unknown until declared
    const withLookup = createFenceAdapter({
      config: parseFenceConfig(JSON.parse(readFileSync(fenceFile(), 'utf8'))),
      client: { callTool: async () => ({}) },
      tools: [
        { name: 'create_order', inputSchema: { type: 'object' } },
        { name: 'list_orders', inputSchema: { type: 'object' } },
      ],
    });
    expect(withLookup.operations.create_order!.card.lookup.lateApplyBound?.value).toBe('unknown');
    expect(withLookup.operations.create_order!.card.unverified.map((u) => u.field)).toContain('lookup.lateApplyBound');
    const declared = createFenceAdapter({
      config: parseFenceConfig(
        JSON.parse(
          readFileSync(
            fenceFile(
              {},
              {
                lookup: {
                  tool: 'list_orders',
                  items: 'orders',
                  match: { customer: 'customer', ref: 'ref' },
                  consistencyDelay: 0,
                  lateApplyBound: '2s',
                },
              },
            ),
            'utf8',
          ),
        ),
      ),
      client: { callTool: async () => ({}) },
      tools: [
        { name: 'create_order', inputSchema: { type: 'object' } },
        { name: 'list_orders', inputSchema: { type: 'object' } },
      ],
    });
    expect(declared.operations.create_order!.card.lookup.lateApplyBound?.value).toBe('2s');
  });
});

describe('retrysafe-mcp wrap', () => {
  // The fence the tests below without a delay share: each has customers of its own.
  const shared = sharedByTests(() => wrapped(fenceFile(), ['--', process.execPath, ordersServer]));

  it('lists the upstream tools: fenced ones say so, the others are marked as passing through unchanged', async () => {
    const client = shared();
    const { tools } = await client.listTools();
    const create = tools.find((t) => t.name === 'create_order')!;
    const list = tools.find((t) => t.name === 'list_orders')!;
    expect(create.description).toMatch(/\[fenced by retrysafe\]/);
    expect(create.description).toMatch(/customer, ref/);
    expect(create.annotations?.idempotentHint).toBe(true);
    expect((create._meta as { retrysafe?: { fenced?: boolean } }).retrysafe?.fenced).toBe(true);
    expect(list.description?.startsWith(UNFENCED_NOTE)).toBe(true);
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['retrysafe_status', 'retrysafe_handoffs']));
  });

  it('a lost answer on both hops, a re-issued call with a new call id and re-ordered arguments: exactly one order (unwrapped: two)', async () => {
    const ref = `PO-${randomBytes(3).toString('hex')}`;
    const args = { customer: 'cus_1', ref, sku: 'sku_9', quantity: 2 };
    // Unwrapped control: the host times out while the server still commits; its re-issued call is a second order.
    const direct = await connect(process.execPath, [ordersServer, '--reply-delay-ms', '600']);
    const control = await agentCalls(direct, args, reorder, 150);
    expect(control.seen[0]).toBe('host-timeout');
    expect((await orders(direct, 'cus_1')).filter((o) => o.ref === ref)).toHaveLength(2);

    // Wrapped: the upstream answers after the fence's 250 ms timeout (unknown → lookup → adopted), and the host
    // gives up at 150 ms and re-issues.
    const client = await wrapped(fenceFile(), ['--', process.execPath, ordersServer, '--reply-delay-ms', '600']);
    const { answer, seen } = await agentCalls(client, args, reorder, 150);
    expect(seen[0]).toBe('host-timeout');
    expect(answer.isError).toBeFalsy();
    expect(answer._meta?.retrysafe?.status).toBe('done');
    const made = (await orders(client, 'cus_1')).filter((o) => o.ref === ref);
    expect(made).toHaveLength(1);
    expect((answer.structuredContent as Order).id).toBe(made[0]!.id);
  });

  it('a tool error the fence file calls a rejection is not retried: one call upstream, a needs-human answer', async () => {
    const client = shared();
    const a = (await client.callTool({
      name: 'create_order',
      arguments: { customer: 'cus_2', ref: 'PO-bad', sku: 'no-such', quantity: 1 },
    })) as Answer;
    expect(a.isError).toBe(true);
    expect(a._meta?.retrysafe?.status).toBe('needs-human');
    expect(await orders(client, 'cus_2')).toHaveLength(0);
  });

  it("arguments the upstream tool's input schema refuses are refused before anything is claimed or sent", async () => {
    const client = shared();
    const a = (await client.callTool({
      name: 'create_order',
      arguments: { customer: 'cus_4', ref: 'PO-typo', sku: 'sku_1', quantity: '3' },
    })) as Answer;
    expect(a.isError).toBe(true);
    expect(a._meta?.retrysafe?.status).toBe('invalid-input');
    expect(JSON.stringify(a.content)).toMatch(/quantity/);
    expect(await orders(client, 'cus_4')).toHaveLength(0);
    // the corrected call is not a conflict: nothing was claimed for the typo
    const fixed = (await client.callTool({
      name: 'create_order',
      arguments: { customer: 'cus_4', ref: 'PO-typo', sku: 'sku_1', quantity: 3 },
    })) as Answer;
    expect(fixed._meta?.retrysafe?.status).toBe('done');
    expect(await orders(client, 'cus_4')).toHaveLength(1);
  });

  it('a tool with unknown facts gets no blind re-send: no lookup, no key, the answer lost ⇒ a handoff and one order', async () => {
    const file = fenceFile({}, { lookup: undefined });
    const client = await wrapped(file, [
      '--',
      process.execPath,
      ordersServer,
      '--reply-delay-ms',
      '600',
      '--say-answered',
    ]);
    // the upstream logs this right after its late answer: once the host has it, the fence has read that answer
    const answered = new Promise<void>((resolve) =>
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
        if (String(n.params.data).startsWith('answered ')) resolve();
      }),
    );
    const ref = `PO-${randomBytes(3).toString('hex')}`;
    const a = (await client.callTool(
      { name: 'create_order', arguments: { customer: 'cus_3', ref, sku: 'sku_1', quantity: 1 } },
      undefined,
      { timeout: 20_000 },
    )) as Answer;
    expect(a._meta?.retrysafe?.status).toBe('needs-human');
    await answered;
    expect((await orders(client, 'cus_3')).filter((o) => o.ref === ref)).toHaveLength(1);
    const again = (await client.callTool({
      name: 'create_order',
      arguments: { ref, customer: 'cus_3', sku: 'sku_1', quantity: 1 },
    })) as Answer;
    expect(again._meta?.retrysafe?.status).toBe('needs-human');
    expect((await orders(client, 'cus_3')).filter((o) => o.ref === ref)).toHaveLength(1);
  });
});

describe('ids never come from the model', () => {
  it('the key argument is the fence\'s: hidden from the listing, a fresh or "null" one from the model neither splits nor merges operations', async () => {
    const file = fenceFile({}, { key: { argument: 'request_id' } });
    const client = await wrapped(file, ['--', process.execPath, ordersServer, '--request-id']);
    const create = (await client.listTools()).tools.find((t) => t.name === 'create_order')!;
    expect(Object.keys(create.inputSchema.properties ?? {})).not.toContain('request_id');
    const ref = `PO-${randomBytes(3).toString('hex')}`;
    const args = { customer: 'cus_id', ref, sku: 'sku_1', quantity: 1 };
    const a = (await client.callTool({
      name: 'create_order',
      arguments: { ...args, request_id: 'attempt-1' },
    })) as Answer;
    const b = (await client.callTool({
      name: 'create_order',
      arguments: { ...args, request_id: 'attempt-2' },
    })) as Answer;
    expect(a._meta?.retrysafe?.status).toBe('done');
    expect(b._meta?.retrysafe).toMatchObject({
      status: 'done',
      businessOperationId: a._meta?.retrysafe?.businessOperationId,
    });
    const c = (await client.callTool({
      name: 'create_order',
      arguments: { ...args, ref: `${ref}-2`, request_id: 'null' },
    })) as Answer;
    const d = (await client.callTool({
      name: 'create_order',
      arguments: { ...args, ref: `${ref}-3`, request_id: 'null' },
    })) as Answer;
    expect(c._meta?.retrysafe?.businessOperationId).not.toBe(d._meta?.retrysafe?.businessOperationId);
    const made = (await orders(client, 'cus_id')) as (Order & { requestId?: string })[];
    expect(made.map((o) => o.ref).sort()).toEqual([ref, `${ref}-2`, `${ref}-3`]);
    // the upstream got the fence's key, derived from the intent, never the model's
    for (const o of made) expect(o.requestId).toMatch(/^rs-/);
  });
});

describe('a corrected call after a tool error, where the upstream keeps its answers by the key', () => {
  it('goes out under a key of its own: the stored error is not given back as the answer to the correction', async () => {
    const file = fenceFile({}, { key: { argument: 'request_id' } });
    const upstream = [process.execPath, ordersServer, '--request-id', '--replays-by-request-id'];
    const client = await wrapped(file, ['--', ...upstream]);
    const ref = `PO-${randomBytes(3).toString('hex')}`;
    const call = (sku: string) =>
      client.callTool({ name: 'create_order', arguments: { customer: 'cus_fix', ref, sku, quantity: 1 } });
    const bad = (await call('no-such')) as Answer;
    expect(bad._meta?.retrysafe?.status).toBe('needs-human');
    const fixed = (await call('sku_1')) as Answer;
    expect(fixed._meta?.retrysafe).toMatchObject({
      status: 'done',
      businessOperationId: bad._meta?.retrysafe?.businessOperationId,
    });
    expect((await orders(client, 'cus_fix')).map((o) => o.sku)).toEqual(['sku_1']);
  });
});

describe('retrysafe probe', () => {
  const probe = async (upstream: string[]) => {
    const dir = tempDir('retrysafe-probe-');
    const receiptFile = join(dir, 'probe.json');
    const lines: string[] = [];
    const ref = `PO-${randomBytes(3).toString('hex')}`;
    const { exit: code } = await runProbe(
      [
        '--tool',
        'create_order',
        '--args',
        JSON.stringify({ customer: 'cus_p', ref, sku: 'sku_1', quantity: 1 }),
        '--count-tool',
        'list_orders',
        '--count-path',
        'orders',
        '--match',
        JSON.stringify({ ref }),
        '--timeout-ms',
        '150',
        '--settle-ms',
        '800',
        '--receipt',
        receiptFile,
        '--',
        ...upstream,
      ],
      (l) => lines.push(l),
    );
    return { code, lines, receipt: JSON.parse(readFileSync(receiptFile, 'utf8')) as ProbeReceipt, ref };
  };

  it('unfenced: reports the duplicates (exit 1) and writes a receipt without the arguments', async () => {
    const r = await probe([process.execPath, ordersServer, '--reply-delay-ms', '400']);
    expect(r.code).toBe(1);
    expect(r.receipt.verdict).toBe('duplicates');
    expect(r.receipt.effects).toBeGreaterThan(1);
    expect(r.lines[0]).toMatch(/^DUPLICATES: \d+ effects for one intent/);
    expect(JSON.stringify(r.receipt)).not.toContain(r.ref);
    expect(r.receipt.calls.map((c) => c.phase)).toEqual([
      'concurrent',
      'concurrent',
      'concurrent',
      'timed-out',
      're-issued',
    ]);
  });

  it('the same server fenced: one effect (exit 0)', async () => {
    const r = await probe([
      process.execPath,
      bin,
      'wrap',
      '--config',
      fenceFile(),
      '--',
      process.execPath,
      ordersServer,
      '--reply-delay-ms',
      '400',
    ]);
    expect(r.receipt.verdict).toBe('at-most-once');
    expect(r.receipt.effects).toBe(1);
    expect(r.code).toBe(0);
  });

  it.runIf(process.platform === 'linux')(
    'a receipt that cannot be written once the calls ran (a full disk) is named',
    async () => {
      const args = [
        '--tool',
        'create_order',
        '--args',
        JSON.stringify({ customer: 'cus_f', ref: 'PO-full', sku: 's' }),
      ];
      const count = ['--count-tool', 'list_orders', '--count-path', 'orders', '--settle-ms', '0'];
      const probing = runProbe(
        [...args, ...count, '--receipt', '/dev/full', '--', process.execPath, ordersServer],
        () => {},
      );
      await expect(probing).rejects.toThrow('--receipt /dev/full: cannot write it: no space left on device (ENOSPC)');
    },
  );
});

describe('shared state: two fence processes on one PostgreSQL ledger behind one upstream', () => {
  it('a retry that lands on the other proxy gets the same operation and the same stored result', async () => {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('DATABASE_URL is not set: this test needs the PostgreSQL that .ci/test-env.sh starts');
    const upstream: ChildProcess = spawn(process.execPath, [ordersServer, '--http', '0', '--reply-delay-ms', '600'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    onCleanup(() => upstream.kill());
    const upstreamUrl = await new Promise<string>((resolve, reject) => {
      let err = '';
      upstream.stderr!.on('data', (d) => {
        err += String(d);
        const m = /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(err);
        if (m) resolve(m[1]!);
      });
      upstream.on('exit', () => reject(new Error(`orders server exited: ${err}`)));
    });
    const file = fenceFile({ ledger: url });
    const a = await wrapped(file, ['--url', upstreamUrl]);
    const b = await wrapped(file, ['--url', upstreamUrl]);
    const ref = `PO-${randomBytes(3).toString('hex')}`;
    const args = { customer: 'cus_pg', ref, sku: 'sku_1', quantity: 1 };
    // The host's call through proxy A times out on the host; the host re-issues it through proxy B.
    await expect(
      a.callTool({ name: 'create_order', arguments: args }, undefined, { timeout: 150 }),
    ).rejects.toMatchObject({ code: -32001 });
    const viaB = await agentCalls(b, reorder(args), reorder, 20_000);
    const viaA = await agentCalls(a, args, reorder, 20_000);
    expect(viaB.answer._meta?.retrysafe?.status).toBe('done');
    expect(viaA.answer._meta?.retrysafe?.businessOperationId).toBe(viaB.answer._meta?.retrysafe?.businessOperationId);
    expect(viaA.answer.structuredContent).toEqual(viaB.answer.structuredContent);
    expect((await orders(a, 'cus_pg')).filter((o) => o.ref === ref)).toHaveLength(1);
  });
});
