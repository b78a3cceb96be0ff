import { type Duration, defineCard, fact, type RetrySafetyCard } from '@retrysafe/contract';
import { formatDuration } from '@retrysafe/contract/rules';
import type { HubSpotAdapterOptions } from './hubspot-adapter.js';

const S = {
  providers: 'docs/evidence/hubspot.md',
  contacts: 'https://developers.hubspot.com/docs/api/crm/contacts',
  tickets: 'https://developers.hubspot.com/docs/api/crm/tickets',
  properties: 'https://developers.hubspot.com/docs/api/crm/properties',
  search: 'https://developers.hubspot.com/docs/api/crm/search',
  upsert:
    'https://developers.hubspot.com/docs/api-reference/latest/crm/objects/custom-objects/batch/upsert-custom-objects ("Create or update records identified by a unique property value")',
  errors: 'https://developers.hubspot.com/docs/api/error-handling',
  limits: 'https://developers.hubspot.com/docs/api/usage-details',
  contactConflict: 'https://github.com/stape-io/hubspot-tag/issues/7',
} as const;

const note = (field: string, condition: string, source: string) => ({ field, condition, source });

// HubSpot's error page lists what a 4xx means, not whether a rejected write can still leave a record.
const REJECTION_LEAVES = (what: string) =>
  fact<boolean>('unknown', `${S.errors}: does not say whether a rejected request can leave a ${what}`);
const rejectionNote = (what: string) =>
  note('sideEffect.rejectionMayCreate', `whether a request HubSpot rejects can still leave a ${what}`, S.errors);

/** The adapter's options the cards depend on (see HubSpotAdapterOptions). */
type HubSpotCardOptions = Required<Pick<HubSpotAdapterOptions, 'idProperty' | 'searchSettleMs'>> &
  Pick<HubSpotAdapterOptions, 'lateApplyMs'>;

/** HubSpot documents request limits and errors, not how long a request may still be applied after the client gave up. */
const LATE_APPLY = fact<Duration>(
  'unknown',
  `${S.errors} and ${S.limits} document errors and rate limits, not a server-side request deadline`,
);
const LATE_APPLY_NOTE = note(
  'lookup.lateApplyBound',
  'how long after a client timeout HubSpot may still apply the request; until known, a lookup miss never proves absence',
  S.errors,
);
const lateApply = (o: HubSpotCardOptions) =>
  o.lateApplyMs == null
    ? LATE_APPLY
    : fact<Duration>(
        formatDuration(o.lateApplyMs),
        `adapter option lateApplyMs, set by the caller; ${S.errors} gives no figure`,
      );

const REQUEST_ID_NOTE = note(
  'ids.request',
  'error bodies carry correlationId (documented); the X-HubSpot-Correlation-Id header the adapter reads on successful answers is not documented (docs/evidence/hubspot.md)',
  S.errors,
);

const IDS = {
  run: 'receipts only (never sent to HubSpot)',
  attempt: 'receipts only (never sent to HubSpot)',
  request: fact('correlationId of the error body, else the X-HubSpot-Correlation-Id response header', S.errors),
};

/** Refusals the error page says to retry: a lock lasts 2 s; a migrating account sends Retry-After. */
const LOCKED = '423 Locked (at least 2 s) and 477 Migration in Progress (Retry-After honoured): refused, not applied';

const RATE_LIMITED =
  'HubSpot answers 429 from its rate limiters (policyName TEN_SECONDLY_ROLLING, SECONDLY, DAILY; X-HubSpot-RateLimit-* headers)';

const SEARCH_DELAY_NOTE = note(
  'lookup.consistencyDelay',
  'how long after a write CRM search shows it ("a few moments"); until then a miss is reported as cannot-tell, never as absent',
  S.search,
);

