import {
  type ConcurrencyBehaviour,
  type Duration,
  defineCard,
  type FieldNormalization,
  fact,
  type RetrySafetyCard,
} from '@retrysafe/contract';

// One reference card per pattern, each fact cited to the pattern's specification or, where it leaves the server a
// choice, to the loopback sandbox. A user copies one and replaces every sandbox fact with their API's documentation.
const SOURCES = {
  ietf: 'draft-ietf-httpapi-idempotency-key-header-06 (https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/)',
  rfc8941: 'RFC 8941 §3.3.3 sf-string (https://www.rfc-editor.org/rfc/rfc8941#section-3.3.3)',
  azure:
    'Azure Architecture Center, Asynchronous Request-Reply pattern (https://learn.microsoft.com/azure/architecture/patterns/async-request-reply)',
  gcsRetry: 'Google Cloud Storage retry strategy (https://cloud.google.com/storage/docs/retry-strategy)',
  gcsPreconditions:
    'Google Cloud Storage request preconditions (https://cloud.google.com/storage/docs/request-preconditions)',
  gcsConsistency:
    'Google Cloud Storage consistency: strong read-after-write (https://cloud.google.com/storage/docs/consistency)',
  ec2Idempotency:
    'Amazon EC2 API idempotency, ClientToken (https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-idempotency.html)',
  awsRel04:
    'AWS Well-Architected REL04-BP04 (https://docs.aws.amazon.com/wellarchitected/latest/reliability-pillar/rel_prevent_interaction_failure_idempotent.html)',
  awsRel05:
    'AWS Well-Architected REL05-BP03 (https://docs.aws.amazon.com/wellarchitected/latest/reliability-pillar/rel_mitigate_interaction_failure_limit_retries.html)',
  ec2Errors: 'Amazon EC2 API error codes (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html)',
  ietfSandbox: 'retrysafe IETF sandbox: adapters/http/src/sandbox/ietf-key-sandbox.ts',
  asyncSandbox: 'retrysafe async request-reply sandbox: adapters/http/src/sandbox/async-reply-sandbox.ts',
  etagSandbox: 'retrysafe ETag sandbox: adapters/http/src/sandbox/etag-sandbox.ts',
  tokenSandbox: 'retrysafe client-token sandbox: adapters/http/src/sandbox/client-token-sandbox.ts',
} as const;

// No pattern bounds how long a server may still apply a request the client gave up on: a not-found never proves absence.
const LATE_APPLY_SOURCE = `${SOURCES.ietf} and ${SOURCES.azure} define no server-side processing deadline; the loopback sandboxes apply a request whenever it arrives`;
const LATE_APPLY_UNVERIFIED = {
  field: 'lookup.lateApplyBound',
  condition:
    "how long after the client gave up the server may still apply the request; a real API's documented request timeout goes here",
  source: SOURCES.ietf,
} as const;

const RETRY_LAYER = {
  layer: 'runner',
  sdkRetries: 'disabled',
  how: 'axios has no retry of its own; the adapter also sets maxRedirects 0 (a followed 307/308 re-sends the POST body), proxy false and a required timeout, and accepts no injected client; the drill counts requests at the sandbox',
} as const;

const POLICY = {
  backoff: { strategy: 'exponential-full-jitter', base: '200ms', cap: '10s', retryAfterCap: '60s' },
  limits: { maxAttempts: 4, maxElapsed: '2m', lookupWindow: '30s' },
  handoff: {
    condition:
      'rejected; attempts or elapsed budget exhausted; unknown outcome with no safe re-send (lookup cannot tell, key past or without retention)',
    destination: 'the runner handoff sink (JSONL file or callback), resolved from the CLI',
  },
  receipts: 'the runner ledger, exported as JSONL (redacted: no headers, no bodies)',
} as const;

/** What differs between the pattern cards; `sandbox` is the source of the sandbox's own facts. */
type PatternParts = Omit<
  RetrySafetyCard,
  'cardVersion' | 'provider' | 'operation' | 'lookup' | keyof typeof POLICY | 'retryLayer' | 'duplicateTest'
> & { readonly sandbox: string; readonly lookup: Omit<RetrySafetyCard['lookup'], 'lateApplyBound'> };

