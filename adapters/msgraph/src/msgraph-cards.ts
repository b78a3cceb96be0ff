import {
  type ConcurrencyBehaviour,
  type Duration,
  defineCard,
  fact,
  type ParameterMatching,
  type RetrySafetyCard,
  type StoredResultSemantics,
} from '@retrysafe/contract';

const S = {
  providers: 'docs/evidence/msgraph.md',
  sendMail: 'https://learn.microsoft.com/en-us/graph/api/user-sendmail',
  extendedPropertyFilter: 'https://learn.microsoft.com/en-us/graph/api/singlevaluelegacyextendedproperty-get',
  event: 'https://learn.microsoft.com/en-us/graph/api/resources/event (transactionId)',
  createEvent: 'https://learn.microsoft.com/en-us/graph/api/user-post-events',
  eventResource: 'https://learn.microsoft.com/en-us/graph/api/resources/event',
  eventResourcePinned:
    'https://github.com/microsoftgraph/microsoft-graph-docs-contrib/blob/02eb1a3142fa14e36ac955f10cb8012fcd8d5933/api-reference/v1.0/resources/event.md',
  createTask: 'https://learn.microsoft.com/en-us/graph/api/todotasklist-post-tasks',
  dateTimeTimeZone: 'https://learn.microsoft.com/en-us/graph/api/resources/datetimetimezone',
  createTaskExample:
    'https://github.com/microsoftgraph/microsoft-graph-docs-contrib/blob/093f294473d3d1d60b6705e9572f5e96486c96d1/api-reference/v1.0/api/todotasklist-post-tasks.md',
  linkedResource: 'https://learn.microsoft.com/en-us/graph/api/resources/linkedresource',
  listTasks: 'https://learn.microsoft.com/en-us/graph/api/todotasklist-list-tasks',
  throttling: 'https://learn.microsoft.com/en-us/graph/throttling',
  errors: 'https://learn.microsoft.com/en-us/graph/errors',
  createMessage: 'https://learn.microsoft.com/en-us/graph/api/user-post-messages',
  createEventExample:
    'https://github.com/microsoftgraph/microsoft-graph-docs-contrib/blob/007852ace71e63cb76552a3471aa71e7dee5f3e8/api-reference/v1.0/api/user-post-events.md',
  createMessageDefaults:
    'https://github.com/microsoftgraph/microsoft-graph-docs-contrib/blob/0273c463ba400fd1c477eb6800edb2eee57b1773/api-reference/v1.0/api/user-post-messages.md',
  createMessageEarlier:
    'https://github.com/microsoftgraph/microsoft-graph-docs/blob/86cce287a23b16425940176996b676a034d05ca1/api-reference/v1.0/api/user_post_messages.md',
} as const;

/** A collection of the message (recipients, categories): [] and left out are one mail, as Graph stores a left-out one as []. */
const emptyCollection = (field: string, evidence: string) => ({
  field: `message.${field}`,
  steps: ['empty-array-as-absent'] as const,
  source: `${evidence}: the example message created without ${field} is returned with "${field}": [], so [] and none are one mail (a non-empty one and null stay exact)`,
  evidence,
});

/** A field Graph stores with `value` when a message is created without it: that value spelled out and none are one mail. */
const graphDefault = (field: string, value: unknown) => ({
  field: `message.${field}`,
  steps: [] as const,
  providerDefault: value,
  source: `${S.createMessageDefaults}: Create message's example 2 sends no ${field} and the message is returned with "${field}": ${JSON.stringify(value)}, so that value and none are one mail (any other value stays exact)`,
  evidence: S.createMessageDefaults,
});

const note = (field: string, condition: string, source: string) => ({ field, condition, source });
const lateApplyNote = (effect: string, source: string) =>
  note('lookup.lateApplyBound', `how long after the client gave up Graph may still ${effect}`, source);
// Graph's error page lists what a 4xx means, not whether a rejected request can still leave what it asked for.
const rejectionLeaves = (what: string) =>
  fact<boolean>('unknown', `${S.errors}: does not say whether a rejected request can leave ${what}`);