const keyUnverified = (o: HubSpotCardOptions) => [
  note(
    'providerKey.maxLength',
    `the longest value HubSpot accepts in a unique-value property; the adapter keeps keys within 100 characters of a-z 0-9 . _ : / - (longer ids, and ids with an upper-case letter, become a 64-hex digest)`,
    S.providers,
  ),
  note(
    'providerKey.charset',
    'characters HubSpot accepts in a unique-value property; the adapter sends only a-z 0-9 . _ : / -',
    S.providers,
  ),
  note(
    'providerKey.caseSensitive',
    'whether HubSpot compares unique values case-insensitively; an id with an upper-case letter is sent as a digest, so two ids that differ only in case never send keys that do',
    S.properties,
  ),
  note(
    'retention.minimum',
    `the value is reserved while the record holding ${o.idProperty} exists; no minimum is documented, and whether an archived (deleted) record still reserves it is not documented`,
    S.properties,
  ),
  ...(o.searchSettleMs === null ? [SEARCH_DELAY_NOTE] : []),
];

type Spec = Omit<
  RetrySafetyCard,
  | 'cardVersion'
  | 'provider'
  | 'ids'
  | 'lookup'
  | 'backoff'
  | 'limits'
  | 'retryLayer'
  | 'handoff'
  | 'duplicateTest'
  | 'receipts'
  | 'paramComparison'
> & { readonly lookup: Omit<RetrySafetyCard['lookup'], 'lateApplyBound'>; readonly lookupWindow: Duration };

/** The facts and policy all three cards share; the operation's own facts come in `spec`. */
function hubSpotCard(o: HubSpotCardOptions, spec: Spec): RetrySafetyCard {
  // `facts` are providerKey … nonRetryableErrors, in the order every card below writes them (the card's order).
  const { operation, sideEffect, businessOperationId, lookupWindow, reconciler, unverified, ...facts } = spec;
  return defineCard({
    cardVersion: 1,
    provider: 'hubspot',
    operation,
    sideEffect,
    businessOperationId,
    ids: IDS,
    ...facts,
    lookup: { ...facts.lookup, lateApplyBound: lateApply(o) },
    backoff: { strategy: 'exponential-full-jitter', base: '200ms', cap: '10s', retryAfterCap: '60s' },
    limits: { maxAttempts: 4, maxElapsed: '2m', lookupWindow },
    retryLayer: {
      layer: 'runner',
      sdkRetries: 'disabled',
      how: "the adapter never constructs @hubspot/api-client's Client, whose retry decorator (numberOfApiCallRetries) lives in a process-wide singleton that the last new Client() sets; it builds the SDK's generated API classes (lib/codegen/crm/*) per call with its own configuration and fetch transport, which no decorator wraps. Tests: one request per attempt at the sandbox on 5xx and 429, also with a second Client({ numberOfApiCallRetries: 6 }) in the process",
    },
    reconciler,
    handoff: {
      condition:
        'rejected; or the attempt/elapsed budget is spent; or an unknown outcome the lookup cannot settle within the lookup window',
      destination: "the runner's handoff sink (JSONL file or callback)",
    },
    duplicateTest:
      'loopback HubSpot sandbox (@retrysafe/hubspot/sandbox: unique-value properties, batch upsert new: true|false, search with an indexing delay, 429 with X-HubSpot-RateLimit-* headers, record counts) behind the @retrysafe/testkit fault proxy; request counts at the sandbox',
    receipts:
      "runner ledger receipts (JSONL export): HTTP status, HubSpot category or policyName, correlationId, record id and HubSpot's message (clipped to 300 characters; a validation message may quote a value, so list PII patterns in the runner's redact option); never the token or the request body",
    unverified: [REQUEST_ID_NOTE, ...(o.lateApplyMs == null ? [LATE_APPLY_NOTE] : []), ...unverified],
  });
}

/** The key of tickets.create: a unique-value property. */
const uniqueValueKey = (where: string) => ({
  travels: fact(
    'body' as const,
    `${S.providers}: no idempotency key; the business-operation id travels as the value of a unique-value property`,
  ),
  name: fact(
    where,
    `adapter option idProperty (default retrysafe_operation_id): a property the account defines with hasUniqueValue: true (${S.properties})`,
  ),
  maxLength: fact<number>('unknown', `${S.providers} gives no limit for a unique-value property's value`),
  charset: fact<string>('unknown', `${S.providers} gives no charset for a unique-value property's value`),
  caseSensitive: fact<boolean>(
    'unknown',
    `${S.properties}: whether unique values are compared case-sensitively is not documented`,
  ),
  scope: fact(
    'one object type in one HubSpot account: a unique-value property is unique among that object type’s records',
    S.properties,
  ),
});

