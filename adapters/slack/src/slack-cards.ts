import { type Duration, defineCard, fact, type RetrySafetyCard } from '@retrysafe/contract';

/** Where the facts come from: Slack's public documentation, and the SDK source for its retries. */
export const SOURCES = {
  postMessage: 'https://docs.slack.dev/reference/methods/chat.postMessage',
  update: 'https://docs.slack.dev/reference/methods/chat.update',
  metadata: 'https://docs.slack.dev/messaging/message-metadata',
  history: 'https://docs.slack.dev/reference/methods/conversations.history',
  rateLimits: 'https://docs.slack.dev/apis/web-api/rate-limits',
  // "The bot_id tells you which bot sent this message"; auth.test "tells you who you are, even if you might be a bot".
  botId: 'https://docs.slack.dev/reference/events/message/bot_message',
  authTest: 'https://docs.slack.dev/reference/methods/auth.test',
  // Slack's own OpenAPI description of chat.update, whose blocks argument says what an update without blocks keeps.
  updateSpec: 'https://github.com/slackapi/slack-api-specs/blob/master/web-api/slack_web_openapi_v2.json',
  sdkRetries:
    '@slack/web-api 8.2.0 dist/WebClient.js makeRequest (p-retry with retryConfig, default tenRetriesInAboutThirtyMinutes: 10 re-POSTs; a 429 pauses the queue and retries unless rejectRateLimitedCalls)',
} as const;

// Slack answers carry an x-slack-req-id header, but no public page documents it as a request id.
const REQUEST_ID_UNVERIFIED = {
  field: 'ids.request',
  condition: 'whether the x-slack-req-id response header is a stable request id Slack support can trace',
  source: SOURCES.rateLimits,
} as const;

/** The facts both methods share: no key travels, nothing is stored, the runner is the one retrying layer. */
function shared(method: string) {
  return {
    cardVersion: 1,
    provider: 'slack',
    ids: {
      run: 'receipts only',
      attempt: 'receipts only',
      request: fact<string>(
        'unknown',
        `${SOURCES.rateLimits}: no request id documented (the adapter keeps x-slack-req-id when an HTTP error carries it)`,
      ),
    },
    parameterMatching: fact('none', method),
    storedResult: { semantics: fact('none', method), includesErrors: fact(false, method) },
    retryableErrors: fact(
      [
        'HTTP 429 ratelimited with Retry-After (Retry-After honoured by the runner)',
        'request_timeout ("the POST data was either missing or truncated"), team_added_to_org and org_login_required (the workspace is migrating; try again after): not processed',
        'connection refused / DNS failure / a connect that timed out (never sent)',
      ],
      `${SOURCES.rateLimits}; ${method}`,
    ),
    backoff: { strategy: 'exponential-full-jitter', base: '1s', cap: '30s', retryAfterCap: '2m' },
    retryLayer: {
      layer: 'runner',
      sdkRetries: 'disabled',
      how: 'new WebClient(token, { retryConfig: { retries: 0 }, rejectRateLimitedCalls: true }): no p-retry re-POST and no queue pause on 429. The drill counts requests at the loopback sandbox; a negative control shows the SDK default re-posting chat.postMessage after a lost answer.',
    },
    duplicateTest:
      'loopback Slack Web API sandbox (@retrysafe/slack/sandbox) with the real @slack/web-api WebClient pointed at it, behind the testkit fault proxy; the sandbox counts the messages it holds and the calls it received',
    receipts:
      'the runner ledger, exported as JSONL; message text and blocks are sensitive fields and never reach receipts or packets',
  } as const;
}
const noKey = (method: string) => ({
  name: fact(null, method),
  maxLength: fact(null, method),
  charset: fact(null, method),
});
const HANDOFF_DESTINATION = 'the runner handoff sink (JSONL file or callback), resolved by a person from the CLI';

