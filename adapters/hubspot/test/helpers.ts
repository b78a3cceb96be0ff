import {
  type AttemptId,
  businessOperationId,
  type ExecuteContext,
  type LookupContext,
  pickIntent,
  type RunId,
} from '@retrysafe/contract';
import { createHubSpotAdapter, type HubSpotAdapter, type HubSpotAdapterOptions } from '../src/index.js';
import { drillOrder, drillTicket } from '../src/sandbox/hubspot-drills.js';
import { type HubSpotSandbox, type HubSpotSandboxOptions, startHubSpotSandbox } from '../src/sandbox/index.js';

export const TOKEN = 'pat-na1-test-token';

export async function sandbox(options: HubSpotSandboxOptions = {}): Promise<HubSpotSandbox> {
  return startHubSpotSandbox({ accessToken: TOKEN, ...options });
}

const opened: { close(): Promise<void> }[] = [];
/** Closes what the test opened through closeAfter (an afterEach hook). */
export async function closeOpened() {
  while (opened.length) await opened.pop()!.close();
}
export function closeAfter<T extends { close(): Promise<void> }>(thing: T): T {
  opened.push(thing);
  return thing;
}
export const sb = async (options: HubSpotSandboxOptions = {}) => closeAfter(await sandbox(options));

/** A fresh sandbox and an adapter pointed at it. */
export async function rig(options: HubSpotSandboxOptions = {}, adapterOptions: Partial<HubSpotAdapterOptions> = {}) {
  const s = await sb(options);
  return { s, a: adapter(s.url, adapterOptions) };
}

export function adapter(baseUrl: string, options: Partial<HubSpotAdapterOptions> = {}): HubSpotAdapter {
  return createHubSpotAdapter({ accessToken: TOKEN, baseUrl, timeoutMs: 1500, ...options });
}

type Op = keyof HubSpotAdapter['operations'];

/** The ExecuteContext the runner would build: id derived from the operation's intent fields, key from the adapter. */
export function execCtx(
  a: HubSpotAdapter,
  op: Op,
  params: unknown,
  extra: Partial<ExecuteContext> = {},
): ExecuteContext {
  const spec = a.operations[op]!;
  const id = businessOperationId(spec.card.operation, pickIntent(params, spec.intentFields));
  return {
    businessOperationId: id,
    providerKey: a.deriveProviderKey(op, id),
    runId: 'run_test' as RunId,
    attemptId: 'att_test' as AttemptId,
    attempt: 1,
    statusRef: null,
    ...extra,
  };
}

export function lookupCtx(
  a: HubSpotAdapter,
  op: Op,
  params: unknown,
  extra: Partial<LookupContext> = {},
): LookupContext {
  const { businessOperationId, providerKey, runId, attemptId } = execCtx(a, op, params);
  const now = Date.now();
  return {
    businessOperationId,
    providerKey,
    params,
    runId,
    attemptId,
    statusRef: null,
    firstDispatchedAt: now,
    now,
    ...extra,
  };
}

/** One doExecute with the context the runner would build. */
export const execute = (a: HubSpotAdapter, operation: Op, params: unknown) =>
  a.doExecute(operation, params, execCtx(a, operation, params));

/** One doLookup with the context the runner would build (extra: dispatch times and the like). */
export const lookup = (a: HubSpotAdapter, operation: Op, params: unknown, extra: Partial<LookupContext> = {}) =>
  a.doLookup(operation, lookupCtx(a, operation, params, extra));

/** A ticket the default sandbox accepts, with extra properties. */
export const ticket = (ref: string, extra: Record<string, string> = {}) => {
  const t = drillTicket(ref);
  return { ...t, properties: { ...t.properties, ...extra } };
};

export { drillOrder as order };
/** Requests the sandbox saw of one kind on one object type. */
export function seen(s: HubSpotSandbox, kind: string, objectType?: string): number {
  return s.requests.filter((r) => r.kind === kind && (objectType === undefined || r.objectType === objectType)).length;
}
