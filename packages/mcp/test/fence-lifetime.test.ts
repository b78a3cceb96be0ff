/**
 * The fence's own end leaves no upstream running, within the time its host gives it (the official SDK client: 2 s after
 * the end of the fence's stdin, SIGTERM; 2 s later, SIGKILL): server-everything that ignores SIGTERM, kept running by
 * timers of its own (simulated logging, a long operation), so the end of its stdin does not end it. And its restart
 * after a death is a new session, which the hosts are told to list again.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bin, everythingServer, expectStopped, onCleanup, tempDir, wrapped, writeFence } from './child-helpers.js';

const node = process.execPath;
/** Loaded before server-everything: SIGTERM is ignored (a shell's `trap "" TERM` is not: node resets it). */
const IGNORE_TERM = 'data:text/javascript,process.on("SIGTERM",()=>{})';

/** The fence over server-everything that ignores SIGTERM, its pid written to `dir/pid` by the shell that execs it. */
async function fencedEverything(dir: string) {
  const fence = writeFence(dir, { name: 'everything', tools: { echo: { kind: 'create', intent: ['message'] } } });
  const upstream = ['sh', '-c', 'echo $$ > "$0"; exec "$@"', join(dir, 'pid'), node, '--import', IGNORE_TERM];
  return wrapped(fence, ['--', ...upstream, everythingServer]);
}

/** `retrysafe-mcp <args> -- <a stdio server that never answers initialize>` (unless code run `first` does), once that
 * server runs: its pid is written whole to `dir/pid`, the end of its stdin marked by `dir/pid.eof`, and a timer keeps it
 * running after that end. */
async function silentlyStarting(dir: string, args: string[], first = '') {
  const pid = join(dir, 'pid');
  const silent = `${first}const fs = require('node:fs'); fs.writeFileSync('${pid}.tmp', String(process.pid)); fs.renameSync('${pid}.tmp', '${pid}'); process.stdin.on('end', () => fs.writeFileSync('${pid}.eof', '')).resume(); setInterval(() => {}, 1000)`;
  const child = spawn(node, [bin, ...args, '--', node, '-e', silent], { stdio: 'pipe' });
  const exited = once(child, 'exit');
  let said = '';
  child.stderr.on('data', (d) => (said += String(d)));
  onCleanup(() => child.kill('SIGKILL'));
  while (!existsSync(pid)) await new Promise((r) => setTimeout(r, 10));
  // left by a test that failed
  onCleanup(() => {
    try {
      process.kill(Number(readFileSync(pid, 'utf8')), 'SIGKILL');
    } catch {}
  });
  return { child, exited, said: () => said, pid };
}

/** `args` started over a silent upstream and sent `signal` while it starts: its exit code and what it said, once the
 * upstream it started is stopped. */
async function signalledWhileStarting(dir: string, args: string[], signal: NodeJS.Signals, first = '') {
  const { child, exited, said, pid } = await silentlyStarting(dir, args, first);
  child.kill(signal);
  const [code] = await exited;
  await expectStopped(pid);
  return { code, said: said() };
}
const fenceArgs = (dir: string) => [
  'wrap',
  '--config',
  writeFence(dir, { name: 'silent', tools: { echo: { kind: 'create', intent: ['message'] } } }),
];

