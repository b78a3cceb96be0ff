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
import { bin, everythingServer, expectStopped, onCleanup, tempDir, wrapped, writeFence } from './fence-helpers.js';

const node = process.execPath;
/** Loaded before server-everything: SIGTERM is ignored (a shell's `trap "" TERM` is not: node resets it). */
const IGNORE_TERM = 'data:text/javascript,process.on("SIGTERM",()=>{})';

/** The fence over server-everything that ignores SIGTERM, its pid written to `dir/pid` by the shell that execs it. */
async function fencedEverything(dir: string) {
  const fence = writeFence(dir, { name: 'everything', tools: { echo: { kind: 'create', intent: ['message'] } } });
  const upstream = ['sh', '-c', 'echo $$ > "$0"; exec "$@"', join(dir, 'pid'), node, '--import', IGNORE_TERM];
  return wrapped(fence, ['--', ...upstream, everythingServer]);
}

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
      const fence = writeFence(dir, { name: 'silent', tools: { echo: { kind: 'create', intent: ['message'] } } });
      const pid = join(dir, 'pid');
      // It never answers initialize, and its timer keeps it running after its stdin ends; its pid appears whole.
      const silent = `${onTerm}const fs = require('node:fs'); fs.writeFileSync('${pid}.tmp', String(process.pid)); fs.renameSync('${pid}.tmp', '${pid}'); setInterval(() => {}, 1000)`;
      const wrap = spawn(node, [bin, 'wrap', '--config', fence, '--', node, '-e', silent], { stdio: 'pipe' });
      let said = '';
      wrap.stderr.on('data', (d) => (said += String(d)));
      while (!existsSync(pid)) await new Promise((r) => setTimeout(r, 10));
      wrap.kill('SIGTERM');
      const [code] = await once(wrap, 'exit');
      await expectStopped(pid);
      expect({ code, said }).toEqual({ code: 0, said: '' });
    },
  );

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