export const postMessageCard = defineCard({
  ...shared(SOURCES.postMessage),
  operation: 'slack.chat.postMessage',
  sideEffect: {
    kind: fact('send', SOURCES.postMessage),
    idempotentByNature: fact(false, `${SOURCES.postMessage}: every call sends one more message`),
    rejectionMayCreate: fact(
      false,
      `${SOURCES.postMessage}: of its Errors, only internal_error and fatal_error say some aspect of the operation may have succeeded, and the adapter reads those as unknown, never as a refusal`,
    ),
  },
  businessOperationId: {
    rule: 'derived from intent fields channel, text and blocks when given (one content in one conversation), or given by the caller',
    // Exact: the text and blocks are what people read; another spelling is another message. With blocks the text is
    // only the notification fallback, so two posts of one fallback text with other blocks are two messages.
    intentFields: ['channel', 'text', 'blocks'],
    optionalIntentFields: ['blocks'],
  },
  // unfurl_links and unfurl_media stay exact: the page names no default for them (unfurling differs for apps).
  paramComparison: [
    {
      field: 'mrkdwn',
      compare: 'normalized',
      providerDefault: true,
      source: `${SOURCES.postMessage}: mrkdwn "Disable Slack markup parsing by setting to false. Enabled by default.", so true and none are one message (false stays another)`,
      evidence: SOURCES.postMessage,
    },
  ],
  providerKey: {
    travels: fact('none', `${SOURCES.postMessage}: the method takes no idempotency key or client id`),
    ...noKey(SOURCES.postMessage),
    scope: fact(
      'none: Slack folds no re-posts; the business-operation id travels only as a lookup tag (message metadata event_type retrysafe_operation, event_payload.op)',
      SOURCES.metadata,
    ),
  },
  keyReuse: fact('no key exists: every chat.postMessage that reaches Slack is one more message', SOURCES.postMessage),
  lookup: {
    method: fact(
      'search',
      `${SOURCES.history}: include_all_metadata=true returns each message's metadata, oldest bounds the window; ${SOURCES.metadata}: metadata posted with the message; ${SOURCES.botId}: a message's bot_id names the bot that sent it, ${SOURCES.authTest}: the token's own`,
    ),
    consistencyDelay: fact<Duration | null>(
      'unknown',
      `${SOURCES.history}: no delay between posting and appearing in history is documented`,
    ),
    lateApplyBound: fact<Duration>('unknown', `${SOURCES.postMessage}: no server-side request deadline is documented`),
  },
  retention: { minimum: fact(null, `${SOURCES.postMessage}: nothing is stored for a re-post`) },
  concurrency: fact(
    'duplicates',
    `${SOURCES.postMessage}: no idempotency key, so concurrent posts are separate messages`,
  ),
  nonRetryableErrors: fact(
    [
      'channel_not_found, not_in_channel, is_archived (field channel)',
      'msg_too_long, no_text (field text); invalid_blocks (field blocks); invalid_metadata_format, invalid_metadata_schema, metadata_too_large (field metadata)',
      'invalid_auth, not_authed, account_inactive, token_revoked, token_expired, not_allowed_token_type, two_factor_setup_required (authentication); missing_scope, no_permission, restricted_action, restricted_action_read_only_channel, restricted_action_thread_only_channel, access_denied, accesslimited, ekm_access_denied, enterprise_is_restricted, team_access_not_granted (permission)',
      'method_deprecated, deprecated_endpoint, invalid_arg_name, invalid_array_arg, invalid_charset, invalid_form_data, invalid_post_type, missing_post_type (configuration: the request itself is malformed)',
      'internal_error, fatal_error ("it is possible some aspect of the operation succeeded"), service_unavailable (not said whether processed), HTTP 5xx, timeout, reset, unreadable body: unknown ⇒ history lookup, never re-posted',
    ],
    SOURCES.postMessage,
  ),
  // The lookup window covers several once-a-minute history calls (the non-Marketplace limit).
  limits: { maxAttempts: 3, maxElapsed: '10m', lookupWindow: '5m', clockSkewMargin: '1m' },
  reconciler:
    'the runner, through doLookup: conversations.history of the channel with include_all_metadata=true, from the first dispatch minus the clock-skew margin to the last dispatch plus the client timeout and the margin, limit 15, a bounded number of pages, at most one lookup a minute (non-Marketplace apps: 1 call/min, 15 messages a page); a walk cut off by a refused page or the page bound goes on from there at the next lookup, after the Retry-After; the one message posted by this token’s bot (its bot_id, read once with auth.test) whose metadata carries this business-operation id is adopted, two are "cannot tell"; a user token (auth.test names no bot_id) never adopts; an empty answer is "cannot tell", never "not sent"',
  handoff: {
    condition:
      'rejected; or an unknown outcome (timeout, reset, internal_error, 5xx, lost answer) whose message is not found in the channel history within the lookup window — the runner never re-posts blindly; or not-applied beyond max attempts / max elapsed',
    destination: HANDOFF_DESTINATION,
  },
  unverified: [
    REQUEST_ID_UNVERIFIED,
    {
      field: 'lookup.consistencyDelay',
      condition: 'how long after chat.postMessage answers ok the message is returned by conversations.history',
      source: SOURCES.history,
    },
    {
      field: 'lookup.lateApplyBound',
      condition: 'how long after the client gave up Slack may still post the message',
      source: SOURCES.postMessage,
    },
    {
      field: 'lookup.method',
      condition: 'the history lookup by metadata is exercised against the loopback sandbox only, not a live workspace',
      source: SOURCES.history,
    },
    {
      field: 'lookup.method',
      condition:
        "that history returns bot_id on a message a bot token posted (the SDK's MessageElement and Bolt's ignoreSelf use it; Slack's documented example is the bot_message event)",
      source: SOURCES.botId,
    },
  ],
} as const satisfies RetrySafetyCard);

