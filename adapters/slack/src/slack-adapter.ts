import {
  type AccountOption,
  AdapterConfigurationError,
  defineAdapter,
  type FramedLookupContext,
  type LookupResult,
  type Outcome,
  type TypedAdapter,
} from '@retrysafe/contract';
import { checkBaseUrl, checkToken, positiveInteger } from '@retrysafe/contract/provider';
import { durationMs, notFoundIsAuthoritative } from '@retrysafe/contract/rules';
import { LogLevel, WebClient } from '@slack/web-api';
import { cannotTellFrom, outcomeFromCode, outcomeFromError } from './slack-errors.js';
import {
  DEFAULT_EVENT_TYPE,
  type SlackOperation,
  type SlackOperationTypes,
  slackOperations,
  slackTs,
} from './slack-operations.js';

export interface SlackAdapterOptions extends AccountOption {
  /** Bot token with chat:write (and channels:history for the lookup). A user token posts, but its lookup never adopts. */
  readonly token: string;
  /** Where the Web API lives, e.g. `http://127.0.0.1:PORT` for the loopback sandbox. Default https://slack.com. */
  readonly baseUrl?: string;
  /** Client timeout per call. Default 30 000 ms; a timeout after sending is an unknown outcome. */
  readonly timeoutMs?: number;
  /** The metadata event_type that tags a posted message with its business-operation id. */
  readonly eventType?: string;
  /**
   * History pages (15 messages each, the non-Marketplace maximum) one lookup reads at most. Default 4.
   * Each page is one conversations.history call, which non-Marketplace apps may make once a minute.
   */
  readonly lookupPages?: number;
}

export interface SlackAdapter extends TypedAdapter<SlackOperationTypes> {
  readonly provider: 'slack';
}

const PROVIDER = 'slack';
// The non-Marketplace history limits: 15 messages a page, one call a minute.
const HISTORY_PAGE = 15;
const HISTORY_POLL_MS = 60_000;

type HistoryMessage = {
  ts?: unknown;
  bot_id?: unknown;
  metadata?: { event_type?: unknown; event_payload?: { op?: unknown } };
};
type HistoryPage = { messages?: HistoryMessage[]; has_more?: boolean; response_metadata?: { next_cursor?: string } };

/** The SDK client with its own retries off: the runner is the one retrying layer. */
export function createSlackClient(token: string, baseUrl: string | undefined, timeoutMs: number): WebClient {
  const root = baseUrl === undefined ? 'https://slack.com' : checkBaseUrl(PROVIDER, baseUrl).href.replace(/\/$/, '');
  return new WebClient(token, {
    slackApiUrl: `${root}/api/`,
    timeout: timeoutMs,
    // The SDK default re-POSTs a failed call up to 10 times, and on a 429 pauses its queue and retries.
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    logLevel: LogLevel.ERROR,
  });
}

/**
 * Slack adapter: `chat.postMessage` and `chat.update` through @slack/web-api. No key travels: a post
 * carries the business-operation id in its message metadata, and the lookup reads the channel's
 * history with metadata since the first dispatch.
 */
