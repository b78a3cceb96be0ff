import {
  type CallScript,
  type ClockSource,
  createFaultScripts,
  createRequestLog,
  createSandboxClock,
  type LoopbackRequest,
  type SandboxReply as Reply,
  type Route,
  routeRequest,
  type SandboxClock,
  startLoopbackServer,
} from '@retrysafe/sandbox-kit';

/**
 * A loopback Slack Web API (chat.postMessage, chat.update, conversations.history) that behaves as Slack
 * documents it: every answer to a method call is HTTP 200 with `{ ok: true, … }` or `{ ok: false, error }`,
 * except a rate limit, which is HTTP 429 with `Retry-After` and `{ ok: false, error: 'ratelimited' }`;
 * a posted message keeps the `metadata` it was posted with and history returns it only with
 * `include_all_metadata`; history lists newest first, at most `historyPageMax` messages a page, and shows
 * a message only `historyDelayMs` after it was posted (Slack documents no such delay: the sandbox makes it
 * configurable so lookups are tested against a lag). A posted message carries its poster as Slack's messages do: the
 * bot user (`user`), `bot_id` and `app_id` of a bot token, only `user` for a user token; `auth.test` tells a token
 * who it is. It counts the messages it holds and the calls it got.
 */

export type SlackMethod = 'chat.postMessage' | 'chat.update' | 'conversations.history' | 'auth.test';

/** Who a token acts as: a bot token's bot user, bot and app; a user token has only its user. */
export interface SandboxIdentity {
  readonly userId: string;
  readonly botId?: string;
  readonly appId?: string;
}

/** A scripted answer for one call: Slack's error body, a 429, or an HTTP status; `commit` applies the call first. */
export type SandboxFault =
  | 'pass'
  | { readonly kind: 'error'; readonly error: string; readonly commit?: boolean }
  | { readonly kind: 'ratelimited'; readonly retryAfterS: number }
  | { readonly kind: 'status'; readonly status: number; readonly commit?: boolean };

export interface SandboxMessage {
  readonly channel: string;
  readonly ts: string;
  text: string;
  blocks: unknown;
  readonly metadata: { readonly event_type: string; readonly event_payload: Record<string, unknown> } | null;
  /** Who posted it (null: seeded, nobody's). */
  readonly poster: SandboxIdentity | null;
  /** Sandbox-clock ms when it was posted (history shows it from postedAt + historyDelayMs). */
  readonly postedAt: number;
  /** Seeded at start, not posted through the API (not counted as a posted message). */
  readonly seeded: boolean;
  edited: boolean;
}

export interface SandboxCall {
  readonly n: number;
  readonly method: string;
  readonly status: number;
  readonly error: string | null;
}

export interface SlackSandboxOptions {
  readonly port?: number;
  /** The bearer token the sandbox accepts (default `xoxb-sandbox`), a bot token of the app `A0SANDBOX`. */
  readonly token?: string;
  /** Other tokens the sandbox accepts and who each acts as (another app's bot, a person's user token). */
  readonly others?: Readonly<Record<string, SandboxIdentity>>;
  /** Conversations that exist and the app is a member of (default `['C0SANDBOX1']`). */
  readonly channels?: readonly string[];
  /** Messages present before the first call (e.g. ones chat.update can edit). */
  readonly seed?: readonly { readonly channel: string; readonly ts: string; readonly text: string }[];
  /** How long after posting a message history shows it (default 0). */
  readonly historyDelayMs?: number;
  /** Most messages one history page returns (default 15, Slack's limit for non-Marketplace apps). */
  readonly historyPageMax?: number;
  /** History calls allowed per minute before a 429 (default: no limit; Slack: 1 for non-Marketplace apps). */
  readonly historyCallsPerMinute?: number;
  /** Scripted answers per method, one per call. */
  readonly faults?: Partial<Record<SlackMethod, CallScript<SandboxFault>>>;
  readonly now?: ClockSource;
}