describe('the fence stops its upstream whatever ends it', () => {
  it('its host closes it (stdin ended, SIGTERM 2 s later) and the upstream ignores SIGTERM: the upstream is killed', async () => {
    const dir = tempDir('retrysafe-lifetime-');
    const client = await fencedEverything(dir);
    await client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
    await client.close();
    await expectStopped(join(dir, 'pid'));
  });

  it('its host closes it with a call under way, past its SIGTERM 2 s later: the upstream that ignores SIGTERM is killed', async () => {
    const dir = tempDir('retrysafe-lifetime-');
    const client = await fencedEverything(dir);
    // silent while it runs: nothing it writes to a fence that is gone ends it
    const long = { name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 1 } };
    void client.callTool(long, undefined, { timeout: 60_000 }).catch(() => undefined);
    await client.ping(); // answered after the call was taken in
    await client.close(); // the call gets its grace, the upstream its own after it: past the host's SIGTERM
    await expectStopped(join(dir, 'pid'));
  });

  it.each([
    ['ends on SIGTERM', ''],
    ['ignores SIGTERM', 'process.on("SIGTERM", () => {}); '],
  ])(
    'signalled while it starts (the upstream not answering yet, and it %s): it ends as when serving (exit 0, no error), and ends the upstream it started',
    async (_, onTerm) => {
      const dir = tempDir('retrysafe-lifetime-');
      expect(await signalledWhileStarting(dir, fenceArgs(dir), 'SIGTERM', onTerm)).toEqual({ code: 0, said: '' });
    },
  );

  it('a probe signalled while it starts: its upstream is ended, and it exits 2 (no verdict), never 0 (at most once)', async () => {
    const probe = ['probe', '--tool', 't', '--count-tool', 'c', '--count-path', 'p'];
    expect(await signalledWhileStarting(tempDir('retrysafe-lifetime-'), probe, 'SIGINT')).toEqual({
      code: 2,
      said: 'retrysafe-mcp probe: stopped by SIGINT: no verdict\n',
    });
  });

  it('a second signal while the first one stops it (SIGINT after SIGTERM) ends it at once, and its upstream with it', async () => {
    const dir = tempDir('retrysafe-lifetime-');
    // The upstream ignores SIGTERM and the end of its stdin: only a kill ends it.
    const { child, exited, pid } = await silentlyStarting(dir, fenceArgs(dir), 'process.on("SIGTERM", () => {}); ');
    child.kill('SIGTERM');
    while (!existsSync(`${pid}.eof`)) await new Promise((r) => setTimeout(r, 10)); // the fence is stopping it
    child.kill('SIGINT');
    const [code, signal] = await exited;
    expect({ code, signal }).toEqual({ code: null, signal: 'SIGINT' });
    await expectStopped(pid);
  });

  it('killed outright (SIGKILL: none of its code runs), its upstream that ignores the end of its stdin is ended too', async () => {
    const dir = tempDir('retrysafe-lifetime-');
    const { child, exited, pid } = await silentlyStarting(dir, fenceArgs(dir));
    child.kill('SIGKILL');
    await exited;
    await expectStopped(pid);
  });

  it('an upstream that refuses its initialize and ignores the end of its stdin: the fence exits 2, the upstream ended', async () => {
    const dir = tempDir('retrysafe-lifetime-');
    const refuse = `require('node:readline').createInterface({ input: process.stdin }).on('line', (l) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(l).id, error: { code: -32603, message: 'not today' } }) + '\\n')); `;
    const { exited, said, pid } = await silentlyStarting(dir, fenceArgs(dir), refuse);
    const [code] = await exited;
    expect({ code, said: said() }).toEqual({ code: 2, said: 'retrysafe-mcp wrap: MCP error -32603: not today\n' });
    await expectStopped(pid);
  });

  it('an upstream that has not answered its initialize within --start-timeout-ms: exit 2 naming the option, the upstream ended', async () => {
    const dir = tempDir('retrysafe-lifetime-');
    const { exited, said, pid } = await silentlyStarting(dir, [...fenceArgs(dir), '--start-timeout-ms', '200']);
    const [code] = await exited;
    expect({ code, said: said() }).toEqual({
      code: 2,
      said: 'retrysafe-mcp wrap: the upstream MCP server did not answer its initialize within 200 ms: a first download (npx -y) may take longer; raise --start-timeout-ms\n',
    });
    await expectStopped(pid);
  });

  it('signalled while an HTTP upstream has not answered its initialize: it ends as when serving (exit 0, no error)', async () => {
    const dir = tempDir('retrysafe-lifetime-');
    const fence = writeFence(dir, { name: 'silent', tools: { echo: { kind: 'create', intent: ['message'] } } });
    const http = createServer(() => undefined).listen(0, '127.0.0.1'); // it takes the request in, and never answers
    await once(http, 'listening');
    onCleanup(() => http.closeAllConnections());
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
    const wrap = spawn(node, [bin, 'wrap', '--config', fence, '--url', url], { stdio: 'pipe' });
    let said = '';
    wrap.stderr.on('data', (d) => (said += String(d)));
    await once(http, 'request');
    wrap.kill('SIGTERM');
    const [code] = await once(wrap, 'exit');
    expect({ code, said }).toEqual({ code: 0, said: '' });
  });

  it('killed and restarted, a new session: its hosts are told to list its resources and prompts again', async () => {
    const dir = tempDir('retrysafe-lifetime-');
    const client = await fencedEverything(dir);
    const told: string[] = [];
    client.fallbackNotificationHandler = async (n) => void told.push(n.method);
    process.kill(Number(readFileSync(join(dir, 'pid'), 'utf8')), 'SIGKILL');
    await expect
      .poll(() => told, { timeout: 20_000 })
      .toEqual(expect.arrayContaining(['notifications/resources/list_changed', 'notifications/prompts/list_changed']));
  });
});
