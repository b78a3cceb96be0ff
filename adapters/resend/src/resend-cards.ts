import { type Duration, defineCard, fact, type ProviderKeyRule, type RetrySafetyCard } from '@retrysafe/contract';

/** Where the facts come from: Resend's public pages and the SDK's published source. */
export const RESEND_SOURCES = {
  idempotency: 'https://resend.com/docs/dashboard/emails/idempotency-keys',
  errors: 'https://resend.com/docs/api-reference/errors',
  rateLimit: 'https://resend.com/docs/api-reference/rate-limit',
  sendEmail: 'https://resend.com/docs/api-reference/emails/send-email',
  sendBatch: 'https://resend.com/docs/api-reference/emails/send-batch-emails',
  retrieveEmail: 'https://resend.com/docs/api-reference/emails/retrieve-email',
  sdk: 'https://unpkg.com/resend@6.38.0/dist/index.mjs (Resend.fetchRequest, Resend.post: one fetch per call, no retry; a failed fetch returns error.statusCode null)',
} as const;

// Resend documents only the length (256); the business-operation id alphabet is safe in a header. Each
// endpoint gets its own prefix, as Resend does not say whether a key is scoped per endpoint.
export const EMAILS_SEND_KEY_RULE: ProviderKeyRule = { maxLength: 256, charset: 'A-Za-z0-9._:/-', prefix: 'rs-email-' };
export const BATCH_SEND_KEY_RULE: ProviderKeyRule = { maxLength: 256, charset: 'A-Za-z0-9._:/-', prefix: 'rs-batch-' };

const S = RESEND_SOURCES;

/** The Idempotency-Key as Resend documents it (the same for both sends). */
const PROVIDER_KEY = {
  travels: fact(
    'header',
    `${S.idempotency}; SDK request option { idempotencyKey } sets the Idempotency-Key header (${S.sdk})`,
  ),
  name: fact('Idempotency-Key', S.idempotency),
  maxLength: fact(
    256,
    `${S.idempotency}: "up to 256 characters"; ${S.errors}: invalid_idempotency_key, "between 1-256 chars"`,
  ),
  charset: fact(
    'A-Za-z0-9._:/-',
    `retrysafe choice: Resend documents only the length (${S.idempotency}); the key is a per-endpoint prefix + the business-operation id, or a SHA-256 digest of it`,
  ),
  scope: fact(
    'unknown',
    `${S.idempotency} says a key "should be unique per API request" and names both endpoints, not whether one key is shared between them or scoped per team`,
  ),
  caseSensitive: fact<boolean>('unknown', `${S.idempotency} documents the length, not how keys are compared`),
} satisfies RetrySafetyCard['providerKey'];

/** What Resend's pages leave open, for both sends. */
const UNVERIFIED = [
  {
    field: 'ids.request',
    condition: 'whether Resend answers with a request id (none is documented)',
    source: S.errors,
  },
  {
    field: 'providerKey.scope',
    condition:
      "whether a key is shared between POST /emails and POST /emails/batch, and per team or per API key (the adapter prefixes each endpoint's keys differently)",
    source: S.idempotency,
  },
  {
    field: 'providerKey.charset',
    condition:
      'which characters Resend accepts in Idempotency-Key (undocumented; the adapter sends only A-Za-z0-9._:/-)',
    source: S.idempotency,
  },
  {
    field: 'providerKey.caseSensitive',
    condition:
      'whether Resend tells Idempotency-Keys apart by letter case (undocumented; an id with an upper-case letter is sent as a digest)',
    source: S.idempotency,
  },
  {
    field: 'storedResult.includesErrors',
    condition: 'whether an error answer is stored and replayed under the key, or the key is released',
    source: S.idempotency,
  },
  {
    field: 'lookup.lateApplyBound',
    condition:
      'how long after a client timeout Resend may still send the email; inside retention the same key folds a late request into the first, past it nothing can tell',
    source: S.idempotency,
  },
] satisfies RetrySafetyCard['unverified'];

