// What a TypeScript user of @retrysafe/core + @retrysafe/ledger-sqlite + @retrysafe/sandbox writes (strict, NodeNext, lib check
// on), typed against the published declarations; with its types erased it is the JavaScript user's use.mjs.
import { createRunner, type RunResult } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import {
  createSandboxAdapter,
  createSandboxProvider,
  type SandboxBehaviour,
  startSandboxServer,
} from '@retrysafe/sandbox';

const behaviour: SandboxBehaviour = {
  replays: true,
  retentionMs: 86_400_000,
  parameterMatching: 'mismatch-error',
  concurrency: 'rejects-in-progress',
  lookup: 'get-by-key',
};
const provider = createSandboxProvider(behaviour);
const server = await startSandboxServer({ provider });
const adapter = createSandboxAdapter({ baseUrl: server.url, behaviour, timeoutMs: 5_000 });
// The ledger file beside this script: the ESM run and the compiled run each start with their own.
const runner = createRunner({
  ledger: createSqliteLedger({ path: new URL('retrysafe.db', import.meta.url).pathname }),
});

provider.failNext({ kind: 'unknown-after-commit' });
const first: RunResult = await runner.run(adapter, 'records.create', { params: { ref: 'order-17' } });
const again: RunResult = await runner.run(adapter, 'records.create', { params: { ref: 'order-17' } });
const id: RunResult['businessOperationId'] = again.businessOperationId;
await server.close();
console.log(
  JSON.stringify({
    first: first.status,
    again: again.status,
    adopted: again.status === 'done' && again.adopted,
    sameOperation: first.businessOperationId === id,
    records: provider.count(),
    createCalls: provider.calls(),
  }),
);
