import type { DrillFault, DrillOperation, DrillSetup } from '@retrysafe/contract';
import { createSlackAdapter } from '../slack-adapter.js';
import { startSlackSandbox } from './slack-sandbox.js';

/**
 * The drill setup the conformance kit (`runConformance`) and the CLI's `retrysafe drill` run: the real
 * @slack/web-api WebClient → the testkit fault proxy → the loopback Slack sandbox, on the drill's clock.
 */
export type SlackDrill = DrillSetup;

/** A token the sandbox checks; not a secret. */
export const DRILL_TOKEN = 'xoxb-drill-token-not-a-secret';
export const DRILL_CHANNEL = 'C0DRILL001';
/** How long the drill's sandbox keeps a post out of history: the lookup must wait for it, never re-post. */
export const DRILL_HISTORY_DELAY_MS = 90_000;
/** Messages seeded for chat.update, one per drill index. */
const SEEDED = 64;
const seededTs = (i: number) => `1700000000.${String(i % SEEDED).padStart(6, '0')}`;

const slackError = (error: string) => ({ ok: false, error });
export const slackDrillFaults: DrillOperation['faults'] = {
  permanent: { kind: 'status', status: 200, body: slackError('channel_not_found') } satisfies DrillFault,
  transient: { kind: 'status', status: 429, retryAfterS: 1, body: slackError('ratelimited') },
  rateLimited: { kind: 'status', status: 429, retryAfterS: 2, body: slackError('ratelimited') },
};

export const drillPostParams = (i: number) => ({ channel: DRILL_CHANNEL, text: `Deploy ${i} finished` });
export const drillUpdateParams = (i: number) => ({
  channel: DRILL_CHANNEL,
  ts: seededTs(i),
  text: `Deploy ${i} rolled back`,
});

export const slackDrill: SlackDrill = {
  name: 'slack',
  // the testkit default lets a loaded machine time out the lookups, which then "cannot tell"
  timeoutMs: 2_000,
  createAdapter: ({ baseUrl, timeoutMs }) => createSlackAdapter({ token: DRILL_TOKEN, baseUrl, timeoutMs }),
  startSandbox: async ({ clock }) => {
    const seed = Array.from({ length: SEEDED }, (_, i) => ({
      channel: DRILL_CHANNEL,
      ts: seededTs(i),
      text: `Deploy ${i} started`,
    }));
    const s = await startSlackSandbox({
      token: DRILL_TOKEN,
      channels: [DRILL_CHANNEL],
      seed,
      historyDelayMs: DRILL_HISTORY_DELAY_MS,
      now: () => clock.now(),
    });
    return { url: s.url, count: (op) => s.count(op), close: () => s.close() };
  },
  operations: {
    'chat.postMessage': {
      params: drillPostParams,
      changeIntent: (p) => ({ ...(p as object), text: 'changed' }),
      faults: slackDrillFaults,
    },
    'chat.update': {
      params: drillUpdateParams,
      changeIntent: (p) => ({ ...(p as object), text: 'changed' }),
      faults: slackDrillFaults,
    },
  },
};

/** The name the CLI reads. */
export const drills: readonly SlackDrill[] = [slackDrill];