/** A pattern card: the parts given, with the policy, retry layer and late-apply caveat every pattern shares. */
function patternCard(provider: string, name: string, parts: PatternParts): RetrySafetyCard {
  const { sandbox, reconciler, unverified, ...facts } = parts;
  return defineCard({
    cardVersion: 1,
    provider,
    operation: `${provider}.${name}`,
    ...facts,
    lookup: { ...facts.lookup, lateApplyBound: fact<Duration>('unknown', LATE_APPLY_SOURCE) },
    ...POLICY,
    retryLayer: RETRY_LAYER,
    reconciler,
    duplicateTest: `${sandbox}, behind the testkit fault proxy`,
    unverified: [LATE_APPLY_UNVERIFIED, ...unverified],
  });
}

/** The ids a card names: the runner's own only in receipts, the provider's request id from a response header. */
const receiptIds = (header: string, source: string) =>
  ({ run: 'receipts only', attempt: 'receipts only', request: fact(`${header} response header`, source) }) as const;

/** The caller's own reference, trimmed: surrounding white space is formatting. */
const trimmedRef = (field: string, whose: string): FieldNormalization[] => [
  {
    field,
    steps: ['trim'],
    source: `retrysafe policy: the caller’s own ${whose}; surrounding white space is formatting, while compatibility forms, case and inner white space are kept apart as the provider keeps them (docs/concepts.md, Normalisation)`,
  },
];

/** IETF Idempotency-Key: `POST /orders`. */
export function ordersCreateCard(provider: string): RetrySafetyCard {
  return patternCard(provider, 'orders.create', {
    sideEffect: {
      kind: fact('create', SOURCES.ietfSandbox),
      idempotentByNature: fact(false, `${SOURCES.ietf} §1: POST is not idempotent`),
      rejectionMayCreate: fact(false, `${SOURCES.ietfSandbox}: a request it refuses (400, 409, 422) stores no order`),
    },
    businessOperationId: {
      // The reference names the order, as the key does at the provider: another sku or quantity under it is a
      // correction of that order (a conflict, or a new revision), never a second order.
      rule: 'derived from intent fields customer and orderRef (the caller’s order reference); sku and quantity are its parameters',
      intentFields: ['customer', 'orderRef'],
      normalize: trimmedRef('orderRef', 'order reference'),
    },
    sandbox: SOURCES.ietfSandbox,
    ids: receiptIds('x-request-id', SOURCES.ietfSandbox),
    providerKey: {
      travels: fact('header', `${SOURCES.ietf} §2`),
      name: fact('Idempotency-Key', `${SOURCES.ietf} §2`),
      maxLength: fact<number>('unknown', `${SOURCES.ietf} §2.1 defines no maximum length`),
      charset: fact('\\x20-\\x7e', `${SOURCES.rfc8941}: printable ASCII, sent quoted`),
      scope: fact(
        'per method and path (POST /orders)',
        `${SOURCES.ietfSandbox}; the draft (§2.2) leaves the scope to the resource server`,
      ),
      caseSensitive: fact<boolean>('unknown', `${SOURCES.ietf} §2 does not say how a server compares keys`),
    },
    keyReuse: fact(
      'the same request with the same payload, while the key is within the published expiry',
      `${SOURCES.ietf} §2.3, §2.6`,
    ),
    parameterMatching: fact('mismatch-error', `${SOURCES.ietf} §2.7: same key, different payload ⇒ 422`),
    storedResult: {
      semantics: fact('replays', `${SOURCES.ietf} §2.6: after completion the stored result is returned`),
      includesErrors: fact(true, `${SOURCES.ietf} §2.6: the stored result, success or error, is replayed`),
      replayIndicator: fact(null, `${SOURCES.ietf} §2.6 defines no response header that marks a replay`),
    },
    lookup: {
      method: fact('search', `GET /orders?reference=<business-operation id>: ${SOURCES.ietfSandbox}`),
      consistencyDelay: fact(null, SOURCES.ietfSandbox),
    },
    retention: {
      minimum: fact(
        '24h',
        `${SOURCES.ietfSandbox} (published expiry, retentionMs); ${SOURCES.ietf} §2.3 requires a published expiry policy`,
      ),
    },
    concurrency: fact('rejects-in-progress', `${SOURCES.ietf} §2.7: retried while the original is in flight ⇒ 409`),
    retryableErrors: fact(
      [
        '409 request-in-flight (in-progress: wait, then same key)',
        '429 (not-applied; a re-send carries the same key)',
        'ECONNREFUSED (not-applied)',
        'timeout, reset, 5xx (unknown: look up first, then same key)',
      ],
      `${SOURCES.ietf} §2.7; ${SOURCES.ietfSandbox}`,
    ),
    nonRetryableErrors: fact(
      [
        '400 idempotency-key-missing / -malformed (configuration)',
        '400 invalid-order (validation)',
        '409 out-of-stock (other)',
        '422 idempotency-key-reused (conflict)',
      ],
      `${SOURCES.ietf} §2.7; ${SOURCES.ietfSandbox}`,
    ),
    reconciler:
      'the runner, through doLookup: GET /orders?reference=<business-operation id> (the id travels in the order’s reference field)',
    unverified: [
      {
        field: 'providerKey.maxLength',
        condition: 'the draft sets no maximum; the adapter derives keys of at most 64 characters',
        source: `${SOURCES.ietf} §2.1`,
      },
      {
        field: 'providerKey.caseSensitive',
        condition: 'how the server compares keys; an id with an upper-case letter is sent as a digest',
        source: `${SOURCES.ietf} §2`,
      },
    ],
  });
}

