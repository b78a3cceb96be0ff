import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach } from 'vitest';
import { createStripeAdapter, type StripeAdapter } from '../src/index.js';
import { type StripeSandbox, startStripeSandbox } from '../src/sandbox/index.js';

export const API_KEY = 'sk_test_retrysafe';

/** A scripted loopback server, for wire answers the sandbox never gives (garbage bodies, resets). Counts requests. */
export async function startScriptedServer(handler: (req: IncomingMessage, res: ServerResponse, n: number) => void) {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handler(req, res, ++n));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    count: () => n,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** For each test: a Stripe sandbox whose clock stands at `t0` and an adapter on it; the sandbox closed after. */
export function adapterPerTest(t0: number): { readonly adapter: StripeAdapter } {
  const rig = {} as { adapter: StripeAdapter };
  let sandbox: StripeSandbox;
  beforeEach(async () => {
    sandbox = await startStripeSandbox({ now: () => t0 });
    rig.adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 2000 });
  });
  afterEach(() => sandbox.close());
  return rig;
}
