import { type Duration, defineCard, fact, type ProviderKeyRule, type RetrySafetyCard } from '@retrysafe/contract';

/** Where the facts come from: public Stripe pages and SDK files, or docs/evidence/stripe.md (Stripe's alone). */
const S = {
  idempotency: 'https://docs.stripe.com/api/idempotent_requests',
  lowLevelErrors: 'https://docs.stripe.com/error-low-level#idempotency',
  errors: 'https://docs.stripe.com/api/errors',
  errorHandling: 'https://docs.stripe.com/error-handling',
  requestIds: 'https://docs.stripe.com/api/request_ids',
  metadata: 'https://docs.stripe.com/api/metadata',
  search: 'https://docs.stripe.com/search#data-freshness',
  refundsList: 'https://docs.stripe.com/api/refunds/list',
  sdkRequestSender: 'https://unpkg.com/stripe@23.1.0/esm/RequestSender.js (_shouldRetry, _defaultIdempotencyKey)',
  sdkErrors: 'https://unpkg.com/stripe@23.1.0/esm/Error.js (generateV1Error)',
  providersMd: 'docs/evidence/stripe.md',
} as const;

/** The metadata entry that carries the business-operation id, so an object can be found later. */
export const STRIPE_OPERATION_METADATA_KEY = 'retrysafe_operation_id';

/** Stripe's 255-character limit; it documents no charset, so only the id alphabet (header-safe) is sent. */
export const STRIPE_KEY_RULE: ProviderKeyRule = { maxLength: 255, charset: 'A-Za-z0-9._:/-', prefix: 'rs-' };

/** The caller's reference is only trimmed: Stripe compares metadata values as given (`Ref` ≠ `ref`). */
const REF_NORMALIZATION_SOURCE = `${S.metadata}: metadata values are stored as given, Stripe applies no equality of its own; surrounding white space is formatting, compatibility forms, case and inner white space are kept apart (docs/concepts.md, Normalisation)`;

/** Every create: metadata left out is stored as {}, and the adapter sends the caller's merged with its own keys. */
const METADATA_DEFAULT = {
  value: {},
  says: 'the example creates one without metadata and it is returned with "metadata": {} (the adapter adds its own keys to either)',
};

/** How an operation is found past retention, and what else differs beyond its kind and intent. */
interface CardSpec {
  lookup: { delay: '1h' | null; delaySource: string };
  reconciler: string;
  unverified?: RetrySafetyCard['unverified'];
  rejectionMayCreate?: RetrySafetyCard['sideEffect']['rejectionMayCreate'];
  /** Params Stripe documents a default for: spelled as it, they compare as left out. */
  defaults?: Readonly<Record<string, { value: unknown; says: string }>>;
}