/** Asynchronous request-reply: `POST /exports` ⇒ 202 + Location + Retry-After. */
export function exportsCreateCard(provider: string): RetrySafetyCard {
  return patternCard(provider, 'exports.create', {
    sideEffect: {
      kind: fact('async-job', SOURCES.azure),
      idempotentByNature: fact(
        false,
        `${SOURCES.azure}: each POST enqueues a work item unless an Idempotency-Key folds it`,
      ),
      rejectionMayCreate: fact(false, `${SOURCES.asyncSandbox}: a request it refuses (400, 422) enqueues no job`),
    },
    businessOperationId: {
      rule: 'derived from intent fields dataset and requestRef (the caller’s request reference); format is its parameter',
      intentFields: ['dataset', 'requestRef'],
      normalize: trimmedRef('requestRef', 'reference'),
    },
    sandbox: SOURCES.asyncSandbox,
    ids: receiptIds('x-ms-request-id', SOURCES.asyncSandbox),
    providerKey: {
      travels: fact(
        'header',
        `${SOURCES.azure}: "with an Idempotency-Key a duplicate returns the existing status resource"`,
      ),
      name: fact('Idempotency-Key', SOURCES.azure),
      maxLength: fact<number>('unknown', `${SOURCES.azure} does not define the key format`),
      charset: fact('unknown', `${SOURCES.azure} does not define the key format`),
      scope: fact('per server (all POST /exports)', SOURCES.asyncSandbox),
      caseSensitive: fact<boolean>('unknown', `${SOURCES.azure} does not define the key format`),
    },
    keyReuse: fact('the same request with the same payload, while the key is kept (24 h)', SOURCES.asyncSandbox),
    parameterMatching: fact(
      'mismatch-error',
      `${SOURCES.asyncSandbox}: same key, other payload ⇒ 422 IdempotencyKeyReused (the pattern itself does not say)`,
    ),
    storedResult: {
      semantics: fact(
        'replays',
        `${SOURCES.azure}: a duplicate returns the existing status resource instead of enqueuing a second work item`,
      ),
      includesErrors: fact(true, `${SOURCES.azure}: errors are persisted at the status URL`),
    },
    lookup: {
      method: fact(
        'status-url',
        `${SOURCES.azure}: 200 while pending, 303 See Other when done; without a status URL: GET /exports?clientRequestId=… (${SOURCES.asyncSandbox})`,
      ),
      consistencyDelay: fact(null, SOURCES.asyncSandbox),
    },
    retention: { minimum: fact('24h', `${SOURCES.asyncSandbox} (retentionMs)`) },
    concurrency: fact(
      'rejects-in-progress',
      `${SOURCES.azure}: a duplicate gets 202 and the existing status URL, an in-progress answer`,
    ),
    retryableErrors: fact(
      [
        '202 + Location (in-progress: poll, honour Retry-After)',
        '429 (not-applied; a re-send carries the same key)',
        'ECONNREFUSED (not-applied)',
        'timeout, reset, 5xx (unknown: re-send with the same key returns the existing status resource)',
      ],
      `${SOURCES.azure}; ${SOURCES.asyncSandbox}`,
    ),
    nonRetryableErrors: fact(
      [
        '400 InvalidRequest (validation, before acceptance)',
        '400 IdempotencyKeyMissing (configuration)',
        '422 IdempotencyKeyReused (conflict)',
        'persisted 4xx at the status URL (rejected)',
      ],
      `${SOURCES.azure}; ${SOURCES.asyncSandbox}`,
    ),
    reconciler:
      'the runner, through doLookup: GET the status URL; without one (the 202 was lost) GET /exports?clientRequestId=<business-operation id> finds the work item and its status URL; a re-send with the same key, inside retention, also returns the existing status resource',
    unverified: [
      {
        field: 'providerKey.maxLength',
        condition: 'the pattern defines no key format; the adapter derives keys of at most 64 characters',
        source: SOURCES.azure,
      },
      {
        field: 'providerKey.charset',
        condition: 'the pattern defines no key format; the adapter uses A-Za-z0-9._:- only',
        source: SOURCES.azure,
      },
      {
        field: 'providerKey.caseSensitive',
        condition: 'how the server compares keys; an id with an upper-case letter is sent as a digest',
        source: SOURCES.azure,
      },
    ],
  });
}

