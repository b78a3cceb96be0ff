import {
  type AdapterV1,
  asAttemptId,
  asBusinessOperationId,
  asRunId,
  type ExecuteContext,
  type LookupContext,
} from '@retrysafe/contract';
import { afterEach } from 'vitest';

// Test helpers shared by adapter tests (github, slack, resend): each imports this file from its own test/helpers.ts.

const open: { close(): Promise<unknown> }[] = [];
// Registered in each test file that imports this module.
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

/** Closed after the test that opened it, the last opened first. */
export function closeAfterTest<T extends { close(): Promise<unknown> }>(thing: T): T {
  open.push(thing);
  return thing;
}

// The contexts the runner hands an adapter, for tests that call doExecute / doLookup directly.

/** With `adapter`, the provider key is the one it derives for `operation`, as the runner would send it. */
export function execCtx(id: string, adapter?: AdapterV1, operation = ''): ExecuteContext {
  const businessOperationId = asBusinessOperationId(id);
  return {
    businessOperationId,
    providerKey: adapter?.deriveProviderKey(operation, businessOperationId) ?? null,
    runId: asRunId('run_test'),
    attemptId: asAttemptId('att_test'),
    attempt: 1,
    statusRef: null,
  };
}

export function lookupCtx(
  id: string,
  params: unknown,
  firstDispatchedAt: number | null = Date.now(),
  now = Date.now(),
  adapter?: AdapterV1,
  operation = '',
): LookupContext {
  const { attempt: _, ...ctx } = execCtx(id, adapter, operation);
  return { ...ctx, attemptId: asAttemptId('att_lookup'), params, firstDispatchedAt, now };
}
