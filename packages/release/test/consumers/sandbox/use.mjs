// What a JavaScript user of @retrysafe/core + @retrysafe/ledger-sqlite + @retrysafe/sandbox writes: a create whose response is
// lost after the provider committed it, then the same intent again. Prints one JSON line.
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createSandboxAdapter, createSandboxProvider, startSandboxServer } from '@retrysafe/sandbox';

const behaviour = {
  replays: true,
  retentionMs: 86_400_000,
  parameterMatching: 'mismatch-error',
  concurrency: 'rejects-in-progress',
  lookup: 'get-by-key',
};
const provider = createSandboxProvider(behaviour);
const server = await startSandboxServer({ provider });
const adapter = createSandboxAdapter({ baseUrl: server.url, behaviour, timeoutMs: 5_000 });
const runner = createRunner({ ledger: createSqliteLedger({ path: 'retrysafe-esm.db' }) });

provider.failNext({ kind: 'unknown-after-commit' });
const first = await runner.run(adapter, 'records.create', { params: { ref: 'order-17' } });
const again = await runner.run(adapter, 'records.create', { params: { ref: 'order-17' } });
await server.close();
console.log(
  JSON.stringify({
    first: first.status,
    again: again.status,
    adopted: again.status === 'done' && again.adopted,
    sameOperation: first.businessOperationId === again.businessOperationId,
    records: provider.count(),
    createCalls: provider.calls(),
  }),
);