/** One card: the facts every Stripe v1 create shares, with what differs per operation. */
function stripeCard(
  operation: string,
  kind: 'create' | 'charge',
  intentFields: readonly string[],
  derivedFrom: string,
  spec: CardSpec,
): RetrySafetyCard {
  const rejectionMayCreate =
    spec.rejectionMayCreate ??
    fact(
      false,
      `${S.errors}: of the objects these operations create, only a PaymentIntent is returned in an error body (payment_intent); a rejected create of any other leaves nothing`,
    );
  const kindSource = `https://docs.stripe.com/api/${operation.replace('.', '/').replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`;
  return defineCard({
    cardVersion: 1,
    provider: 'stripe',
    operation: `stripe.${operation}`,
    sideEffect: {
      kind: fact(kind, kindSource),
      idempotentByNature: fact(false, `${S.idempotency} (a second POST without the same key creates a second object)`),
      rejectionMayCreate,
    },
    businessOperationId: {
      rule: `derived from ${derivedFrom}, or supplied by the caller; written to metadata.retrysafe_operation_id`,
      intentFields,
      // The caller's own reference (…Ref) is folded; Stripe ids (cus_, pi_) stay exact.
      normalize: intentFields
        .filter((f) => f.endsWith('Ref'))
        .map((field) => ({ field, steps: ['trim'] as const, source: REF_NORMALIZATION_SOURCE })),
    },
    // Only the defaults the API reference states for every API version and account; a version-dependent one
    // (capture_method, auto_advance) or one that depends on the object (a refund's amount) is compared exactly.
    paramComparison: Object.entries({ ...spec.defaults, metadata: METADATA_DEFAULT }).map(
      ([field, { value, says }]) => ({
        field,
        compare: 'normalized' as const,
        providerDefault: value,
        source: `${kindSource}: ${says}, so that value and none are one request (any other value stays exact)`,
        evidence: kindSource,
      }),
    ),
    ids: {
      run: 'receipts only (never sent to Stripe)',
      attempt: 'receipts only (never sent to Stripe)',
      request: fact('Request-Id response header (SDK: err.requestId / lastResponse.requestId)', S.requestIds),
    },
    providerKey: {
      travels: fact('header', `${S.idempotency}; SDK request option { idempotencyKey } (${S.sdkRequestSender})`),
      name: fact('Idempotency-Key', S.idempotency),
      maxLength: fact(255, S.idempotency),
      charset: fact(
        'A-Za-z0-9._:/-',
        `retrysafe choice: Stripe documents only the 255-character limit (${S.idempotency}); the key is 'rs-' + the business-operation id, or a SHA-256 digest of it`,
      ),
      scope: fact('unknown', `${S.providersMd}: "Scope (account/endpoint): unknown"`),
      caseSensitive: fact<boolean>('unknown', `${S.idempotency} documents the length, not how keys are compared`),
    },
    keyReuse: fact(
      "only to re-send the identical request (same endpoint, same params) while its outcome is unknown and the key is younger than 24 h minus twice the policy's clock-skew margin (limits.clockSkewMargin, 10 min: once for clock skew, once for a late apply, which Stripe does not bound); never the SDK's auto key (stripe-node-retry-<uuid>), never past retention (a pruned key creates a NEW object)",
      `${S.idempotency}; ${S.sdkRequestSender}`,
    ),
    parameterMatching: fact(
      'mismatch-error',
      `${S.idempotency}: same key with other params → 400 idempotency_error (SDK StripeIdempotencyError, ${S.sdkErrors})`,
    ),
    storedResult: {
      semantics: fact(
        'replays',
        `${S.idempotency}: status code and body of the first request, replays carry Idempotent-Replayed: true`,
      ),
      includesErrors: fact(
        true,
        `${S.idempotency}: "including 500 errors", once endpoint execution began; validation failures, concurrent conflicts and 429s are not stored (${S.lowLevelErrors})`,
      ),
      replayIndicator: fact(
        { header: 'Idempotent-Replayed', value: 'true' },
        `${S.idempotency}: a replayed response carries the Idempotent-Replayed: true header`,
      ),
    },
    lookup: {
      method: fact(
        'search',
        `past retention: ${spec.lookup.delaySource}. Inside retention doLookup re-sends the identical request with the same key instead (Stripe has no read-by-key; it replays the stored response and never makes a second object: ${S.idempotency})`,
      ),
      consistencyDelay: fact(spec.lookup.delay, spec.lookup.delaySource),
      lateApplyBound: fact<Duration>(
        'unknown',
        `${S.idempotency} and ${S.errorHandling} document the key's retention and what a retry gets, not how long Stripe may still process a request after the client disconnected`,
      ),
    },
    retention: {
      minimum: fact(
        '24h',
        `${S.idempotency}: keys may be pruned once they are at least 24 hours old; a pruned key creates a new request`,
      ),
    },
    concurrency: fact(
      'rejects-in-progress',
      `${S.lowLevelErrors}: 409 idempotency_error code idempotency_key_in_use (SDK: StripeAPIError statusCode 409, ${S.sdkErrors})`,
    ),
    retryableErrors: fact(
      [
        '429 rate_limit (answered before the idempotency layer, not stored): bounded retry, Retry-After honoured',
        'connection refused (never sent): bounded retry',
        '409 idempotency_key_in_use: in progress, re-send with the same key after a wait',
        'timeout / connection reset / truncated body / 5xx: unknown, only through lookup (same key inside retention, metadata search after)',
      ],
      `${S.errorHandling}; ${S.lowLevelErrors}; ${S.providersMd}`,
    ),
    nonRetryableErrors: fact(
      [
        '400 idempotency_error (same key, other params)',
        '400/404 invalid_request_error',
        '401 authentication_error',
        '402 card_error',
        '403 permission_error',
      ],
      `${S.errors}; ${S.sdkErrors}`,
    ),
    backoff: { strategy: 'exponential-full-jitter', base: '500ms', cap: '5s', retryAfterCap: '60s' },
    // clockSkewMargin: retrysafe policy; a key is relied on only while younger than 24 h minus it.
    limits: { maxAttempts: 4, maxElapsed: '2m', lookupWindow: '1m', clockSkewMargin: '10m' },
    retryLayer: {
      layer: 'runner',
      sdkRetries: 'disabled',
      how: 'client built with maxNetworkRetries: 0 (also set per request) and an httpClient that re-codes ECONNRESET/EPIPE so RequestSender._shouldRetry does not make its one closed-connection retry; a user-supplied client with retries on or without that httpClient is refused (AdapterConfigurationError); the drill counts requests at the sandbox',
    },
    reconciler: spec.reconciler,
    handoff: {
      condition:
        'rejected (validation, card, auth, permission, key mismatch); retry budget exhausted; unknown with no safe re-send (key past retention and no authoritative lookup answer, or a stored 5xx that the key replays)',
      destination: "the runner's handoff sink (JSONL file or callback); resolved with `retrysafe ledger resolve`",
    },
    duplicateTest:
      'real stripe SDK → testkit fault proxy → loopback Stripe sandbox (@retrysafe/stripe/sandbox); records and requests counted at the sandbox',
    receipts: "the runner's ledger (one receipt per attempt and lookup, redacted), exportable as JSONL",
    unverified: [
      {
        field: 'providerKey.scope',
        condition: 'whether a key is unique per account or per account and endpoint',
        source: `${S.providersMd}: "Scope (account/endpoint): unknown"`,
      },
      {
        field: 'providerKey.charset',
        condition:
          'which characters Stripe accepts in Idempotency-Key (undocumented; the adapter sends only A-Za-z0-9._:/-)',
        source: S.idempotency,
      },
      {
        field: 'providerKey.caseSensitive',
        condition:
          'whether Stripe tells Idempotency-Keys apart by letter case (undocumented; an id with an upper-case letter is sent as a digest)',
        source: S.idempotency,
      },
      {
        field: 'lookup.lateApplyBound',
        condition:
          'how long after a client timeout Stripe may still execute the request (no server-side deadline is documented); inside retention the same key folds a late request into the first, past retention a metadata miss never proves absence',
        source: S.errorHandling,
      },
      ...(spec.unverified ?? []),
    ],
  });
}