export function createSlackAdapter(options: SlackAdapterOptions): SlackAdapter {
  checkToken(PROVIDER, 'token', options?.token);
  const timeoutMs = positiveInteger(PROVIDER, 'timeoutMs', options.timeoutMs, 30_000);
  const lookupPages = positiveInteger(PROVIDER, 'lookupPages', options.lookupPages, 4);
  const eventType = options.eventType ?? DEFAULT_EVENT_TYPE;
  if (!/^[a-z0-9_]{1,64}$/.test(eventType))
    throw new AdapterConfigurationError(
      PROVIDER,
      `eventType must be lower-case letters, digits and _, got ${JSON.stringify(eventType)}`,
    );
  const client = createSlackClient(options.token, options.baseUrl, timeoutMs);
  // Where a walk stopped (a page the history limit refused, or the page bound) and what it found so far: the next
  // lookup goes on from there, as asking page 1 again would spend the one call a minute and never reach the rest.
  // Lost on restart: it starts over.
  const parked = new Map<string, { window: string; cursor: string; found: string[] }>();
  const park = (id: string, window: string, cursor: string, found: string[]) => {
    if (parked.size >= 1000) parked.clear();
    parked.set(id, { window, cursor, found });
  };
  // Only a message this token's bot posted is ours: another app may post the same intent with the same metadata.
  // Slack's bot_id "tells you which bot sent this message"; auth.test names the token's (Bolt compares the two).
  // A failed answer is asked again.
  let bot: Promise<unknown> | undefined;
  const myBotId = () =>
    (bot ??= client.auth.test().then(
      (a) => a.bot_id,
      (error: unknown) => {
        bot = undefined;
        throw error;
      },
    ));

  async function send(op: SlackOperation, args: Record<string, unknown>): Promise<Outcome> {
    let answer: { ok?: boolean; error?: string; channel?: string; ts?: string };
    try {
      answer = await client.apiCall(op.method, args);
    } catch (error) {
      return outcomeFromError(error);
    }
    if (answer.ok !== true || typeof answer.ts !== 'string')
      return outcomeFromCode(answer.error ?? 'unreadable_response');
    const channel = answer.channel ?? String(args.channel);
    return { kind: 'succeeded', result: { channel, ts: answer.ts }, providerRef: answer.ts };
  }

  /** Reads the channel's history since the first dispatch (bounded pages) for the message tagged with this id. */
  async function findTagged(ctx: FramedLookupContext): Promise<LookupResult> {
    const params = ctx.params as { channel: string };
    if (ctx.firstDispatchedAt === null)
      return { kind: 'not-found', reason: 'never dispatched: nothing was sent to Slack' };
    const margin = ctx.clockSkewMarginMs;
    const card = slackOperations['chat.postMessage'].card;
    // A post answered within the client timeout, or applied within the card's late-apply bound, carries a ts
    // inside this window; a narrow window keeps the lookup to one page under the history limit.
    const late = card.lookup.lateApplyBound?.value ?? 'unknown';
    const landsWithin = late === 'unknown' ? timeoutMs : Math.max(timeoutMs, durationMs(late));
    let botId: unknown;
    try {
      botId = await myBotId();
    } catch (error) {
      return cannotTellFrom(error, 'auth.test');
    }
    // A user token's posts carry its person's user id, as that person's other apps' posts do: none is surely ours.
    if (typeof botId !== 'string' || botId === '')
      return {
        kind: 'cannot-tell',
        reason: 'auth.test names no bot_id (a user token): whose post is ours cannot be told',
      };
    const oldest = slackTs(ctx.firstDispatchedAt - margin);
    const latest = slackTs((ctx.lastDispatchedAt ?? ctx.firstDispatchedAt) + landsWithin + margin);
    const window = `${params.channel} ${oldest} ${latest}`;
    const saved = parked.get(ctx.businessOperationId);
    parked.delete(ctx.businessOperationId);
    const resumed = saved?.window === window;
    let cursor = resumed ? saved.cursor : undefined;
    const found = resumed ? saved.found : [];
    for (let page = 0; page < lookupPages; page++) {
      let answer: HistoryPage;
      try {
        answer = (await client.conversations.history({
          channel: params.channel,
          oldest,
          latest,
          inclusive: true,
          include_all_metadata: true,
          limit: HISTORY_PAGE,
          ...(cursor ? { cursor } : {}),
        })) as HistoryPage;
      } catch (error) {
        // A page not read may hold a second post of ours: a match on an earlier one proves nothing yet.
        if (cursor) park(ctx.businessOperationId, window, cursor, found);
        return cannotTellFrom(error, 'conversations.history');
      }
      for (const m of answer.messages ?? []) {
        if (
          m.bot_id === botId &&
          m.metadata?.event_type === eventType &&
          m.metadata.event_payload?.op === ctx.businessOperationId &&
          typeof m.ts === 'string'
        )
          found.push(m.ts);
      }
      cursor = answer.has_more ? answer.response_metadata?.next_cursor : undefined;
      if (!cursor) break;
    }
    if (cursor) park(ctx.businessOperationId, window, cursor, found);
    // Two posts of ours with this id: a duplicate already made, which adopting one would hide from a person.
    if (found.length > 1)
      return {
        kind: 'cannot-tell',
        reason: `${found.length} posts of this bot carry this id: ${found.sort().join(', ')}`,
        duplicates: found,
      };
    if (found.length === 1 && !cursor)
      return {
        kind: 'found',
        outcome: { kind: 'succeeded', result: { channel: params.channel, ts: found[0]! }, providerRef: found[0]! },
      };
    const why = cursor
      ? `more than ${lookupPages * HISTORY_PAGE} messages between ${oldest} and ${latest}: the lookup stops at its page bound`
      : 'no message in the channel history carries this business-operation id yet';
    // Absence is the card's rule (Slack documents no history delay, so today never): else ask again in a minute.
    // A walk resumed read its first pages a while ago: never a proof of absence.
    if (!cursor && !resumed && notFoundIsAuthoritative(card, ctx)) return { kind: 'not-found', reason: why };
    return { kind: 'cannot-tell', reason: why, retryAfterMs: HISTORY_POLL_MS };
  }

  return defineAdapter(
    {
      provider: PROVIDER,
      account: options.account,
      operations: slackOperations,
      async execute(op, params, ctx) {
        return send(op, op.args(params as Record<string, unknown>, ctx.businessOperationId, eventType));
      },
      async lookup(op, ctx) {
        if (op.method !== 'chat.postMessage') return { kind: 'cannot-tell', reason: `${op.name} has no lookup` };
        return findTagged(ctx);
      },
      // close: the WebClient holds no sockets of its own (global fetch); nothing to release.
    },
    { client },
  );
}
