import {
  type AdapterV1,
  asAttemptId,
  asBusinessOperationId,
  asRunId,
  type ExecuteContext,
  type LookupContext,
} from '@retrysafe/contract';

// The contexts the runner hands an adapter, for tests that call doExecute / doLookup directly
// (shared by the github, slack and resend tests).

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
