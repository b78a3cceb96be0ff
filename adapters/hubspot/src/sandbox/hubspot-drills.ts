import type { DrillFault, DrillOperation, DrillSetup } from '@retrysafe/contract';
import { createHubSpotAdapter } from '../hubspot-adapter.js';
import { startHubSpotSandbox } from './hubspot-sandbox.js';

/**
 * Drill setups are the contract's `DrillSetup`: the conformance kit (`runConformance`) and the CLI's
 * `retrysafe drill` run what this file exports, and this package depends on the contract alone.
 */
export type HubSpotDrill = DrillSetup;
export type HubSpotDrillOperation = DrillOperation;
type StatusFault = Extract<DrillFault, { kind: 'status' }>;

const hubspotError = (status: number, category: string, message: string): StatusFault => ({
  kind: 'status',
  status,
  body: { status: 'error', message, correlationId: 'c0ffee00-0000-4000-8000-000000000000', category },
});
const tenSecondly = {
  status: 'error',
  message: 'You have reached your ten_secondly_rolling limit.',
  errorType: 'RATE_LIMIT',
  correlationId: 'c0ffee00-0000-4000-8000-000000000001',
  policyName: 'TEN_SECONDLY_ROLLING',
};

/** HubSpot's wire format for the answers the drill needs. */
export const hubSpotDrillFaults: HubSpotDrillOperation['faults'] = {
  permanent: hubspotError(400, 'VALIDATION_ERROR', 'Property values were not valid'),
  transient: {
    kind: 'status',
    status: 429,
    body: tenSecondly,
    headers: { 'X-HubSpot-RateLimit-Interval-Milliseconds': '10000' },
  },
  rateLimited: { kind: 'status', status: 429, retryAfterS: 2, body: tenSecondly },
};

export const drillTicket = (ref: string) => ({
  ref,
  properties: {
    subject: `Parcel damaged (${ref})`,
    content: 'The customer reports a damaged parcel.',
    hs_pipeline: '0',
    hs_pipeline_stage: '1',
  },
});
export const drillOrder = (ref: string) => ({
  objectType: '2-100',
  ref,
  properties: { name: `Order ${ref}`, order_ref: ref, amount: '1250' },
});

// The sandbox indexes search 2 s after a write (on the drill's virtual clock); the adapter is told a
// search miss is authoritative 5 s after the first dispatch — a claim that is true of this sandbox.
export const hubSpotDrill: HubSpotDrill = {
  name: 'hubspot',
  // client timeout: above the testkit's 400 ms default so a loaded machine is not mistaken for a lost response
  timeoutMs: 1500,
  createAdapter: ({ baseUrl, timeoutMs }) =>
    createHubSpotAdapter({ accessToken: 'pat-na1-drill', baseUrl, timeoutMs, searchSettleMs: 5_000 }),
  startSandbox: async ({ clock }) => {
    const s = await startHubSpotSandbox({ port: 0, clock, searchIndexingDelayMs: 2_000 });
    s.seed('contacts', { email: 'drill@example.test' }); // id 1001: the contact every contacts.update drill sets
    // contacts.update creates nothing: its "record" is the contact holding the value the drill set
    const count = (op: string) =>
      op === 'contacts.update' ? s.records('contacts').filter((r) => r.properties.jobtitle).length : s.count(op);
    return { url: s.url, count, close: () => s.close() };
  },
  operations: {
    'contacts.update': {
      params: (i) => ({ contactId: '1001', properties: { jobtitle: `Drill ${i}` } }),
      // The intent is the contact: other values for it are the update's next revision, another contact another intent.
      changeIntent: (p) => ({ ...(p as object), contactId: '1002' }),
      faults: hubSpotDrillFaults,
    },
    'objects.upsert': {
      params: (i) => drillOrder(`D-${i}`),
      changeIntent: (p) => ({ ...(p as object), ref: 'changed' }),
      faults: hubSpotDrillFaults,
    },
    'tickets.create': {
      params: (i) => drillTicket(`drill-${i}`),
      changeIntent: (p) => ({ ...(p as object), ref: 'changed' }),
      faults: hubSpotDrillFaults,
    },
  },
};

/** The name the CLI reads. */
export const drills: readonly HubSpotDrill[] = [hubSpotDrill];