export interface SlackSandbox {
  readonly url: string;
  /** Messages posted through chat.postMessage ('chat.postMessage') or edited by chat.update ('chat.update'). */
  count(method: 'chat.postMessage' | 'chat.update' | string): number;
  /** Calls of a method the sandbox received (all answers). */
  calls(method: SlackMethod): number;
  messages(): readonly SandboxMessage[];
  requests(): readonly SandboxCall[];
  setFaults(method: SlackMethod, script: CallScript<SandboxFault> | undefined): void;
  advance(ms: number): void;
  close(): Promise<void>;
}

const MAX_TEXT = 40_000;
type Args = Record<string, unknown>;
const SANDBOX_BOT: SandboxIdentity = { userId: 'U0SANDBOXBOT', botId: 'B0SANDBOX', appId: 'A0SANDBOX' };

/** A message's poster fields as Slack returns them (absent ones left out). */
const posterFields = (p: SandboxIdentity | null) => ({
  ...(p ? { user: p.userId } : {}),
  ...(p?.botId ? { bot_id: p.botId } : {}),
  ...(p?.appId ? { app_id: p.appId } : {}),
});

/** What the sandbox holds: the conversations, their messages, the clock and the history limit's window. */
interface State {
  readonly channels: ReadonlySet<string>;
  readonly messages: SandboxMessage[];
  readonly clock: SandboxClock;
  readonly delayMs: number;
  readonly pageMax: number;
  readonly historyCallsPerMinute: number | undefined;
  lastTs: number;
  historyWindow: { start: number; calls: number };
}

/** Slack's methods accept form-encoded or JSON bodies; the SDK sends forms whose objects are JSON strings. */
function readArgs(req: LoopbackRequest): Args {
  const type = String(req.headers['content-type'] ?? '');
  if (type.includes('application/json')) return JSON.parse(req.rawBody || '{}') as Args;
  const args: Args = {};
  for (const [k, v] of new URLSearchParams(req.rawBody)) args[k] = v;
  return args;
}

const INVALID = Symbol('invalid JSON');
function jsonField(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return INVALID;
  }
}

const flag = (v: unknown) => v === true || v === 'true' || v === '1';
const ok = (body: Args): Reply => ({ status: 200, body: { ok: true, ...body } });
const fail = (error: string): Reply => ({ status: 200, body: { ok: false, error } });
const rateLimited = (retryAfterS: number): Reply => ({
  status: 429,
  headers: { 'retry-after': String(retryAfterS) },
  body: { ok: false, error: 'ratelimited' },
});

/** A unique, increasing message timestamp from the sandbox clock (Slack's `ts` is the message id), in Slack's one
 * spelling (ten digits, six decimals) even on a clock started near 0, as chat.update takes no other. */
function nextTs(state: State): string {
  const micros = Math.max(state.clock.now() * 1000, state.lastTs + 1);
  state.lastTs = micros;
  return (micros / 1_000_000).toFixed(6).padStart(17, '0');
}

function contentProblem(args: Args): string | null {
  const text = typeof args.text === 'string' ? args.text : '';
  if (text === '' && args.blocks === undefined) return 'no_text';
  if (text.length > MAX_TEXT) return 'msg_too_long';
  if (args.blocks !== undefined && !Array.isArray(jsonField(args.blocks))) return 'invalid_blocks';
  return null;
}

function readMetadata(raw: unknown): SandboxMessage['metadata'] | string {
  if (raw === undefined) return null;
  const m = jsonField(raw) as { event_type?: unknown; event_payload?: unknown };
  if (typeof m !== 'object' || m === null) return 'invalid_metadata_format';
  if (typeof m.event_type !== 'string' || typeof m.event_payload !== 'object' || m.event_payload === null)
    return 'invalid_metadata_schema';
  return { event_type: m.event_type, event_payload: m.event_payload as Record<string, unknown> };
}

