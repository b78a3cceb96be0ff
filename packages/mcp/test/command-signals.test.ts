/**
 * The commands in process: a SIGTERM or SIGINT, while they start or serve, has them stop what they started and return
 * their exit code (only the bin exits), and their signal listeners go with them on every path.
 */
import { copyFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runServe, runWrap } from '../src/commands.js';
import { runProbe } from '../src/probe.js';
import { expectStopped, onCleanup, ordersServer, tempDir, writeFence } from './fence-helpers.js';

const listeners = () => ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'].map((s) => process.listenerCount(s));

/** The docs' HTTP API example, served with --http. */
function serveExample(log: (line: string) => void) {
  const example = fileURLToPath(new URL('../../config/examples/http-api/', import.meta.url));
  const dir = tempDir('retrysafe-serve-signal-');
  for (const f of readdirSync(example)) copyFileSync(join(example, f), join(dir, f));
  process.env.ACME_AUTH = 'Bearer test';
  onCleanup(() => delete process.env.ACME_AUTH);
  return runServe(['--config', join(dir, 'retrysafe.yaml'), '--http'], log);
}

describe('a signalled command returns 0 and leaves no listener behind', () => {
  it('serve, signalled while it starts, and while it serves', async () => {
    const before = listeners();
    const starting = serveExample(() => {});
    process.emit('SIGTERM', 'SIGTERM');
    expect(await starting).toBe(0);
    let served: () => void = () => {};
    const serving = serveExample(() => served());
    await new Promise<void>((resolve) => (served = resolve));
    process.emit('SIGINT', 'SIGINT');
    expect(await serving).toBe(0);
    expect(listeners()).toEqual(before);
  });

  // A terminal that closes hangs up; a supervisor may stop with SIGQUIT (supervisord's stopsignal, nginx's graceful quit).
  it.each(['SIGHUP', 'SIGQUIT'] as const)('serve, stopped by %s while it serves, as by SIGTERM', async (signal) => {
    const before = listeners();
    let served: () => void = () => {};
    const serving = serveExample(() => served());
    await new Promise<void>((resolve) => (served = resolve));
    expect(process.listenerCount(signal)).toBe(1); // else the signal's default would end the process, nothing stopped
    process.emit(signal, signal);
    expect(await serving).toBe(0);
    expect(listeners()).toEqual(before);
  });

  it('wrap, signalled while its upstream starts: the upstream is stopped', async () => {
    const before = listeners();
    const dir = tempDir('retrysafe-wrap-signal-');
    const pid = join(dir, 'pid');
    const fence = writeFence(dir, { name: 'orders', tools: { create_order: { kind: 'create', intent: ['ref'] } } });
    const argv = ['--config', fence, '--http', '--', process.execPath, ordersServer, '--pid-file', pid];
    const wrap = runWrap(argv, () => {});
    while (!existsSync(pid)) await new Promise((r) => setTimeout(r, 10));
    process.emit('SIGTERM', 'SIGTERM');
    expect(await wrap).toBe(0);
    await expectStopped(pid);
    expect(listeners()).toEqual(before);
  });

  it('wrap that cannot start (a ledger it cannot open): the error, and no listener left', async () => {
    const before = listeners();
    const dir = tempDir('retrysafe-wrap-signal-');
    const fence = writeFence(dir, {
      name: 'orders',
      ledger: './no-such-dir/fence.db',
      tools: { create_order: { kind: 'create', intent: ['ref'] } },
    });
    await expect(runWrap(['--config', fence, '--', process.execPath, ordersServer], () => {})).rejects.toMatchObject({
      code: 'RETRYSAFE_CONFIG',
    });
    expect(listeners()).toEqual(before);
  });

  it('probe, signalled while it waits for late effects: its server stopped, no verdict (an error, never exit 0)', async () => {
    const before = listeners();
    const dir = tempDir('retrysafe-probe-signal-');
    const [pid, store] = [join(dir, 'pid'), join(dir, 'orders.json')];
    const args = JSON.stringify({ customer: 'cus_s', ref: 'PO-s', sku: 'sku_1', quantity: 1 });
    const probing = runProbe(
      [
        ...['--tool', 'create_order', '--args', args, '--count-tool', 'list_orders', '--count-path', 'orders'],
        ...['--settle-ms', '600000', '--', process.execPath, ordersServer, '--store', store, '--pid-file', pid],
      ],
      () => {},
    );
    // its calls are made once the orders are stored: its wait for late effects comes after them
    while (!(existsSync(store) && readFileSync(store, 'utf8').split('PO-s').length > 5))
      await new Promise((r) => setTimeout(r, 20));
    process.emit('SIGINT', 'SIGINT');
    await expect(probing).rejects.toThrow('stopped by SIGINT: no verdict');
    await expectStopped(pid);
    expect(listeners()).toEqual(before);
  });
});