/** How the writes keyed by a unique-value property are found: a CRM search for its value. */
const searchFacts = (o: HubSpotCardOptions, searchPath: string) =>
  ({
    lookup: {
      method: fact(
        'search',
        `${S.search}: POST /crm/v3/objects/${searchPath}/search, filter <idProperty> EQ <key> (searchApi.doSearch); 5 req/s per account, excludes archived`,
      ),
      consistencyDelay:
        o.searchSettleMs === null
          ? fact<null>('unknown', `${S.search}: CRM search has an indexing delay ("a few moments"), no figure given`)
          : fact(
              formatDuration(o.searchSettleMs),
              `adapter option searchSettleMs, set by the caller; ${S.search} gives no figure`,
            ),
    },
    retention: {
      minimum: fact<null>('unknown', `${S.properties}: no retention documented for unique-value properties`),
    },
    lookupWindow: '1m',
  }) as const;

const NO_KEY = `${S.providers}: no idempotency key`;
const REF_TRIM = {
  field: 'ref',
  steps: ['trim'],
  source: `${S.properties}: the unique-value property holds a value retrysafe derives, not the ref, so the ref's equality is retrysafe's: surrounding white space is formatting; compatibility forms, case and inner white space are kept apart (docs/concepts.md, Normalisation)`,
} as const;
/** What changedParamsRevise (contract rules) makes of a set's values, and what it cannot see. */
const REVISIONS = (target: string) =>
  `Other values once it is done are its next revision, sent, in the order calls arrive (a retry of an earlier change arriving after a later one is sent again); the same values again are a retry, answered from the ledger and not sent, even when the ${target} was changed outside retrysafe in between (A, B set in HubSpot, A again): give each change its own business-operation id where either matters`;
const NOT_STORED = `${S.providers}: nothing is stored per request`;
const ERRORS_NOT_STORED = fact(false, `${S.providers}: errors are not stored`);

const contactsUpdateCard = (o: HubSpotCardOptions) =>
  hubSpotCard(o, {
    operation: 'hubspot.contacts.update',
    sideEffect: {
      kind: fact('set', `${S.contacts}: PATCH /crm/v3/objects/contacts/{contactId} sets the given property values`),
      idempotentByNature: fact(
        true,
        `${S.providers}: basicApi.update = PATCH set-values, naturally idempotent, no precondition/ETag`,
      ),
      rejectionMayCreate: fact(false, `${S.contacts}: PATCH updates the contact its id names; it creates none`),
    },
    // Exact: HubSpot stores property values as written, so another spelling is another value.
    businessOperationId: {
      rule: `derived from intent fields contactId and idProperty (when given) as the contact's record id, read before the claim and before every later send or lookup by GET /crm/v3/objects/contacts/{contactId}?idProperty=… (scope crm.objects.contacts.read; ${S.contacts}: a contact is "identified by ID or email/unique property value"; a record id, or idProperty hs_object_id, needs no request and is taken only as HubSpot writes one, digits without a leading zero): the contact however it is addressed, and the PATCH and its lookup go to that record id, so an address that passes to another contact in between never changes that one; the values it is set to are params, refused before the claim when they change the idProperty value the contact is addressed by (a repeat could not find it). ${REVISIONS('contact')}`,
      // idProperty names which contact contactId is (101 by record id and 101 by a unique property are two contacts).
      intentFields: ['contactId', 'idProperty'],
      optionalIntentFields: ['idProperty'],
    },
    providerKey: {
      travels: fact('none', NO_KEY),
      name: fact(null, NO_KEY),
      maxLength: fact(null, NO_KEY),
      charset: fact(null, NO_KEY),
      scope: fact('no key: the PATCH sets values, so sending it twice has the effect of sending it once', S.providers),
    },
    keyReuse: fact(
      'no key; the same PATCH may be sent again: it sets the same values (a newer write by someone else in between is overwritten)',
      S.providers,
    ),
    parameterMatching: fact('none', `${S.providers}: no key, nothing to match`),
    storedResult: { semantics: fact('none', NOT_STORED), includesErrors: fact(false, NOT_STORED) },
    lookup: {
      method: fact(
        'get-by-key',
        `${S.contacts}: GET /crm/v3/objects/contacts/{contactId}?properties=… (basicApi.getById); the adapter compares the values; a mismatch is not-found only when notFoundIsAuthoritative says so (lookup.consistencyDelay is unknown, so never: cannot-tell)`,
      ),
      consistencyDelay: fact<null>('unknown', `${S.contacts} does not say how soon GET by id reflects a PATCH`),
    },
    retention: { minimum: fact(null, NOT_STORED) },
    concurrency: fact('last-write-wins', `${S.providers}: PATCH set-values with no precondition/ETag`),
    retryableErrors: fact(
      ['429', LOCKED, '5xx', 'timeout', 'connection reset', 'connection refused'],
      `${S.providers} (429, 5xx retryable); ${S.limits}; 423, 477: ${S.errors}`,
    ),
    nonRetryableErrors: fact(
      ['400', '401', '403', '404', '409 (a unique value such as email is held by another contact)'],
      `${S.errors}; 409 body: ${S.contactConflict}`,
    ),
    lookupWindow: '30s',
    reconciler: 'the runner, through doLookup: GET the contact and compare the requested values',
    unverified: [
      note(
        'lookup.consistencyDelay',
        'how soon GET by id shows a PATCH; a stale read only causes a harmless re-send of the same values',
        S.contacts,
      ),
    ],
  });