/** What every Graph create leaves unverified: whether a rejection can leave its object, how late it may still apply. */
const createNotes = (what: string, effect: string, source: string) => [
  note('sideEffect.rejectionMayCreate', `whether a request Graph rejects can still leave ${what}`, S.errors),
  lateApplyNote(effect, source),
];

type Spec = Omit<
  RetrySafetyCard,
  | 'cardVersion'
  | 'provider'
  | 'ids'
  | 'retryableErrors'
  | 'nonRetryableErrors'
  | 'backoff'
  | 'retryLayer'
  | 'handoff'
  | 'duplicateTest'
  | 'receipts'
> & {
  /** This operation's refusals beside the ones every Graph create answers alike. */
  readonly refusals: readonly string[];
  /** The unknown outcomes this operation hands off, beside a rejection and a spent budget. */
  readonly handoff: string;
};

/** The facts and policy every Graph card shares; the operation's own facts come in `spec`. */
function msGraphCard({ refusals, handoff, limits, reconciler, unverified, ...spec }: Spec): RetrySafetyCard {
  // `facts` are providerKey … concurrency, in the order every card below writes them (the card's order).
  const { operation, sideEffect, businessOperationId, ...facts } = spec;
  return defineCard({
    cardVersion: 1,
    provider: 'msgraph',
    operation,
    sideEffect,
    businessOperationId,
    ids: {
      run: 'receipts only',
      attempt: 'receipts only',
      request: fact('request-id response header (else error.innerError["request-id"] in the error body)', S.errors),
    },
    ...facts,
    retryableErrors: fact(
      [
        '429 throttled (Graph: "the requests fail"; Retry-After honoured)',
        'connection refused / DNS failure / a connect that timed out (never sent)',
      ],
      `${S.throttling}; ${S.providers}`,
    ),
    nonRetryableErrors: fact(
      ['400/405/413/415/422 validation', '401 authentication', '403 permission', ...refusals],
      `${S.errors}; ${S.providers}`,
    ),
    backoff: { strategy: 'exponential-full-jitter', base: '1s', cap: '30s', retryAfterCap: '2m' },
    limits,
    retryLayer: {
      layer: 'runner',
      sdkRetries: 'disabled',
      how: 'Client.initWithMiddleware with the chain BearerAuthMiddleware → HTTPMessageHandler and no RetryHandler; an injected client whose chain holds a RetryHandler is refused with AdapterConfigurationError. The drill counts deliveries at the loopback sandbox; a negative control shows the SDK default chain resending sendMail on 503/504.',
    },
    reconciler,
    handoff: {
      condition: `rejected; or ${handoff}; or not-applied beyond max attempts / max elapsed`,
      destination: 'the runner handoff sink (JSONL file or callback), resolved by a person from the CLI',
    },
    duplicateTest:
      'loopback Graph sandbox (@retrysafe/msgraph/sandbox) with the real SDK pointed at it, behind the testkit fault proxy; the sandbox counts the records it holds and the POSTs it received',
    receipts:
      'the runner ledger, exported as JSONL; message bodies, recipients and attendees are sensitive fields and never reach receipts or packets',
    unverified,
  });
}

/** How the id reads the mailbox: Graph's own identity of the user, asked before the claim (msgraph-adapter.ts), and
 * where the request and its lookup go: that user, whom a UPN passing to another user does not move. */
const MAILBOX = `mailbox (as Graph resolves it before the claim and before every later send or lookup: me for the signed-in user however spelled, else the user’s object id; the request and its lookup go to /me or /users/{that id} (${S.providers}, The mailbox), so a UPN given to another user in between never reaches that user’s mailbox; to the mailbox as given only under an intent the caller gives)`;
// Folding two zone names Graph may keep apart would give two slots one id and lose an event.
const ZONE_AS_SPELLED = `a timeZone is compared as spelled: ${S.dateTimeTimeZone} lists Windows and IANA names but documents no two as one zone, so UTC and Etc/UTC, or Pacific Standard Time and America/Los_Angeles, derive two ids (and two transactionIds); a retry must repeat the first spelling (under the first businessOperationId another spelling is an intent conflict)`;