/** Conditional idempotency: `PUT /documents/{id}` with `If-Match`. */
export function documentsUpdateCard(provider: string): RetrySafetyCard {
  return patternCard(provider, 'documents.update', {
    sideEffect: {
      kind: fact('set', SOURCES.etagSandbox),
      idempotentByNature: fact(false, `${SOURCES.gcsRetry}: conditionally idempotent — only with a precondition`),
      rejectionMayCreate: fact(false, `${SOURCES.etagSandbox}: PUT replaces an existing document; it creates none`),
    },
    businessOperationId: {
      rule: 'derived from intent fields id, etag, title, body: the precondition is part of the intent, so every re-send carries the same If-Match',
      intentFields: ['id', 'etag', 'title', 'body'],
    },
    sandbox: SOURCES.etagSandbox,
    ids: receiptIds('x-guploader-uploadid', SOURCES.etagSandbox),
    providerKey: {
      travels: fact(
        'none',
        `${SOURCES.gcsPreconditions}: no key; the If-Match / ifGenerationMatch precondition makes the write safe to repeat`,
      ),
      name: fact(null, SOURCES.gcsPreconditions),
      maxLength: fact(null, SOURCES.gcsPreconditions),
      charset: fact(null, SOURCES.gcsPreconditions),
      scope: fact('none (the precondition names one version of one resource)', SOURCES.gcsPreconditions),
    },
    keyReuse: fact(
      'no key; a re-send carries the same precondition and is refused (412) once any write has moved the validator',
      SOURCES.gcsPreconditions,
    ),
    parameterMatching: fact('none', SOURCES.gcsPreconditions),
    storedResult: {
      semantics: fact(
        'rejects-duplicate',
        `${SOURCES.gcsPreconditions}: a repeated conditional write fails its precondition (412)`,
      ),
      includesErrors: fact(false, SOURCES.gcsPreconditions),
    },
    lookup: {
      method: fact('get-by-key', `GET /documents/{id}, compare ETag with the sent If-Match: ${SOURCES.etagSandbox}`),
      consistencyDelay: fact(null, SOURCES.gcsConsistency),
    },
    retention: {
      minimum: fact(
        null,
        `${SOURCES.gcsPreconditions}: nothing is stored; the validator guards the write as long as the resource is not changed`,
      ),
    },
    concurrency: fact<ConcurrencyBehaviour>(
      'unknown',
      `${SOURCES.gcsPreconditions}: of two writes with the same precondition one applies and the other gets 412 — a behaviour the card vocabulary has no value for`,
    ),
    retryableErrors: fact(
      [
        '429 (not-applied; a re-send carries the same precondition)',
        '408',
        '5xx',
        'socket timeouts',
        'TCP disconnects (unknown: look up, then same precondition)',
      ],
      `${SOURCES.gcsRetry}: retried only for conditionally idempotent operations with a precondition`,
    ),
    nonRetryableErrors: fact(
      [
        '400 invalid',
        '404 notFound',
        '412 conditionNotMet on the first attempt (conflict)',
        '428 preconditionRequired (configuration)',
      ],
      `${SOURCES.gcsRetry}; ${SOURCES.etagSandbox}`,
    ),
    reconciler:
      'the runner, through doLookup: GET /documents/{id}; the sent ETag still current ⇒ not applied; moved on and showing this write ⇒ applied; moved on otherwise ⇒ another writer (rejected, handoff)',
    unverified: [
      {
        field: 'concurrency',
        condition:
          'known (one conditional write applies, the duplicate gets 412) but not expressible: ConcurrencyBehaviour has no "rejects-duplicate" value, so the card says unknown rather than a wrong value',
        source: SOURCES.gcsPreconditions,
      },
    ],
  });
}