const objectsUpsertCard = (o: HubSpotCardOptions) =>
  hubSpotCard(o, {
    operation: 'hubspot.objects.upsert',
    sideEffect: {
      kind: fact(
        'upsert',
        `${S.providers}: POST /crm/v3/objects/<object>/batch/upsert (batchApi.upsert) with idProperty = a unique-value property`,
      ),
      idempotentByNature: fact(
        true,
        `${S.upsert}: creates the record the unique value names, or updates the one holding it (new: false); sent twice, it sets the same values on one record`,
      ),
      rejectionMayCreate: REJECTION_LEAVES('record'),
    },
    // Like contacts.update: the record; its values are params. The record is named by objectType and ref alone, so
    // every operation of one ref updates that record instead of making a second.
    businessOperationId: {
      rule: `derived from intent fields objectType and ref (the caller’s reference for the record): the record; the values it is set to are params; the record’s ${o.idProperty} holds a digest of objectType and the trimmed ref alone, so every operation of one ref writes one record. ${REVISIONS('record')}`,
      intentFields: ['objectType', 'ref'],
      normalize: [REF_TRIM],
    },
    providerKey: {
      travels: fact('none', NO_KEY),
      name: fact(null, NO_KEY),
      maxLength: fact(null, NO_KEY),
      charset: fact(null, NO_KEY),
      scope: fact(
        `no key: the record is named by its ${o.idProperty} (objectType and ref), so the upsert sent twice sets the same values on it`,
        S.upsert,
      ),
    },
    keyReuse: fact(
      'no key; the same upsert may be sent again: it sets the same values on the ref’s one record (a newer write by someone else in between is overwritten)',
      S.upsert,
    ),
    parameterMatching: fact('none', `${S.providers}: no key, nothing to match`),
    storedResult: { semantics: fact('none', NOT_STORED), includesErrors: fact(false, NOT_STORED) },
    ...searchFacts(o, '<object>'),
    retention: { minimum: fact(null, NOT_STORED) },
    concurrency: fact<'last-write-wins'>(
      'unknown',
      `${S.providers} does not say what two concurrent upserts of one new id value do`,
    ),
    retryableErrors: fact(
      ['429', LOCKED, '5xx', 'timeout', 'connection reset', 'connection refused'],
      `${S.providers} (429, 5xx retryable); ${RATE_LIMITED}: ${S.limits}; 423, 477: ${S.errors}`,
    ),
    nonRetryableErrors: fact(['400', '401', '403', '404', '409 (another unique property collides)'], S.errors),
    reconciler:
      'the runner, through doLookup: CRM search for the record’s id property value (one record holding it and the requested values is adopted, two records are "cannot tell"); re-sending the upsert is safe',
    unverified: [
      ...(o.searchSettleMs === null ? [SEARCH_DELAY_NOTE] : []),
      note(
        'sideEffect.idempotentByNature',
        `whether HubSpot compares unique values case-insensitively: the record's ${o.idProperty} is a lower-case digest, so two refs never send values that differ only in case`,
        S.providers,
      ),
      concurrencyNote(
        'upserts of one new id value (two changes of one ref, the second sent while the first is unsettled) can both create a record',
      ),
      rejectionNote('record'),
    ],
  });