const SEARCH_OUTAGE_BOUND = [
  {
    field: 'lookup.consistencyDelay',
    condition:
      'the 1 h outage bound is retrysafe’s own working assumption (docs/evidence/stripe.md); the Search page as read for this adapter says data is searchable "in under 1 minute" normally and "could be delayed during an outage", with no stated bound',
    source: S.search,
  },
] as const;

const SEARCH_DELAY_SOURCE = `${S.search}: Search API normally < 1 min behind, up to 1 h during outages; a miss is "not found" only once notFoundIsAuthoritative says so (lookup.lateApplyBound is unknown, so never: "cannot tell")`;
const LIST_SOURCE = `${S.refundsList} (refunds have no Search API; list APIs are not delayed, ${S.search})`;

/** How the runner reconciles while the key is reusable, before `past`: what it does once the key has expired. */
const reconcileByKeyThen = (past: string) =>
  `the runner, through doLookup: while the runner says the key is reusable (younger than 24 h minus twice the policy's clock-skew margin of 10 min: skew, and a late apply Stripe does not bound) it re-sends the same request with the same Idempotency-Key and adopts the replayed response; past that it never relies on the key and ${past}`;

/** The lookup facts of an operation whose objects are found through `resource`.search on the metadata id. */
function searchLookup(resource: string) {
  return {
    lookup: { delay: '1h', delaySource: SEARCH_DELAY_SOURCE },
    reconciler: reconcileByKeyThen(
      `runs ${resource}.search with metadata['${STRIPE_OPERATION_METADATA_KEY}']:'<business-operation id>' and keeps only the objects whose value is that id exactly (https://docs.stripe.com/search#search-query-language: a string match is case insensitive and matches a value holding the query's words); one is adopted, two are "cannot tell"`,
    ),
    unverified: SEARCH_OUTAGE_BOUND,
  } as const;
}

export const stripeCards = {
  'customers.create': stripeCard(
    'customers.create',
    'create',
    ['customerRef'],
    "intent field customerRef (the caller's own id for the customer)",
    searchLookup('customers'),
  ),
  'paymentIntents.create': stripeCard(
    'paymentIntents.create',
    'charge',
    ['customer', 'orderRef'],
    'intent fields customer and orderRef (the order names the payment; amount and currency are its parameters, so a changed amount for the same order is a conflict, never a second charge)',
    {
      ...searchLookup('paymentIntents'),
      defaults: { confirm: { value: false, says: 'confirm "defaults to false"' } },
      rejectionMayCreate: fact(
        true,
        `${S.errors}: the error's payment_intent is "the PaymentIntent object for errors returned on a request involving a PaymentIntent"; https://docs.stripe.com/payments/paymentintents/lifecycle: a failed confirmation leaves the PaymentIntent in requires_payment_method`,
      ),
    },
  ),
  'invoices.create': stripeCard(
    'invoices.create',
    'create',
    ['customer', 'invoiceRef'],
    'intent fields customer, invoiceRef',
    {
      ...searchLookup('invoices'),
      defaults: {
        collectionMethod: {
          value: 'charge_automatically',
          says: 'collection_method "Defaults to charge_automatically"',
        },
      },
    },
  ),
  'refunds.create': stripeCard(
    'refunds.create',
    'charge',
    ['paymentIntent', 'refundRef'],
    'intent fields paymentIntent, refundRef',
    {
      lookup: { delay: null, delaySource: LIST_SOURCE },
      reconciler: reconcileByKeyThen(
        `lists refunds.list({ payment_intent }) and matches metadata['${STRIPE_OPERATION_METADATA_KEY}'] (no Search API for refunds; lists are not delayed); one is adopted, two are "cannot tell"`,
      ),
    },
  ),
} as const satisfies Record<string, RetrySafetyCard>;
