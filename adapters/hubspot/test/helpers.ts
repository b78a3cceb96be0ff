import {
  type AttemptId,
  businessOperationId,
  type ExecuteContext,
  type LookupContext,
  pickIntent,
  type RunId,
} from '@retrysafe/contract';
import { createHubSpotAdapter, type HubSpotAdapter, type HubSpotAdapterOptions } from '../src/index.js';
import { type HubSpotSandbox, type HubSpotSandboxOptions, startHubSpotSandbox } from '../src/sandbox/index.js';

export const TOKEN = 'pat-na1-test-token';

export async function sandbox(options: HubSpotSandboxOptions = {}): Promise<HubSpotSandbox> {
  return startHubSpotSandbox({ accessToken: TOKEN, ...options });
}

export function adapter(baseUrl: string, options: Partial<HubSpotAdapterOptions> = {}): HubSpotAdapter {
  return createHubSpotAdapter({ accessToken: TOKEN, baseUrl, timeoutMs: 1500, ...options });
}

/** The ExecuteContext the runner would build: id derived from the operation's intent fields, key from the adapter. */
export function execCtx(
  a: HubSpotAdapter,
  operation: keyof HubSpotAdapter['operations'],
  params: unknown,
  extra: Partial<ExecuteContext> = {},
): ExecuteContext {
  const spec = a.operations[operation];
  const id = businessOperationId(spec.card.operation, pickIntent(params, spec.intentFields));
  return {
    businessOperationId: id,
    providerKey: a.deriveProviderKey(operation, id),
    runId: 'run_test' as RunId,
    attemptId: 'att_test' as AttemptId,
    attempt: 1,
    statusRef: null,
    ...extra,
  };
}

export function lookupCtx(
  a: HubSpotAdapter,
  operation: keyof HubSpotAdapter['operations'],
  params: unknown,
  extra: Partial<LookupContext> = {},
): LookupContext {
  const e = execCtx(a, operation, params);
  return {
    businessOperationId: e.businessOperationId,
    providerKey: e.providerKey,
    params,
    runId: e.runId,
    attemptId: e.attemptId,
    statusRef: null,
    firstDispatchedAt: Date.now(),
    now: Date.now(),
    ...extra,
  };
}

export const ticket = (ref: string, extra: Record<string, string> = {}) => ({
  ref,
  properties: {
    subject: `Parcel damaged (${ref})`,
    content: 'The customer reports a damaged parcel.',
    hs_pipeline: '0',
    hs_pipeline_stage: '1',
    ...extra,
  },
});

export const order = (ref: string) => ({
  objectType: '2-100',
  properties: { name: `Order ${ref}`, order_ref: ref, amount: 1250 },
});

/** Requests the sandbox saw of one kind on one object type. */
export function seen(s: HubSpotSandbox, kind: string, objectType?: string): number {
  return s.requests.filter((r) => r.kind === kind && (objectType === undefined || r.objectType === objectType)).length;
}