const ticketsCreateCard = (o: HubSpotCardOptions) =>
  hubSpotCard(o, {
    operation: 'hubspot.tickets.create',
    sideEffect: {
      kind: fact('create', `${S.tickets}: POST /crm/v3/objects/tickets (basicApi.create)`),
      idempotentByNature: fact(false, `${S.providers}: ticket create is NOT idempotent`),
      rejectionMayCreate: REJECTION_LEAVES('ticket'),
    },
    businessOperationId: {
      rule: 'derived from intent field ref (the caller’s reference for what the ticket is about); pipeline, stage, subject and content are what the ticket is made with (a ticket’s pipeline is one of its properties, set at create and changed by an update), so a corrected pipeline or re-worded text under one ref is a correction of the one ticket, never a second',
      intentFields: ['ref'],
      normalize: [REF_TRIM],
    },
    providerKey: uniqueValueKey(`properties.${o.idProperty}`),
    keyReuse: fact(
      'every attempt of the operation sends the same value; HubSpot refuses a second ticket with it while the first exists',
      S.providers,
    ),
    parameterMatching: fact(
      'none',
      `${S.providers}: only the unique property is compared; a re-send with other properties is refused as a duplicate all the same`,
    ),
    storedResult: {
      semantics: fact(
        'rejects-duplicate',
        `${S.providers}: a unique-value custom property holding the business-operation id lets the provider reject a duplicate`,
      ),
      includesErrors: ERRORS_NOT_STORED,
    },
    ...searchFacts(o, 'tickets'),
    concurrency: fact<'duplicates'>(
      'unknown',
      `${S.providers} does not say what two concurrent creates with one unique value do`,
    ),
    retryableErrors: fact(
      [
        '429',
        LOCKED,
        'connection refused',
        '5xx, timeout, connection reset: unknown, so lookup first; a re-send carries the same unique value',
      ],
      `${S.providers} (429, 5xx retryable; create not idempotent); ${RATE_LIMITED}: ${S.limits}; 423, 477: ${S.errors}`,
    ),
    nonRetryableErrors: fact(['400', '401', '403', '404', '409 on another unique property'], S.errors),
    reconciler:
      'the runner, through doLookup: CRM search for the id property value (one record holding it exactly is adopted, two are "cannot tell"); a duplicate refused by the unique property is adopted after a GET shows the existing ticket holds this operation’s value',
    unverified: [
      ...keyUnverified(o),
      note(
        'storedResult.semantics',
        'the status HubSpot answers for a ticket whose unique-value property collides: 409 is documented for the contact email collision only; the adapter recognises 409, category CONFLICT, or a 400 saying "N already has that value." (a body HubSpot sends for a taken unique value), reads "Existing ID: N" or that N, and adopts only after a GET shows that ticket holds this operation’s value (else lookup by search)',
        `${S.providers}; ${S.contactConflict}`,
      ),
      concurrencyNote('creates with one unique value can both succeed'),
      rejectionNote('ticket'),
    ],
  });

/** HubSpot does not say what two concurrent writes of one unique value do. */
const concurrencyNote = (what: string) =>
  note(
    'concurrency',
    `whether two concurrent ${what}; the runner’s lease keeps one dispatch per operation in flight`,
    S.providers,
  );

/** The three cards, computed once from the adapter's options. */
export function hubSpotCardsFor(o: HubSpotCardOptions) {
  return {
    'contacts.update': contactsUpdateCard(o),
    'objects.upsert': objectsUpsertCard(o),
    'tickets.create': ticketsCreateCard(o),
  } as const;
}

export type HubSpotOperationName = keyof ReturnType<typeof hubSpotCardsFor>;

/** The cards with the default options (idProperty retrysafe_operation_id, no search settle time): what docs/cards and the README render. */
export const hubSpotCards = hubSpotCardsFor({ idProperty: 'retrysafe_operation_id', searchSettleMs: null });
