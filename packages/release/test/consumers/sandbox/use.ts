// What a TypeScript user of @retrysafe/core + @retrysafe/ledger-sqlite + @retrysafe/sandbox writes (strict, NodeNext, lib check
// on): the same scenario as use.mjs, typed against the published declarations.
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
const runner = createRunner({ ledger: createSqliteLedger({ path: 'retrysafe-ts.db' }) });

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
