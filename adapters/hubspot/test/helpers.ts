import type { LookupContext } from '@retrysafe/contract';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { executeContext, lookupContext, operationIdFor } from '@retrysafe/testkit/conformance';
import { createHubSpotAdapter, type HubSpotAdapter, type HubSpotAdapterOptions } from '../src/index.js';
import { drillOrder, drillTicket } from '../src/sandbox/hubspot-drills.js';
import { type HubSpotSandbox, type HubSpotSandboxOptions, startHubSpotSandbox } from '../src/sandbox/index.js';

export const TOKEN = 'pat-na1-test-token';

export async function sandbox(options: HubSpotSandboxOptions = {}): Promise<HubSpotSandbox> {
  return startHubSpotSandbox({ accessToken: TOKEN, ...options });
}

export const sb = async (options: HubSpotSandboxOptions = {}) => closeAfterTest(await sandbox(options));

/** A fresh sandbox and an adapter pointed at it. */
export async function rig(options: HubSpotSandboxOptions = {}, adapterOptions: Partial<HubSpotAdapterOptions> = {}) {
  const s = await sb(options);
  return { s, a: adapter(s.url, adapterOptions) };
}

export function adapter(baseUrl: string, options: Partial<HubSpotAdapterOptions> = {}): HubSpotAdapter {
  return createHubSpotAdapter({ accessToken: TOKEN, baseUrl, timeoutMs: 1500, ...options });
}

type Op = keyof HubSpotAdapter['operations'];

/** One doExecute with the context the runner would build. */
export const execute = (a: HubSpotAdapter, operation: Op, params: Record<string, unknown>) =>
  a.doExecute(operation, params, executeContext(a, operation, operationIdFor(a, operation, params)));

/** One doLookup with the context the runner would build (over: dispatch times and the like). */
export const lookup = (
  a: HubSpotAdapter,
  operation: Op,
  params: Record<string, unknown>,
  over: Partial<LookupContext> = {},
) => a.doLookup(operation, lookupContext(a, operation, operationIdFor(a, operation, params), params, over));

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
