import type { DrillOperation, DrillSetup } from '@retrysafe/contract';
import { createMsGraphAdapter } from '../msgraph-adapter.js';
import { startMsGraphSandbox } from './msgraph-sandbox.js';

/**
 * Drill setups are the contract's `DrillSetup`: the conformance kit (`runConformance`) and the CLI's
 * `retrysafe drill` run what this file exports, and this package depends on the contract alone.
 */
export type MsGraphDrill = DrillSetup;
export type MsGraphDrillOperation = DrillOperation;

/** How long the drill's sandbox keeps a sent mail out of Sent Items: the lookup must wait for it, never re-send. */
const DRILL_SENT_ITEMS_DELAY_MS = 90_000;

/** A token the sandbox checks; not a secret. */
export const DRILL_TOKEN = 'drill-token-not-a-secret';

const graphError = (code: string) => ({
  error: { code, message: `sandbox ${code}`, innerError: { 'request-id': '00000000-0000-4000-8000-000000000000' } },
});
export const msGraphDrillFaults: MsGraphDrillOperation['faults'] = {
  permanent: { kind: 'status', status: 400, body: graphError('ErrorInvalidRecipients') },
  transient: { kind: 'status', status: 429, body: graphError('TooManyRequests') },
  rateLimited: { kind: 'status', status: 429, retryAfterS: 2, body: graphError('TooManyRequests') },
};

export const drillMailParams = (i: number) => ({
  mailbox: 'me',
  message: {
    subject: `Invoice ${i} reminder`,
    body: { contentType: 'text' as const, content: `Please pay invoice ${i}.` },
    toRecipients: [{ emailAddress: { address: `customer${i}@example.test` } }],
  },
});
export const drillEventParams = (i: number) => ({
  mailbox: 'me',
  event: {
    subject: `Review ${i}`,
    start: { dateTime: `2026-12-0${(i % 9) + 1}T10:00:00`, timeZone: 'UTC' },
    end: { dateTime: `2026-12-0${(i % 9) + 1}T11:00:00`, timeZone: 'UTC' },
  },
});
export const drillTaskParams = (i: number) => ({
  mailbox: 'me',
  listId: 'tasks',
  task: { title: `Call customer ${i}` },
});

const withChanged = (key: string, field: string) => (p: unknown) => {
  const o = p as Record<string, Record<string, unknown>>;
  return { ...o, [key]: { ...o[key], [field]: 'changed' } };
};

export const msGraphDrill: MsGraphDrill = {
  name: 'msgraph',
  // the testkit default (400 ms) lets a loaded machine time out the lookups, which then "cannot tell"
  timeoutMs: 2_000,
  createAdapter: ({ baseUrl, timeoutMs }) => createMsGraphAdapter({ accessToken: DRILL_TOKEN, baseUrl, timeoutMs }),
  startSandbox: async ({ clock }) => {
    // sendMail's 202 is "accepted", the mail shows in Sent Items only after transport, with no figure
    // given (learn.microsoft.com/en-us/graph/api/user-sendmail): a lookup right after it must not see it.
    const s = await startMsGraphSandbox({
      port: 0,
      accessToken: DRILL_TOKEN,
      now: () => clock.now(),
      sentItemsDelayMs: DRILL_SENT_ITEMS_DELAY_MS,
    });
    return { url: s.url, count: (op) => s.count(op), close: () => s.close(), expireKeys: () => s.expireKeys() };
  },
  operations: {
    'mail.send': {
      params: drillMailParams,
      changeIntent: withChanged('message', 'subject'),
      faults: msGraphDrillFaults,
    },
    'events.create': {
      params: drillEventParams,
      changeIntent: withChanged('event', 'subject'),
      faults: msGraphDrillFaults,
    },
    'todo.tasks.create': {
      params: drillTaskParams,
      changeIntent: (p) => ({ ...(p as object), task: { title: 'changed' } }),
      faults: msGraphDrillFaults,
    },
  },
};

/** The name the CLI reads. */
export const drills: readonly MsGraphDrill[] = [msGraphDrill];
