import { writeFileSync } from 'node:fs';
import {
  createSandboxAdapter,
  createSandboxProvider,
  REPLAYING_BEHAVIOUR,
  type SandboxBehaviour,
  type SandboxProvider,
  startSandboxServer,
} from '@retrysafe/sandbox';
import { type FaultProxy, type FaultRequestInfo, startFaultProxy } from '@retrysafe/testkit';
import { afterAll } from 'vitest';

/** What the proxy does to the next request: a 400 rejection, a 403 refusal, a lost response, or nothing. */
export type Fault = 'reject' | 'forbid' | 'lose' | 'pass';

export interface FaultySandbox {
  readonly provider: SandboxProvider;
  readonly proxy: FaultProxy;
  /** The sandbox adapter, pointed at the proxy. */
  readonly adapter: ReturnType<typeof createSandboxAdapter>;
  setFault(fault: Fault): void;
  /** Runs before the proxy answers each request (another process acting on the ledger meanwhile); null for none. */
  onRequest(hook: ((request: FaultRequestInfo) => void) | null): void;
  /** Writes the config file `--resume` builds its adapter from: the same adapter, through the proxy. */
  writeConfig(path: string, ledger: string): void;
  close(): Promise<void>;
}

const started: FaultySandbox[] = [];
// Registered when a test file imports this module, so it runs after that file's own afterAll hooks.
afterAll(async () => {
  for (const sandbox of started.splice(0)) await sandbox.close();
});

/**
 * The loopback sandbox behind a fault proxy whose fault a test switches between runs, so a ledger
 * can be filled with rejected, lost and passed operations by the real runner. Closed after the test
 * file's last test.
 */
export async function startFaultySandbox(
  fault: Fault,
  rejection = 'amount must be positive',
  behaviour: SandboxBehaviour = REPLAYING_BEHAVIOUR,
): Promise<FaultySandbox> {
  const provider = createSandboxProvider({ ...behaviour });
  const server = await startSandboxServer({ provider, port: 0 });
  let current = fault;
  let hook: ((request: FaultRequestInfo) => void) | null = null;
  const proxy = await startFaultProxy({
    target: server.url,
    faults: (_n, request) => {
      hook?.(request);
      return current === 'reject' || current === 'forbid'
        ? {
            kind: 'status',
            status: current === 'reject' ? 400 : 403,
            body: { error: { code: current === 'reject' ? 'invalid_request' : 'not_in_channel', message: rejection } },
          }
        : current === 'lose'
          ? 'drop-response'
          : 'pass';
    },
  });
  const settings = { baseUrl: proxy.url, timeoutMs: 2000, behaviour };
  const sandbox: FaultySandbox = {
    provider,
    proxy,
    adapter: createSandboxAdapter(settings),
    setFault: (next) => {
      current = next;
    },
    onRequest: (next) => {
      hook = next;
    },
    writeConfig: (path, ledger) =>
      writeFileSync(path, JSON.stringify({ ledger, adapters: { sandbox: settings } }, null, 2)),
    async close() {
      await proxy.close();
      await server.close();
    },
  };
  started.push(sandbox);
  return sandbox;
}