function postMessage(state: State, args: Args, poster: SandboxIdentity): Reply {
  const channel = String(args.channel ?? '');
  if (!state.channels.has(channel)) return fail('channel_not_found');
  const problem = contentProblem(args);
  if (problem) return fail(problem);
  const metadata = readMetadata(args.metadata);
  if (typeof metadata === 'string') return fail(metadata);
  const ts = nextTs(state);
  const message: SandboxMessage = {
    channel,
    ts,
    text: String(args.text ?? ''),
    blocks: jsonField(args.blocks) ?? null,
    metadata,
    poster,
    postedAt: state.clock.now(),
    seeded: false,
    edited: false,
  };
  state.messages.push(message);
  const shown = { type: 'message', text: message.text, ts, ...posterFields(poster), ...(metadata ? { metadata } : {}) };
  return ok({ channel, ts, message: shown });
}

function update(state: State, args: Args): Reply {
  const channel = String(args.channel ?? '');
  if (!state.channels.has(channel)) return fail('channel_not_found');
  const message = state.messages.find((m) => m.channel === channel && m.ts === args.ts);
  if (!message) return fail('message_not_found');
  const problem = contentProblem(args);
  if (problem) return fail(problem);
  message.text = String(args.text ?? '');
  if (args.blocks !== undefined) message.blocks = jsonField(args.blocks);
  message.edited = true;
  return ok({ channel, ts: message.ts, text: message.text });
}

/** Newest first inside [oldest, latest), a cursor over the rest; metadata only when asked for. */
function history(state: State, args: Args): Reply {
  const channel = String(args.channel ?? '');
  if (!state.channels.has(channel)) return fail('channel_not_found');
  const limit = Math.min(Number(args.limit ?? state.pageMax) || state.pageMax, state.pageMax);
  const inclusive = flag(args.inclusive);
  const oldest = Number(args.oldest ?? 0);
  const latest = args.latest === undefined ? Infinity : Number(args.latest);
  const inWindow = (ts: number) => (inclusive ? ts >= oldest && ts <= latest : ts > oldest && ts < latest);
  const now = state.clock.now();
  const visible = state.messages
    .filter((m) => m.channel === channel && (m.seeded || m.postedAt + state.delayMs <= now) && inWindow(Number(m.ts)))
    .sort((a, b) => Number(b.ts) - Number(a.ts));
  const offset =
    typeof args.cursor === 'string' && args.cursor ? Number(Buffer.from(args.cursor, 'base64url').toString()) : 0;
  const more = offset + limit < visible.length;
  const withMetadata = flag(args.include_all_metadata);
  const messages = visible.slice(offset, offset + limit).map((m) => ({
    type: 'message',
    ts: m.ts,
    text: m.text,
    ...posterFields(m.poster),
    ...(withMetadata && m.metadata ? { metadata: m.metadata } : {}),
    ...(m.edited ? { edited: { ts: m.ts } } : {}),
  }));
  return ok({
    messages,
    has_more: more,
    response_metadata: { next_cursor: more ? Buffer.from(String(offset + limit)).toString('base64url') : '' },
  });
}

/** Slack's history limit for non-Marketplace apps: so many calls a minute, then a 429 until the minute is over. */
function historyLimited(state: State): Reply | null {
  if (state.historyCallsPerMinute === undefined) return null;
  const now = state.clock.now();
  if (now - state.historyWindow.start >= 60_000) state.historyWindow = { start: now, calls: 0 };
  if (state.historyWindow.calls < state.historyCallsPerMinute) {
    state.historyWindow.calls++;
    return null;
  }
  return rateLimited(Math.max(1, Math.ceil((state.historyWindow.start + 60_000 - now) / 1000)));
}