/** AWS-style client token: `POST /instances` with `ClientToken` in the body. */
export function instancesRunCard(provider: string): RetrySafetyCard {
  return patternCard(provider, 'instances.run', {
    sideEffect: {
      kind: fact('create', SOURCES.ec2Idempotency),
      idempotentByNature: fact(false, SOURCES.ec2Idempotency),
      rejectionMayCreate: fact(false, `${SOURCES.tokenSandbox}: a request it refuses (400) launches no instance`),
    },
    businessOperationId: {
      rule: 'derived from intent field launchRef (the caller’s launch reference); imageId and instanceType are its parameters',
      intentFields: ['launchRef'],
      normalize: trimmedRef('launchRef', 'reference'),
    },
    sandbox: SOURCES.tokenSandbox,
    ids: receiptIds('x-amzn-RequestId', SOURCES.tokenSandbox),
    providerKey: {
      travels: fact('body', `${SOURCES.ec2Idempotency}: ClientToken request parameter`),
      name: fact('ClientToken', SOURCES.ec2Idempotency),
      maxLength: fact(64, `${SOURCES.ec2Idempotency}: up to 64 ASCII characters`),
      charset: fact('\\x20-\\x7e', `${SOURCES.ec2Idempotency}: ASCII characters`),
      scope: fact(
        'per sandbox server',
        `${SOURCES.tokenSandbox}; EC2 scopes tokens to the account and Region (not verified here)`,
      ),
      caseSensitive: fact(
        true,
        `RunInstances ClientToken: "Unique, case-sensitive identifier" (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_RunInstances.html)`,
      ),
    },
    keyReuse: fact(
      'the same parameters, while the token is kept (at least 24 h after the instance terminates)',
      SOURCES.ec2Idempotency,
    ),
    parameterMatching: fact(
      'mismatch-error',
      `${SOURCES.ec2Idempotency}: same token, changed params ⇒ IdempotentParameterMismatch`,
    ),
    storedResult: {
      semantics: fact('replays', `${SOURCES.awsRel04}: return the identical first response even if state changed`),
      includesErrors: fact(false, `${SOURCES.tokenSandbox}: only launches are remembered; validation errors are not`),
    },
    lookup: {
      method: fact(
        'search',
        `GET /instances?clientToken=<key> (DescribeInstances filter client-token): ${SOURCES.tokenSandbox}`,
      ),
      consistencyDelay: fact(null, `${SOURCES.tokenSandbox}; real EC2 is eventually consistent (delay not stated)`),
    },
    retention: {
      minimum: fact('24h', `${SOURCES.ec2Idempotency}: valid at least 24 h after the instance is terminated`),
    },
    concurrency: fact<ConcurrencyBehaviour>(
      'unknown',
      `${SOURCES.ec2Idempotency} does not say what a concurrent request with the same token gets`,
    ),
    retryableErrors: fact(
      [
        '503 RequestLimitExceeded (not-applied: throttled before processing)',
        'ECONNREFUSED (not-applied)',
        'timeout, reset, 5xx (unknown: look up, then same token)',
      ],
      `${SOURCES.awsRel05}; ${SOURCES.ec2Errors}`,
    ),
    nonRetryableErrors: fact(
      [
        '400 IdempotentParameterMismatch (conflict)',
        '400 InvalidParameterValue (validation)',
        '400 InvalidAMIID.Malformed (validation)',
      ],
      SOURCES.ec2Errors,
    ),
    reconciler: 'the runner, through doLookup: GET /instances?clientToken=<key>',
    unverified: [
      {
        field: 'concurrency',
        condition: 'what a concurrent RunInstances with the same ClientToken returns is not documented',
        source: SOURCES.ec2Idempotency,
      },
    ],
  });
}

export const httpCards = {
  'orders.create': ordersCreateCard('acme-orders'),
  'exports.create': exportsCreateCard('acme-exports'),
  'documents.update': documentsUpdateCard('acme-docs'),
  'instances.run': instancesRunCard('acme-compute'),
} as const;
