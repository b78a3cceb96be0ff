import {
  asAttemptId,
  asBusinessOperationId,
  asRunId,
  type ExecuteContext,
  type LookupContext,
} from '@retrysafe/contract';

export const TOKEN = 'xoxb-test-token-not-a-secret';
export const CHANNEL = 'C0TEST0001';

export const postParams = (i = 0) => ({ channel: CHANNEL, text: `Deploy ${i} finished` });

export function execCtx(id: string): ExecuteContext {
  return {
    businessOperationId: asBusinessOperationId(id),
    providerKey: null,
    runId: asRunId('run_test'),
    attemptId: asAttemptId('att_test'),
    attempt: 1,
    statusRef: null,
  };
}

export function lookupCtx(
  id: string,
  params: unknown,
  firstDispatchedAt: number | null,
  now = Date.now(),
): LookupContext {
  return {
    businessOperationId: asBusinessOperationId(id),
    providerKey: null,
    params,
    runId: asRunId('run_test'),
    attemptId: asAttemptId('att_lookup'),
    statusRef: null,
    firstDispatchedAt,
    now,
  };
}