export const mailSendCard = msGraphCard({
  operation: 'msgraph.mail.send',
  sideEffect: {
    kind: fact('send', S.sendMail),
    idempotentByNature: fact(false, `${S.providers}: "no idempotency key … Retrying is NOT safe"`),
    rejectionMayCreate: rejectionLeaves('a sent mail'),
  },
  businessOperationId: {
    rule: `derived from intent fields ${MAILBOX} and message (the whole message: recipients, subject, body, …), or given by the caller`,
    intentFields: ['mailbox', 'message'],
    // Exact otherwise: the message is what is delivered; another spelling is another mail.
    normalize: [
      {
        field: 'message.subject',
        steps: ['trim'],
        source: `${S.createMessage}: Graph keeps the subject as given and folds no re-sends of sendMail, so the subject's equality is retrysafe's: surrounding white space an agent adds is not another mail; case, inner white space and compatibility forms are kept apart (docs/concepts.md, Normalisation)`,
      },
      emptyCollection('toRecipients', S.createMessageEarlier),
      emptyCollection('ccRecipients', S.createMessage),
      emptyCollection('bccRecipients', S.createMessage),
      emptyCollection('replyTo', S.createMessage),
      emptyCollection('categories', S.createMessage),
      {
        field: 'message.importance',
        steps: ['case-fold'],
        providerDefault: 'normal',
        source: `${S.createMessage}: the example request sends "importance": "Low" and the message is returned with "importance": "low", so Low and low are one mail (the params schema takes ASCII letters only); example 2 sends none and it is returned "normal" (${S.createMessageDefaults}), so normal and none are one mail`,
        evidence: S.createMessage,
      },
      graphDefault('isReadReceiptRequested', false),
      graphDefault('isDeliveryReceiptRequested', false),
      graphDefault('flag', { flagStatus: 'notFlagged' }),
    ],
  },
  providerKey: {
    travels: fact('none', `${S.providers}: sendMail has no idempotency key`),
    name: fact(null, S.providers),
    maxLength: fact(null, S.providers),
    charset: fact(null, S.providers),
    scope: fact(
      'none: Graph folds no re-sends of sendMail; the business-operation id travels only as a lookup tag (a single-value extended property on the message)',
      S.providers,
    ),
  },
  keyReuse: fact('no key exists: every sendMail that reaches Graph is one more mail', S.providers),
  parameterMatching: fact('none', S.providers),
  storedResult: {
    semantics: fact('none', `${S.providers}: 202, no body, no idempotency key`),
    includesErrors: fact(false, S.providers),
  },
  lookup: {
    method: fact(
      'search',
      `${S.providers}: Sent Items $filter on singleValueExtendedProperties; ${S.extendedPropertyFilter}`,
    ),
    consistencyDelay: fact<Duration | null>('unknown', `${S.providers}: "Delay before it appears: unknown"`),
    lateApplyBound: fact<Duration>(
      'unknown',
      `${S.sendMail}: sendMail answers 202 Accepted and the message is processed asynchronously; no deadline for saving it to Sent Items is documented`,
    ),
  },
  retention: { minimum: fact(null, `${S.providers}: nothing is stored for a re-send`) },
  concurrency: fact('duplicates', `${S.providers}: no idempotency key`),
  refusals: [
    '404 mailbox not found',
    '409 conflict',
    '507 mailbox quota',
    '500/502/503/504 and other 5xx, timeout, reset: unknown ⇒ Sent Items lookup, never resent (Graph has delivered mail after retried 504s)',
  ],
  limits: { maxAttempts: 3, maxElapsed: '10m', lookupWindow: '5m' },
  reconciler:
    "the runner, through doLookup: GET /{mailbox}/mailFolders/sentitems/messages?$filter=singleValueExtendedProperties/Any(ep: ep/id eq '<tag>' and ep/value eq '<business-operation id>')&$expand=singleValueExtendedProperties($filter=id eq '<tag>'); the one match whose tag carries exactly this id is adopted (Graph's filter ignores case), two are \"cannot tell\" (a duplicate a person must see), an empty answer is \"cannot tell\" (never \"not sent\") because the delay is unknown",
  handoff:
    'an unknown outcome (timeout, reset, 5xx, lost 202) whose mail is not found in Sent Items within the lookup window — the runner never resends blindly',
  unverified: [
    ...createNotes('a sent mail', 'send and save the message', S.sendMail),
    note(
      'lookup.consistencyDelay',
      'how long after a 202 the mail appears in Sent Items (202 = accepted, not delivered; it reaches Sent Items after transport)',
      S.providers,
    ),
    note(
      'lookup.method',
      'the Sent Items $filter on the extended property is exercised against the loopback sandbox only, not a live tenant',
      S.extendedPropertyFilter,
    ),
  ],
});

