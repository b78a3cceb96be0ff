// The status lookup's answer when the ledger fails: a failure of the server, never "invalid-input" (which tells the
// agent its id is wrong, so it would change the id instead of asking again later).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { type Ledger, LedgerError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, RunnerConfigurationError } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { expect, it } from 'vitest';
import { createRetrysafeMcpServer } from '../src/index.js';

it('retrysafe_status on a ledger that fails is an error of the server, and a malformed id still invalid-input', async () => {
  const inner = createMemoryLedger();
  const ledger: Ledger = { ...inner, get: () => Promise.reject(new LedgerError('the ledger is unreachable')) };
  const adapter = createSandboxAdapter({ provider: createSandboxProvider(REPLAYING_BEHAVIOUR) });
  const server = createRetrysafeMcpServer({ runner: createRunner({ ledger }), ledger, adapters: [adapter] });
  const client = new Client({ name: 't', version: '1' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(a), client.connect(b)]);
  try {
    const status = (id: string) =>
      client.callTool({ name: 'retrysafe_status', arguments: { businessOperationId: id } }).then(
        (r) => ({
          answer: r.structuredContent as { status?: string } | undefined,
          isError: r.isError,
          text: JSON.stringify(r),
        }),
        (e: Error) => ({ answer: undefined, isError: true, text: e.message }),
      );
    const failed = await status('sandbox.records.create:abc');
    expect(failed.isError).toBe(true);
    expect(failed.answer?.status).not.toBe('invalid-input');
    expect(failed.text).toMatch(/the ledger is unreachable/);
    // The fields of every invalid-input answer, an operation tool's too.
    expect((await status('')).answer).toMatchObject({
      status: 'invalid-input',
      businessOperationId: null,
      fields: [{ path: 'businessOperationId' }],
    });
  } finally {
    await client.close();
    await server.close();
  }
});

it('refuses a wrapped runner that lost its redaction when the server is built, not per call', () => {
  const ledger = createMemoryLedger();
  const runner = createRunner({ ledger });
  const wrapped = {
    run: runner.run,
    recover: runner.recover,
    resolve: runner.resolve,
    checkResolve: runner.checkResolve,
  };
  const adapter = createSandboxAdapter({ provider: createSandboxProvider(REPLAYING_BEHAVIOUR) });
  expect(() => createRetrysafeMcpServer({ runner: wrapped, ledger, adapters: [adapter] })).toThrow(
    RunnerConfigurationError,
  );
});
