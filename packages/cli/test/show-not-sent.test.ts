import { join } from 'node:path';
import type { AdapterV1 } from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { expect, it } from 'vitest';
import { cli, tempDir } from './helpers.js';

// Given back (no request ever left): no person's to resolve, so not a hand-off, and `show` says what the next call does.
it('ledger show says a not-sent operation was given back, each call never sent; ledger handoffs does not list it', async () => {
  const dir = tempDir('show-not-sent');
  const db = join(dir, 'retrysafe.db');
  const ledger = createSqliteLedger({ path: db });
  const sandbox = createSandboxAdapter({ provider: createSandboxProvider(REPLAYING_BEHAVIOUR) });
  const down: AdapterV1 = {
    specificationVersion: sandbox.specificationVersion,
    provider: sandbox.provider,
    operations: sandbox.operations,
    doLookup: sandbox.doLookup,
    deriveProviderKey: (op, id) => sandbox.deriveProviderKey(op, id),
    doExecute: async () => ({
      kind: 'not-applied',
      message: 'connect ECONNREFUSED',
      code: 'ECONNREFUSED',
      neverSent: true,
    }),
  };
  const runner = createRunner({ ledger, policy: { maxAttempts: 2, baseMs: 1, capMs: 1 } });
  const run = runner.run(down, 'records.create', {
    params: { ref: 'down-1', amount: 5 },
    businessOperationId: 'down-1',
  });
  await expect(run).rejects.toThrow(/nothing was sent/);
  await ledger.close();
  const env = { NO_COLOR: '1' };
  const shown = await cli(['ledger', 'show', 'down-1', '--db', db], { cwd: dir, env });
  expect(shown.stdout).toMatch(/^state\s+not-sent$/m);
  expect(shown.stdout).toMatch(/Given back: no request of it ever left/);
  expect(shown.stdout.match(/never sent/g)).toHaveLength(2);
  expect((await cli(['ledger', 'handoffs', '--db', db], { cwd: dir, env })).stdout).not.toMatch(/down-1/);
});