export const eventsCreateCard = msGraphCard({
  operation: 'msgraph.events.create',
  sideEffect: {
    kind: fact('create', S.createEvent),
    idempotentByNature: fact(false, S.createEvent),
    rejectionMayCreate: rejectionLeaves('an event'),
  },
  businessOperationId: {
    rule: `derived from intent fields ${MAILBOX}, event.subject, event.start, event.end (one meeting slot with one subject in one calendar), or given by the caller; ${ZONE_AS_SPELLED}`,
    intentFields: ['mailbox', 'event.subject', 'event.start', 'event.end'],
    // An agent may copy a time back from Graph, which returns it with a seven-digit zero fraction.
    normalize: [
      {
        field: 'event.subject',
        steps: ['trim'],
        source: `${S.createEventExample}: Graph keeps the subject as given and does not deduplicate events without a transactionId of the same operation, so the subject's equality is retrysafe's: surrounding white space an agent adds is not another meeting; case, inner white space and compatibility forms are kept apart (docs/concepts.md, Normalisation)`,
      },
      ...(['start', 'end'] as const).map((at) => ({
        field: `event.${at}.dateTime`,
        steps: ['datetime-zero-fraction' as const],
        source: `${S.createEventExample}: Create Event's second example sends "dateTime": "2017-08-30T11:00:00" and the event is returned with "2017-08-30T11:00:00.0000000" in the same time zone, so the two spellings are one time, and ${S.dateTimeTimeZone} writes every time with a seven-digit fraction, so trailing zeros of a fraction are Graph's padding (.5 is .5000000; another fraction stays exact; a time without seconds or with a zone suffix is refused before the claim, as ${S.dateTimeTimeZone} writes a time {date}T{time} with its zone in timeZone)`,
        evidence: S.createEventExample,
      })),
    ],
  },
  // isOnlineMeeting ("Default is false") stays exact: whether a mailbox setting that adds online meetings to all
  // meetings also applies to events Graph creates is not documented, and a default that depends on it is not one.
  paramComparison: (['allowNewTimeProposals', 'responseRequested'] as const).map((field) => ({
    field: `event.${field}`,
    compare: 'normalized' as const,
    providerDefault: true,
    source: `${S.eventResourcePinned}: the event resource documents ${field} with "Default is true", so true and none are one event (false stays another)`,
    evidence: S.eventResource,
  })),
  providerKey: {
    travels: fact('body', `${S.event}; ${S.providers}`),
    name: fact('transactionId', S.event),
    maxLength: fact<number | null>(
      'unknown',
      `${S.event}: no limit documented (the adapter sends at most 64 chars: rs- + the id when it fits A-Za-z0-9-, else rs- + a hex digest of it)`,
    ),
    charset: fact<string | null>('unknown', `${S.event}: not documented (the adapter sends only A-Za-z0-9-)`),
    scope: fact('unknown', `${S.providers}`),
    caseSensitive: fact<boolean>('unknown', `${S.event}: not documented`),
  },
  keyReuse: fact(
    'documented intent only: transactionId is a client id "to avoid redundant POST operations in case of client retries"; what a duplicate returns and how long it is remembered are unknown, so the runner never resends relying on it',
    S.providers,
  ),
  parameterMatching: fact<ParameterMatching>('unknown', S.providers),
  storedResult: {
    semantics: fact<StoredResultSemantics>('unknown', `${S.providers}: "what a duplicate returns … unknown"`),
    includesErrors: fact<boolean>('unknown', S.providers),
  },
  lookup: {
    method: fact('search', `${S.extendedPropertyFilter} (events: $filter on singleValueExtendedProperties)`),
    consistencyDelay: fact<Duration | null>('unknown', `${S.createEvent}: not documented`),
    lateApplyBound: fact<Duration>('unknown', `${S.createEvent} documents no server-side request deadline`),
  },
  retention: {
    minimum: fact<Duration | null>('unknown', `${S.providers}: "how long it is remembered: unknown"`),
  },
  concurrency: fact<ConcurrencyBehaviour>('unknown', S.providers),
  refusals: [
    '404 mailbox or calendar not found',
    '409: may mean the first request already created it ⇒ unknown ⇒ lookup',
    '500/502/503/504 and other 5xx, timeout, reset: unknown ⇒ lookup, never resent',
  ],
  limits: { maxAttempts: 3, maxElapsed: '5m', lookupWindow: '2m' },
  reconciler:
    "the runner, through doLookup: GET /{mailbox}/events?$filter=singleValueExtendedProperties/Any(ep: ep/id eq '<tag>' and ep/value eq '<business-operation id>')&$expand=singleValueExtendedProperties($filter=id eq '<tag>'); the one match whose tag carries exactly this id is adopted (Graph's filter ignores case), two are \"cannot tell\", an empty answer is \"cannot tell\"",
  handoff:
    'an unknown outcome whose event is not found within the lookup window (a resend with the same transactionId is not relied on: its effect is unknown)',
  unverified: [
    ...createNotes('an event', 'create the event', S.createEvent),
    note('providerKey.maxLength', 'maximum transactionId length', S.event),
    note('providerKey.caseSensitive', 'whether Graph tells transactionIds apart by letter case', S.event),
    note('providerKey.charset', 'characters allowed in transactionId', S.event),
    note('providerKey.scope', 'whether transactionId is unique per mailbox, per calendar or per app', S.providers),
    note('parameterMatching', 'what a second POST with the same transactionId and other fields does', S.providers),
    note('storedResult.semantics', 'what a duplicate POST with the same transactionId returns', S.providers),
    note(
      'storedResult.includesErrors',
      'whether an error for the first POST is remembered for the transactionId',
      S.providers,
    ),
    note(
      'lookup.consistencyDelay',
      'how soon a created event is visible to an $filter query on /events',
      S.createEvent,
    ),
    note('retention.minimum', 'how long Graph remembers a transactionId', S.providers),
    note('concurrency', 'what two concurrent POSTs with one transactionId do', S.providers),
  ],
});