/** The facts both sends share; the operation-specific ones are filled in per card. */
function resendCard(spec: {
  operation: string;
  kindSource: string;
  intentField: string;
  intentRule: string;
}): RetrySafetyCard {
  return {
    cardVersion: 1,
    provider: 'resend',
    operation: `resend.${spec.operation}`,
    sideEffect: {
      kind: fact('send', spec.kindSource),
      idempotentByNature: fact(false, `${S.idempotency}: without a key each request sends the email again`),
      rejectionMayCreate: fact(
        false,
        `${S.errors}: "standard HTTP response codes for success and failure notifications", each 4xx a failure of the request; ${S.idempotency}: only a successful response returns "the email ID of the sent email"`,
      ),
    },
    businessOperationId: {
      rule: spec.intentRule,
      intentFields: [spec.intentField],
      normalize: [
        {
          field: spec.intentField,
          steps: ['trim'],
          source: `retrysafe policy: the caller’s own name, which reaches Resend only inside the key (${S.idempotency}), so its equality is retrysafe’s; surrounding white space is formatting, while case and inner white space are kept apart (docs/concepts.md, Normalisation)`,
        },
      ],
    },
    ids: {
      run: 'receipts only (never sent to Resend)',
      attempt: 'receipts only (never sent to Resend)',
      request: fact(
        'unknown',
        `${S.errors} and ${S.sendEmail} name no request-id header; the email id of the answer is kept as the provider reference`,
      ),
    },
    providerKey: PROVIDER_KEY,
    keyReuse: fact(
      "only to re-send the identical request (same endpoint, same payload) while its outcome is unknown and the key is younger than 24 h minus twice the policy's clock-skew margin (limits.clockSkewMargin, 10 min: once for clock skew, once for a late apply, which Resend does not bound); never past retention (a forgotten key sends the email again)",
      S.idempotency,
    ),
    parameterMatching: fact(
      'mismatch-error',
      `${S.idempotency}; ${S.errors}: 409 invalid_idempotent_request, "Same idempotency key used with a different request payload"`,
    ),
    storedResult: {
      semantics: fact(
        'replays',
        `${S.idempotency}: "you can make the same request and our API will give the same response, without actually sending the email again"; a successful response returns the email id of the sent email`,
      ),
      includesErrors: fact<boolean>(
        'unknown',
        `${S.idempotency} describes the replay of a sent email only; whether an error answer is stored under the key is not stated`,
      ),
      replayIndicator: fact(
        null,
        `${S.idempotency} names no header marking a replay: the replayed answer is the first one (same email id)`,
      ),
    },
    lookup: {
      method: fact(
        'none',
        `Resend has no lookup by key or by a value of ours: ${S.retrieveEmail} reads an email only by the id the lost answer carried. Inside retention the runner re-sends the identical request with the same key instead (${S.idempotency}: the same answer, the same email id, nothing sent again); past it, it hands off`,
      ),
      consistencyDelay: fact(
        null,
        `no lookup; a re-send with the same key is answered from the key store (${S.idempotency})`,
      ),
      lateApplyBound: fact<Duration>(
        'unknown',
        `${S.idempotency} and ${S.errors} state the key's retention and the conflict answers, not how long Resend may still process a request after the client gave up`,
      ),
    },
    retention: {
      minimum: fact<Duration>('24h', `${S.idempotency}: "We keep idempotency keys in our system for 24 hours"`),
    },
    concurrency: fact(
      'rejects-in-progress',
      `${S.idempotency}; ${S.errors}: 409 concurrent_idempotent_requests, "Same idempotency key used while original request is still in progress", "Try the request again later"`,
    ),
    retryableErrors: fact(
      [
        '429 rate_limit_exceeded: bounded retry with the same key, retry-after (else ratelimit-reset) honoured',
        '409 concurrent_idempotent_requests: in progress, re-send with the same key later',
        'no answer (SDK error.statusCode null: timeout, reset, refused) / 5xx: unknown, only through a same-key re-send inside retention',
      ],
      `${S.rateLimit}; ${S.errors}; ${S.sdk}`,
    ),
    nonRetryableErrors: fact(
      [
        '400 validation_error / invalid_idempotency_key',
        '401 missing_api_key / restricted_api_key',
        '403 invalid_api_key / invalid_from_address / validation_error',
        '404 not_found',
        '409 invalid_idempotent_request (same key, other payload)',
        '422 missing_required_field / invalid_attachment / invalid_parameter',
        '429 daily_quota_exceeded / monthly_quota_exceeded (resets after hours, not within the retry budget)',
      ],
      S.errors,
    ),
    backoff: { strategy: 'exponential-full-jitter', base: '500ms', cap: '5s', retryAfterCap: '60s' },
    limits: { maxAttempts: 4, maxElapsed: '2m', lookupWindow: '1m', clockSkewMargin: '10m' },
    retryLayer: {
      layer: 'runner',
      sdkRetries: 'disabled',
      how: `the resend SDK has no retry of its own (${S.sdk}): one fetch per call, every error returned as { error }, never thrown; the adapter sends each attempt as one SDK call with its own timeout signal, and the drill counts requests at the sandbox`,
    },
    reconciler:
      "the runner, by re-sending: while the key is reusable (younger than 24 h minus twice the policy's clock-skew margin of 10 min) it re-sends the same request with the same Idempotency-Key and adopts the answer (the same email id); past that it never relies on the key and hands off, since Resend offers no lookup without the email id",
    handoff: {
      condition:
        "rejected (validation, auth, key reused with another payload, quota); retry budget exhausted; unknown past the key's retention (no lookup without the email id)",
      destination: "the runner's handoff sink (JSONL file or callback); resolved with `retrysafe ledger resolve`",
    },
    duplicateTest:
      'real resend SDK → testkit fault proxy → loopback Resend sandbox (@retrysafe/resend/sandbox); emails and requests counted at the sandbox',
    receipts: "the runner's ledger (one receipt per attempt and lookup, redacted), exportable as JSONL",
    unverified: UNVERIFIED,
  };
}

export const emailsSendCard = defineCard(
  resendCard({
    operation: 'emails.send',
    kindSource: S.sendEmail,
    intentField: 'emailRef',
    intentRule:
      "derived from intent field emailRef (the caller's own name for this email, e.g. welcome-user/123, the <event-type>/<entity-id> form Resend suggests for keys), or supplied by the caller; never sent to Resend except inside the key",
  }),
);

export const batchSendCard = defineCard(
  resendCard({
    operation: 'batch.send',
    kindSource: S.sendBatch,
    intentField: 'batchRef',
    intentRule:
      "derived from intent field batchRef (the caller's own name for the whole batch, as Resend suggests a key that represents the batch), or supplied by the caller; never sent to Resend except inside the key",
  }),
);

/** Every card, keyed by the operation's short name. */
export const resendCards = {
  'emails.send': emailsSendCard,
  'batch.send': batchSendCard,
} as const satisfies Record<string, RetrySafetyCard>;
