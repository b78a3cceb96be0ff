import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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
