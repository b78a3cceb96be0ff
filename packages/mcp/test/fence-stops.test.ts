/**
 * How the fence's process ends in front of a supervisor or a terminal: a hang-up stops it as SIGTERM does; a forced
 * stop (a second signal) still ends an HTTP upstream's session, as the spec asks of a client that leaves; and an
 * upstream that cannot be started is a bad setup (exit 2) for `wrap` as for `probe`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { bin, expectStopped, onCleanup, ordersServer, tempDir, writeFence } from './child-helpers.js';

const node = process.execPath;
const fenceFile = (dir: string, tool = 'create_order') =>
  writeFence(dir, { name: 'orders', tools: { [tool]: { kind: 'create', intent: ['ref'] } } });

/** Resolves once `signal` sent to `pid` is no longer pending (Linux: /proc/<pid>/status), i.e. a thread has taken it. */
async function delivered(pid: number, signal: NodeJS.Signals) {
  const bit = 1n << BigInt(osConstants.signals[signal] - 1);
  const pending = (status: string, field: string) => BigInt(`0x${new RegExp(`${field}:\\s*(\\w+)`).exec(status)![1]}`);
  for (;;) {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    if (((pending(status, 'ShdPnd') | pending(status, 'SigPnd')) & bit) === 0n) return;
    await setImmediate();
  }
}

/** `retrysafe-mcp args…` as a child, with a host that writes `messages` to its stdin (JSON-RPC lines). */
function started(args: string[], messages: object[] = []) {
  const child = spawn(node, [bin, ...args], { stdio: 'pipe' });
  onCleanup(() => child.kill('SIGKILL'));
  const exited = once(child, 'exit');
  const clientInfo = { name: 'host', version: '1.0.0' };
  const init = {
    id: 0,
    method: 'initialize',
    params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo },
  };
  for (const m of [init, { method: 'notifications/initialized' }, ...messages])
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...m })}\n`);
  return { child, exited };
}

/** A streamable HTTP upstream with a session that lists one tool, `slow`, and never answers its call: what it was sent. */
async function sessionUpstream() {
  const seen: string[] = [];
  let called: () => void = () => {};
  const call = new Promise<void>((resolve) => (called = resolve));
  const json = (res: ServerResponse, id: unknown, result: object) =>
    res
      .writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' })
      .end(JSON.stringify({ jsonrpc: '2.0', id, result }));
  const http = createServer(async (req: IncomingMessage, res) => {
    let body = '';
    for await (const c of req) body += c;
    const m = body ? (JSON.parse(body) as { id?: unknown; method: string }) : undefined;
    seen.push(`${req.method} ${m?.method ?? ''} ${req.headers['mcp-session-id'] ?? ''}`.trim());
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    if (req.method !== 'POST') return void res.writeHead(405).end();
    if (m?.method === 'initialize')
      return json(res, m.id, {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: { tools: {} },
        serverInfo: { name: 's', version: '1' },
      });
    if (m?.method === 'tools/list')
      return json(res, m.id, {
        tools: [{ name: 'slow', inputSchema: { type: 'object', properties: { ref: { type: 'string' } } } }],
      });
    if (m?.method === 'tools/call') return called(); // never answered
    res.writeHead(202).end();
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  onCleanup(() => http.closeAllConnections());
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, seen, call };
}

describe('the signals a supervisor or a terminal sends', () => {
  it('a hang-up (SIGHUP, its terminal closed) stops wrap as SIGTERM does: exit 0, its upstream stopped', async () => {
    const dir = tempDir('retrysafe-stops-');
    const pid = join(dir, 'pid');
    const { child, exited } = started(
      ['wrap', '--config', fenceFile(dir), '--', node, ordersServer, '--pid-file', pid],
      [{ id: 1, method: 'tools/list' }],
    );
    let out = '';
    child.stdout.on('data', (d) => (out += String(d)));
    while (!out.includes('"id":1')) await new Promise((r) => setTimeout(r, 10)); // serving
    child.kill('SIGHUP');
    const [code, signal] = await exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    await expectStopped(pid);
  });

  it('a host that is gone (its end of our stdout closed) while we answer: it stops in order (exit 0), no EPIPE crash', async () => {
    const dir = tempDir('retrysafe-stops-');
    const pid = join(dir, 'pid');
    const { child, exited } = started([
      'wrap',
      '--config',
      fenceFile(dir),
      '--',
      node,
      ordersServer,
      '--pid-file',
      pid,
    ]);
    let said = '';
    child.stderr.on('data', (d) => (said += String(d)));
    child.stdout.destroy();
    await once(child.stdout, 'close');
    // its answer meets the closed pipe; stdin stays open: a host that cannot read us is gone all the same
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' })}\n`);
    const [code] = await exited;
    expect({ code, said }).toEqual({ code: 0, said: expect.not.stringContaining('EPIPE') });
    await expectStopped(pid);
  });

  it('a forced stop (a second signal) with a call under way still ends the HTTP upstream session (DELETE), then dies by the signal', async () => {
    const dir = tempDir('retrysafe-stops-');
    const upstream = await sessionUpstream();
    const call = { id: 1, method: 'tools/call', params: { name: 'slow', arguments: { ref: 'r1' } } };
    const { child, exited } = started(['wrap', '--config', fenceFile(dir, 'slow'), '--url', upstream.url], [call]);
    await upstream.call;
    // The first stops (the call gets its grace), the second forces. Both pending at once, the kernel may hand them to
    // two of the fence's threads and its loop see SIGTERM first: SIGTERM goes once SIGINT has left the pending set.
    child.kill('SIGINT');
    await delivered(child.pid!, 'SIGINT');
    child.kill('SIGTERM');
    const [code, signal] = await exited;
    expect({ code, signal }).toEqual({ code: null, signal: 'SIGTERM' });
    expect(upstream.seen).toContain('DELETE  s1');
  });
});