export const todoTasksCreateCard = msGraphCard({
  operation: 'msgraph.todo.tasks.create',
  sideEffect: {
    kind: fact('create', S.createTask),
    idempotentByNature: fact(false, S.createTask),
    rejectionMayCreate: rejectionLeaves('a task'),
  },
  businessOperationId: {
    rule: `derived from intent fields ${MAILBOX}, listId, task.title and task.dueDateTime when given (one task of one title due at one time in one list), or given by the caller; ${ZONE_AS_SPELLED}`,
    // The due date tells two tasks of one title apart ("Pay rent" each month): outside the intent the second was
    // refused as a params conflict and never made.
    intentFields: ['mailbox', 'listId', 'task.title', 'task.dueDateTime'],
    optionalIntentFields: ['task.dueDateTime'],
    normalize: [
      {
        field: 'task.title',
        steps: ['trim'],
        source: `${S.createTask}: Graph keeps the title as given and does not deduplicate tasks, so the title's equality is retrysafe's: surrounding white space an agent adds is not another task; compatibility forms, case and inner white space are kept apart, as Graph keeps them (docs/concepts.md, Normalisation)`,
      },
      {
        field: 'task.dueDateTime.dateTime',
        steps: ['datetime-zero-fraction'],
        source: `${S.createTask}: dueDateTime is a dateTimeTimeZone, the type of an event's start; ${S.createEventExample}: Create Event's second example sends "dateTime": "2017-08-30T11:00:00" and gets "2017-08-30T11:00:00.0000000" back, so the two spellings are one time, and ${S.dateTimeTimeZone} writes every time with a seven-digit fraction, so trailing zeros of a fraction are Graph's padding (.5 is .5000000; another fraction stays exact; a date alone, a time without seconds or with a zone suffix is refused before the claim, as ${S.dateTimeTimeZone} writes a time {date}T{time} with its zone in timeZone)`,
        evidence: S.createEventExample,
      },
    ],
  },
  // importance stays exact: the same example returns "low" for a task created without it, which other pages do not
  // confirm as the default; a default read wrongly would answer a task asked as "low" with one that is not.
  paramComparison: (
    [
      ['status', 'notStarted'],
      ['isReminderOn', false],
    ] as const
  ).map(([field, value]) => ({
    field: `task.${field}`,
    compare: 'normalized' as const,
    providerDefault: value,
    source: `${S.createTaskExample}: Create todoTask's example sends no ${field} and the task is returned with "${field}": ${JSON.stringify(value)}, so that value and none are one task (any other value stays exact)`,
    evidence: S.createTaskExample,
  })),
  providerKey: {
    travels: fact('none', `${S.createTask}: no client id or idempotency key in the request`),
    name: fact(null, S.createTask),
    maxLength: fact(null, S.createTask),
    charset: fact(null, S.createTask),
    scope: fact(
      'none: the business-operation id travels only as a lookup tag (linkedResources[].externalId, applicationName retrysafe)',
      S.linkedResource,
    ),
  },
  keyReuse: fact('no key exists: every POST that reaches Graph is one more task', S.createTask),
  parameterMatching: fact('none', S.createTask),
  storedResult: {
    semantics: fact('none', S.createTask),
    includesErrors: fact(false, S.createTask),
  },
  lookup: {
    method: fact(
      'search',
      `${S.listTasks} with $filter=linkedResources/any(r: r/applicationName eq 'retrysafe' and r/externalId eq '<business-operation id>')`,
    ),
    consistencyDelay: fact<Duration | null>('unknown', `${S.listTasks}: not documented`),
    lateApplyBound: fact<Duration>('unknown', `${S.createTask} documents no server-side request deadline`),
  },
  retention: { minimum: fact(null, S.createTask) },
  concurrency: fact('duplicates', S.createTask),
  refusals: [
    '404 mailbox or list not found',
    '409 conflict',
    '500/502/503/504 and other 5xx, timeout, reset: unknown ⇒ lookup, never resent',
  ],
  limits: { maxAttempts: 3, maxElapsed: '5m', lookupWindow: '2m' },
  reconciler:
    'the runner, through doLookup: GET /{mailbox}/todo/lists/{listId}/tasks?$filter=linkedResources/any(r: r/applicationName eq \'retrysafe\' and r/externalId eq \'<business-operation id>\') (a link the caller gives in retrysafe’s name is dropped, so only this adapter’s tag matches), with $expand=linkedResources; the one match whose link carries exactly this id is adopted, two are "cannot tell"; an empty or refused answer is "cannot tell"',
  handoff: 'an unknown outcome whose task is not found within the lookup window',
  unverified: [
    ...createNotes('a task', 'create the task', S.createTask),
    note('lookup.consistencyDelay', 'how soon a created task is visible to a list query', S.listTasks),
    note(
      'lookup.method',
      'Graph documents linkedResources on a task, not a $filter on linkedResources/externalId nor its $expand on a task list; a live tenant may refuse either (400), which the adapter reads as "cannot tell" ⇒ handoff, never a resend',
      S.linkedResource,
    ),
  ],
});

export const msGraphCards = {
  'mail.send': mailSendCard,
  'events.create': eventsCreateCard,
  'todo.tasks.create': todoTasksCreateCard,
} as const;
