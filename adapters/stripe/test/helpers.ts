import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AdapterV1,
  asBusinessOperationId,
  type BusinessOperationId,
  businessOperationId,
  type ExecuteContext,
  type LookupContext,
  newAttemptId,
  newRunId,
  pickIntent,
} from '@retrysafe/contract';

export const API_KEY = 'sk_test_retrysafe';

/** The business-operation id the runner would derive for these params. */
export function idFor(adapter: AdapterV1, operation: string, params: Record<string, unknown>): BusinessOperationId {
  const spec = adapter.operations[operation]!;
  return businessOperationId(spec.card.operation, pickIntent(params, spec.intentFields));
}

export function execCtx(
  adapter: AdapterV1,
  operation: string,
  id: BusinessOperationId | string,
  attempt = 1,
): ExecuteContext {
  const boid = typeof id === 'string' ? asBusinessOperationId(id) : id;
  return {
    businessOperationId: boid,
    providerKey: adapter.deriveProviderKey(operation, boid),
    runId: newRunId(),
    attemptId: newAttemptId(),
    attempt,
    statusRef: null,
  };
}

/** The LookupContext the runner would build: the execute context's ids, the recorded params, the clock. */
export function lookupCtx(
  adapter: AdapterV1,
  operation: string,
  id: BusinessOperationId,
  params: unknown,
  at: { firstDispatchedAt: number | null; now: number },
): LookupContext {
  const { attempt: _attempt, ...ids } = execCtx(adapter, operation, id);
  return { ...ids, params, ...at };
}

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