export const updateCard = defineCard({
  ...shared(SOURCES.update),
  operation: 'slack.chat.update',
  sideEffect: {
    kind: fact('set', SOURCES.update),
    idempotentByNature: fact(
      true,
      `${SOURCES.update}; ${SOURCES.updateSpec}: sets the message's text, and its blocks when given ("If you don't include this field, the message's previous blocks will be retained"; [] removes them); a second identical call leaves the same content`,
    ),
    rejectionMayCreate: fact(false, `${SOURCES.update}: updates the message its ts names; it posts none`),
  },
  businessOperationId: {
    rule: 'derived from intent fields channel and ts (the message; ts only as Slack writes it, ten digits, a point and six, its OpenAPI description’s defs_ts, so one message has one id), or given by the caller; the content it is set to (text, blocks) is params. Other content once it is done is its next revision, sent, in the order calls arrive (a retry of an earlier change arriving after a later one is sent again); the same content again is a retry, answered from the ledger and not sent, even when the message was edited outside retrysafe in between (A, B edited in Slack, A again): give each change its own business-operation id where either matters',
    intentFields: ['channel', 'ts'],
  },
  providerKey: {
    travels: fact('none', `${SOURCES.update}: the method takes no idempotency key`),
    ...noKey(SOURCES.update),
    scope: fact(
      'none: the message (channel, ts) is the identity; setting the same content twice is the same message',
      SOURCES.update,
    ),
  },
  keyReuse: fact('no key: a re-send sets the same content on the same message', SOURCES.update),
  lookup: {
    method: fact(
      'none',
      `${SOURCES.update}: idempotent by nature, an unknown outcome is settled by re-sending the same content`,
    ),
    consistencyDelay: fact<Duration | null>(null, SOURCES.update),
    lateApplyBound: fact<Duration>('unknown', `${SOURCES.update}: no server-side request deadline is documented`),
  },
  retention: { minimum: fact(null, SOURCES.update) },
  concurrency: fact('last-write-wins', `${SOURCES.update}: each call sets the content it names; the last one stays`),
  nonRetryableErrors: fact(
    [
      'channel_not_found (field channel)',
      'message_not_found, cant_update_message, edit_window_closed (field ts)',
      'msg_too_long, no_text (field text); invalid_blocks (field blocks)',
      'invalid_auth, not_authed, account_inactive, token_revoked, token_expired, not_allowed_token_type, two_factor_setup_required (authentication); missing_scope, no_permission, access_denied, accesslimited, ekm_access_denied, enterprise_is_restricted, team_access_not_granted (permission)',
      'method_deprecated, deprecated_endpoint, invalid_arg_name, invalid_array_arg, invalid_charset, invalid_form_data, invalid_post_type, missing_post_type (configuration: the request itself is malformed)',
      'internal_error, fatal_error, service_unavailable, HTTP 5xx, timeout, reset: unknown ⇒ re-sent (the same content again is harmless)',
    ],
    SOURCES.update,
  ),
  limits: { maxAttempts: 3, maxElapsed: '5m', lookupWindow: '2m' },
  reconciler: 'the runner re-sends the same content (idempotent by nature); no lookup',
  handoff: {
    condition: 'rejected; or not-applied / unknown beyond max attempts or max elapsed',
    destination: HANDOFF_DESTINATION,
  },
  unverified: [
    REQUEST_ID_UNVERIFIED,
    {
      field: 'lookup.lateApplyBound',
      condition:
        'how long after the client gave up Slack may still apply the edit (the same content again is harmless)',
      source: SOURCES.update,
    },
  ],
} as const satisfies RetrySafetyCard);

export const slackCards = {
  'chat.postMessage': postMessageCard,
  'chat.update': updateCard,
} as const;
