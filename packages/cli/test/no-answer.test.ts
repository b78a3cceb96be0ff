/**
 * A call that gets no answer, through every built-in adapter's real SDK: a refused connection was never sent, a
 * reset or a close after the request arrived may have been applied, and every adapter says so the same way.
 */
import { once } from 'node:events';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { asBusinessOperationId } from '@retrysafe/contract';
import { executeContext } from '@retrysafe/testkit/conformance';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAdapters } from '../src/registry.js';

type Mode = 'reset' | 'close' | 'stall';
let mode: Mode = 'reset';
const sockets = new Set<Socket>();
// Answers nothing: once a whole request has arrived, it resets the connection, closes it, or holds it.
const server = createServer((socket) => {
  sockets.add(socket);
  socket.on('error', () => {});
  let seen = '';
  socket.on('data', (chunk) => {
    seen += chunk.toString('latin1');
    const end = seen.indexOf('\r\n\r\n');
    const length = Number(/content-length:\s*(\d+)/i.exec(seen.slice(0, end))?.[1] ?? 0);
    if (end < 0 || seen.length - end - 4 < length) return;
    if (mode === 'reset') socket.resetAndDestroy();
    else if (mode === 'close') socket.end();
  });
});
let live = '';
let refused = '';

beforeAll(async () => {
  await once(server.listen(0, '127.0.0.1'), 'listening');
  live = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const closed = createServer();
  await once(closed.listen(0, '127.0.0.1'), 'listening');
  refused = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
  await new Promise((r) => closed.close(r));
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
});

// Resend's SDK catches every fetch error and answers `statusCode: null` alone: it is unknown whatever happened
// (docs/adapters/resend.md).
const entries = (await loadAdapters()).filter((e) => e.name !== 'resend');

async function callThrough(name: string, baseUrl: string, timeoutMs = 5_000) {
  const drill = entries.find((e) => e.name === name)!.drills[0]!;
  const adapter = await drill.createAdapter({ baseUrl, timeoutMs });
  const [op, spec] = Object.entries(drill.operations)[0]!;
  try {
    return await adapter.doExecute(op, spec.params(1), executeContext(adapter, op, asBusinessOperationId(`${name}-1`)));
  } finally {
    await adapter.close?.();
  }
}

describe.each(entries.map((e) => e.name))('%s through its SDK', (name) => {
  it('refused ⇒ not-applied, never sent, with the code', async () => {
    expect(await callThrough(name, refused)).toMatchObject({
      kind: 'not-applied',
      neverSent: true,
      code: 'ECONNREFUSED',
    });
  });
  it.each<Mode>(['reset', 'close'])(
    '%s after the request arrived ⇒ unknown (connection-reset), with a code',
    async (m) => {
      mode = m;
      const out = await callThrough(name, live);
      expect(out).toMatchObject({ kind: 'unknown', cause: 'connection-reset' });
      expect(out).not.toHaveProperty('neverSent');
      expect(typeof (out as { code?: unknown }).code).toBe('string');
    },
  );
  it('held past the client timeout ⇒ unknown (timeout)', async () => {
    mode = 'stall';
    expect(await callThrough(name, live, 100)).toMatchObject({ kind: 'unknown', cause: 'timeout' });
  });
});