describe('a host message too long for the SDK to read on stdio', () => {
  it('ends the fence as a host that leaves does (exit 0, its upstream stopped): nothing after it could be read', async () => {
    const dir = tempDir('retrysafe-stops-');
    const pid = join(dir, 'pid');
    const too = { ref: 'x'.repeat(STDIO_DEFAULT_MAX_BUFFER_SIZE) };
    const call = { id: 1, method: 'tools/call', params: { name: 'create_order', arguments: too } };
    const wrap = ['wrap', '--config', fenceFile(dir), '--', node, ordersServer, '--pid-file', pid];
    // The host keeps our stdin open, as one waiting for the answer does: the fence, now deaf, must not wait for it.
    const { exited } = started(wrap, [call]);
    expect((await exited)[0]).toBe(0);
    await expectStopped(pid);
  }, 20_000);
});

describe('a stop under way', () => {
  it('an upstream that dies during its grace is not started again only to be stopped', async () => {
    const dir = tempDir('retrysafe-stops-');
    const [pid, store, starts] = [join(dir, 'pid'), join(dir, 'orders.json'), join(dir, 'starts')];
    const order = { customer: 'cus_1', ref: 'PO-1', sku: 'sku_1', quantity: 1 };
    const call = { id: 1, method: 'tools/call', params: { name: 'create_order', arguments: order } };
    // Each start is counted as it is spawned, before node has loaded anything.
    const server = `${node} ${ordersServer} --pid-file ${pid} --store ${store} --reply-delay-ms 60000`;
    const upstream = ['/bin/sh', '-c', `echo start >> ${starts}; exec ${server}`];
    const { child, exited } = started(['wrap', '--config', fenceFile(dir), '--', ...upstream], [call]);
    while (!existsSync(store)) await new Promise((r) => setTimeout(r, 10)); // the upstream holds the call
    child.stdin.end(); // the host leaves: the call under way gets its grace
    process.kill(Number(readFileSync(pid, 'utf8')), 'SIGKILL');
    expect((await exited)[0]).toBe(0);
    expect(readFileSync(starts, 'utf8')).toBe('start\n');
  });
});

// probe's 2 for these (bin.test), and wrap's for an upstream that refuses its initialize (fence-lifetime), are tested there.
it('an upstream that exits at start, or whose URL cannot be reached, is a bad setup: wrap exits 2, as probe does', async () => {
  const closed = createServer().listen(0, '127.0.0.1');
  await once(closed, 'listening');
  const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/mcp`;
  await new Promise((ok) => closed.close(ok));
  const wrap = ['wrap', '--config', fenceFile(tempDir('retrysafe-stops-'))];
  for (const [server, said] of [
    [['--', node, '-e', 'process.exit(7)'], /exited with code 7 at start-up/],
    [['--url', url], /URL cannot be reached/],
  ] as const) {
    const r = spawnSync(node, [bin, ...wrap, ...server], { encoding: 'utf8', timeout: 20_000 });
    expect(r.stderr).toMatch(said);
    expect(r.status).toBe(2);
  }
});
