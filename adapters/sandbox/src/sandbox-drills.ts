import type { DrillOperation, DrillSetup } from '@retrysafe/contract';
import { createSandboxAdapter } from './sandbox-adapter.js';
import { FORGETFUL_BEHAVIOUR, REPLAYING_BEHAVIOUR } from './sandbox-cards.js';
import { createSandboxProvider, type SandboxBehaviour } from './sandbox-provider.js';
import { startSandboxServer } from './sandbox-server.js';

const error = (code: string, message: string) => ({ error: { code, message } });

export const sandboxDrillOperation: DrillOperation = {
  params: (i) => ({ ref: `order-${i}`, amount: 100 + i }),
  // Another order: the reference names the intent, the amount is what it is made with (a correction).
  changeIntent: (p) => ({ ...(p as Record<string, unknown>), ref: `${(p as { ref: string }).ref}-b` }),
  faults: {
    permanent: { kind: 'status', status: 400, body: error('invalid_request', 'amount must be positive') },
    transient: { kind: 'status', status: 429, body: error('rate_limited', 'slow down') },
    rateLimited: { kind: 'status', status: 429, retryAfterS: 2, body: error('rate_limited', 'slow down') },
    inProgress: { kind: 'status', status: 409, retryAfterS: 1, body: error('idempotency_key_in_use', 'in flight') },
  },
};

/** A drill setup for the sandbox with `behaviour`, over real loopback HTTP. */
export function sandboxDrill(name: string, behaviour: SandboxBehaviour): DrillSetup {
  return {
    name,
    createAdapter: ({ baseUrl, timeoutMs }) => createSandboxAdapter({ baseUrl, timeoutMs, behaviour }),
    startSandbox: async ({ clock }) => {
      const provider = createSandboxProvider({ ...behaviour, clock: clock.now, sleep: clock.sleep });
      const server = await startSandboxServer({ provider, port: 0 });
      return {
        url: server.url,
        count: () => provider.count(),
        close: () => server.close(),
        expireKeys: () => provider.advance((behaviour.retentionMs ?? 0) + 1),
      };
    },
    operations: { 'records.create': sandboxDrillOperation },
  };
}

/** What `retrysafe drill --adapter sandbox` runs: a replaying provider and a forgetful one. */
export const drills: readonly DrillSetup[] = [
  sandboxDrill('sandbox-replaying', REPLAYING_BEHAVIOUR),
  sandboxDrill('sandbox-forgetful', FORGETFUL_BEHAVIOUR),
];