/** "Checks authentication & identity": a bot token's answer names its bot (bot_id), a user token's only its user. */
const authTest = (_: State, __: Args, who: SandboxIdentity): Reply =>
  ok({
    url: 'https://sandbox.slack.test/',
    team: 'Sandbox',
    team_id: 'T0SANDBOX',
    user_id: who.userId,
    ...(who.botId ? { bot_id: who.botId } : {}),
  });

const METHODS: Readonly<Record<SlackMethod, (state: State, args: Args, who: SandboxIdentity) => Reply>> = {
  'chat.postMessage': postMessage,
  'chat.update': update,
  'conversations.history': history,
  'auth.test': authTest,
};

function createState(options: SlackSandboxOptions): State {
  const state: State = {
    channels: new Set(options.channels ?? ['C0SANDBOX1']),
    messages: [],
    clock: createSandboxClock(options.now, 'slack sandbox'),
    delayMs: options.historyDelayMs ?? 0,
    pageMax: options.historyPageMax ?? 15,
    historyCallsPerMinute: options.historyCallsPerMinute,
    lastTs: 0,
    historyWindow: { start: 0, calls: 0 },
  };
  for (const s of options.seed ?? [])
    state.messages.push({ ...s, blocks: null, metadata: null, poster: null, postedAt: 0, seeded: true, edited: false });
  return state;
}

export async function startSlackSandbox(options: SlackSandboxOptions = {}): Promise<SlackSandbox> {
  const tokens = new Map(Object.entries({ ...options.others, [options.token ?? 'xoxb-sandbox']: SANDBOX_BOT }));
  const state = createState(options);
  const faults = createFaultScripts<SlackMethod, SandboxFault>('pass', options.faults ?? {});
  const log = createRequestLog<SandboxCall>('slack sandbox');

  // Slack's order: authentication, rate limits, then the method; a scripted fault may apply the call first.
  function call(method: SlackMethod, req: LoopbackRequest): Reply {
    const who = tokens.get(req.headers.authorization?.replace(/^Bearer /, '') ?? '');
    if (!who) return fail('invalid_auth');
    const { fault } = faults.take(method);
    if (fault !== 'pass' && fault.kind === 'ratelimited') return rateLimited(fault.retryAfterS);
    const limited = method === 'conversations.history' ? historyLimited(state) : null;
    if (limited) return limited;
    let args: Args;
    try {
      args = readArgs(req);
    } catch {
      return fail('invalid_arguments');
    }
    if (fault === 'pass') return METHODS[method](state, args, who);
    if (fault.commit) METHODS[method](state, args, who);
    return fault.kind === 'error'
      ? fail(fault.error)
      : { status: fault.status, body: { ok: false, error: 'internal_error' } };
  }

  const routes: readonly Route<Reply>[] = (Object.keys(METHODS) as SlackMethod[]).map((m) => ({
    method: 'POST',
    path: `/api/${m}`,
    handle: (req) => call(m, req),
  }));
  const server = await startLoopbackServer({
    port: options.port ?? 0,
    handle: (req) => routeRequest(routes, req)?.value ?? { status: 404, body: { ok: false, error: 'unknown_method' } },
    headers: () => ({ 'x-slack-req-id': `sandbox-${log.entries.length + 1}` }),
    onReply: (req, reply) => {
      const body = reply.body as { error?: unknown } | undefined;
      log.record({
        method: req.path.replace(/^\/api\//, ''),
        status: reply.status,
        error: typeof body?.error === 'string' ? body.error : null,
      });
    },
  });

  return {
    url: server.url,
    count: (method) =>
      state.messages.filter((m) => (method === 'chat.update' ? m.edited : method === 'chat.postMessage' && !m.seeded))
        .length,
    calls: (method) => log.count((e) => e.method === method),
    messages: () => state.messages,
    requests: () => log.entries,
    setFaults: (method, script) => faults.set(method, script),
    advance: (ms) => state.clock.advance(ms),
    close: () => server.close(),
  };
}
