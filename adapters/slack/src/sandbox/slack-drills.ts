import type { DrillOperation, DrillSetup } from '@retrysafe/contract';
import { createSlackAdapter } from '../slack-adapter.js';
import { startSlackSandbox } from './slack-sandbox.js';

/** A token the sandbox checks; not a secret. */
const DRILL_TOKEN = 'xoxb-drill-token-not-a-secret';
const DRILL_CHANNEL = 'C0DRILL001';
/** How long the drill's sandbox keeps a post out of history: the lookup must wait for it, never re-post. */
const DRILL_HISTORY_DELAY_MS = 90_000;
/** Messages seeded for chat.update, one per drill index. */
const SEEDED = 64;
const seededTs = (i: number) => `1700000000.${String(i % SEEDED).padStart(6, '0')}`;

const slackError = (error: string) => ({ ok: false, error });
const faults: DrillOperation['faults'] = {
  permanent: { kind: 'status', status: 200, body: slackError('channel_not_found') },
  transient: { kind: 'status', status: 429, retryAfterS: 1, body: slackError('ratelimited') },
  rateLimited: { kind: 'status', status: 429, retryAfterS: 2, body: slackError('ratelimited') },
};

/**
 * What the conformance kit (`runConformance`) and `retrysafe drill --adapter slack` run: the real
 * @slack/web-api WebClient → the testkit fault proxy → the loopback Slack sandbox, on the drill's clock.
 */
export const slackDrill: DrillSetup = {
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
      // The limit the adapter is written for (docs.slack.dev/reference/methods/conversations.history: apps
      // not on the Marketplace get 1 call a minute, 15 messages a page); without it a lookup that polls
      // history more often passes the drill and is refused by Slack.
      historyCallsPerMinute: 1,
      now: () => clock.now(),
    });
    return { url: s.url, count: (op) => s.count(op), close: () => s.close() };
  },
  operations: {
    'chat.postMessage': {
      params: (i) => ({ channel: DRILL_CHANNEL, text: `Deploy ${i} finished` }),
      changeIntent: (p) => ({ ...(p as object), text: 'changed' }),
      faults,
    },
    'chat.update': {
      params: (i) => ({ channel: DRILL_CHANNEL, ts: seededTs(i), text: `Deploy ${i} rolled back` }),
      // The intent is the message: other text for it is the update's next revision, another message another intent.
      changeIntent: (p) => ({ ...(p as object), ts: '1700000001.000000' }),
      faults,
    },
  },
};

export const drills: readonly DrillSetup[] = [slackDrill];
