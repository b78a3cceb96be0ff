import type { FramedLookupContext, FrameOperation, JsonSchema, ProviderKeyRule } from '@retrysafe/contract';
import type { SchemaType } from '@retrysafe/contract/provider';
import { eventsCreateCard, mailSendCard, todoTasksCreateCard } from './msgraph-cards.js';

/** The extended property (in retrysafe's own property set) tagging messages and events with the id; lookups filter on it. */
export const DEFAULT_EXTENDED_PROPERTY_ID =
  'String {4b7f0c1e-9a2d-4e3f-8c61-5d2a9e7b3f10} Name retrysafeBusinessOperationId';
export const DEFAULT_APPLICATION_NAME = 'retrysafe';

/** Graph documents no length or charset for `transactionId`: a conservative 64-character key. */
const TRANSACTION_ID_RULE: ProviderKeyRule = { maxLength: 64, charset: 'A-Za-z0-9-', prefix: 'rs-' };

/** What `mail.send` yields: accepted (a 202, no id) or found in Sent Items by the lookup. */
export type MailSendResult = Readonly<ReturnType<typeof mailResult>>;
const mailResult = (state: 'accepted' | 'in-sent-items', item: Record<string, unknown>) => ({
  state,
  messageId: str(item.id),
  internetMessageId: str(item.internetMessageId),
  sentDateTime: str(item.sentDateTime),
});
/** A created item as its selected fields (null when absent); its id is always there. */
type ItemResult<F extends readonly string[]> = { readonly [K in F[number]]: string | null } & { readonly id: string };
export type EventResult = ItemResult<typeof EVENT_FIELDS>;
export type TaskResult = ItemResult<typeof TASK_FIELDS>;

/** `mail.send` params. `mailbox` is `me` or a user id / userPrincipalName. */
export type MailSendParams = SchemaType<typeof MAIL_SEND_PARAMS>;
export type EventsCreateParams = SchemaType<typeof EVENTS_CREATE_PARAMS>;
export type TodoTasksCreateParams = SchemaType<typeof TODO_TASKS_CREATE_PARAMS>;

/** Each Graph operation's params and what a `done` result holds (runner.run checks a call against them). */
export type MsGraphOperationTypes = {
  readonly 'mail.send': { readonly params: MailSendParams; readonly result: MailSendResult };
  readonly 'events.create': { readonly params: EventsCreateParams; readonly result: EventResult };
  readonly 'todo.tasks.create': { readonly params: TodoTasksCreateParams; readonly result: TaskResult };
};

/** The ids of the operation and where the adapter's options say to write them. */
export type BuildContext = Pick<FramedLookupContext, 'businessOperationId' | 'providerKey' | 'target'> & {
  readonly extendedPropertyId: string;
  readonly applicationName: string;
};

/** An operation as the adapter runs it: the frame's spec plus its one POST, its lookup query and how it reads an item. */
export interface GraphOperation<P = unknown> extends FrameOperation {
  build(params: P, ctx: BuildContext): { readonly path: string; readonly body: Record<string, unknown> };
  lookup(params: P, ctx: BuildContext): ReturnType<typeof taggedLookup>;
  /** Whether a listed item carries this operation's tag exactly: Graph's filter compares the value ignoring case. */
  owns(item: Record<string, unknown>, ctx: BuildContext): boolean;
  read(item: Record<string, unknown>, found: boolean): { result: unknown; providerRef?: string };
  /** True when a 409 may mean "already created by the first request" (unknown, not rejected). */
  readonly conflictMayMeanApplied?: boolean;
}

export const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The mailbox as the runner read it (`me`, else the user's object id) when it did; else as the params name it. By id, a
 * UPN given to another user since the read never sends or reads there. */
const mailboxPath = ({ mailbox }: { mailbox: string }, { target }: BuildContext) => {
  const user = String(target?.mailbox ?? mailbox);
  return user === 'me' ? '/me' : `/users/${encodeURIComponent(user)}`;
};

const odataString = (value: string) => `'${value.replace(/'/g, "''")}'`;

/** The lookup of a message or event by the extended property that tags it with the business-operation id. */
const taggedLookup = (path: string, select: readonly string[], ctx: BuildContext) => ({
  path,
  filter: `singleValueExtendedProperties/Any(ep: ep/id eq ${odataString(ctx.extendedPropertyId)} and ep/value eq ${odataString(ctx.businessOperationId)})`,
  select,
  expand: `singleValueExtendedProperties($filter=id eq ${odataString(ctx.extendedPropertyId)})`,
});

/** An extended property with the adapter's property id (Graph compares property ids ignoring case). */
const isTagProperty = (p: unknown, ctx: BuildContext): p is Record<string, unknown> =>
  isObj(p) && typeof p.id === 'string' && p.id.toLowerCase() === ctx.extendedPropertyId.toLowerCase();

const ownsTag = (item: Record<string, unknown>, ctx: BuildContext) =>
  Array.isArray(item.singleValueExtendedProperties) &&
  item.singleValueExtendedProperties.some((p) => isTagProperty(p, ctx) && p.value === ctx.businessOperationId);

/** The item's single-value extended properties with the business-operation id's tag in place of any of its id. */
function withTag(existing: unknown, ctx: BuildContext): unknown[] {
  const others = Array.isArray(existing) ? existing.filter((p) => !isTagProperty(p, ctx)) : [];
  return [...others, { id: ctx.extendedPropertyId, value: ctx.businessOperationId }];
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

// The one definition of each operation's params: the runner checks it before the claim, the frame on every attempt.

const object = <const R extends readonly string[], const P extends Record<string, JsonSchema>>(
  required: R,
  properties: P,
) => ({ type: 'object', required, properties }) as const;
const text = { type: 'string', pattern: '\\S' } as const;
/** A path segment Graph gets as is: no "/", "?", "#" or white space, and not a dot segment (`..` resolves to another path). */
const segment = (description: string) =>
  ({ type: 'string', pattern: '^(?!\\.\\.?$)[^/?#\\s]+$', description }) as const;
/** A field the adapter owns: setting it is refused. */
const owned = (description: string) => ({ not: {}, description }) as const;

const recipientsSchema = {
  type: 'array',
  items: object(['emailAddress'], {
    emailAddress: object(['address'], { address: text, name: { type: 'string' } }),
  }),
} as const;
const itemBodySchema = object(['contentType', 'content'], {
  contentType: { enum: ['text', 'html'] },
  content: { type: 'string' },
});
// Graph's one spelling of a time ({date}T{time}, its zone in timeZone: the dateTimeTimeZone resource): the id digests it
// as written, so another spelling of one slot (no seconds, a Z) would be another operation and a second event.
const dateTimeSchema = object(['dateTime', 'timeZone'], {
  dateTime: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,7})?$' },
  timeZone: text,
});
const mailboxSchema = segment('"me" or a user id / userPrincipalName');
const MAIL_SEND_PARAMS = object(['mailbox', 'message'], {
  mailbox: mailboxSchema,
  message: object(['subject', 'body', 'toRecipients'], {
    subject: { type: 'string' },
    body: itemBodySchema,
    toRecipients: { ...recipientsSchema, minItems: 1 },
    ccRecipients: recipientsSchema,
    bccRecipients: recipientsSchema,
    // ASCII letters only: the card case-folds it, as Graph stores "Low" as "low"; a fold beyond ASCII (hıgh) is not Graph's.
    importance: { type: 'string', pattern: '^[A-Za-z]+$', description: 'low, normal or high, in any case' },
    // Declared so the card's defaults for them are checked against their types.
    isReadReceiptRequested: { type: 'boolean' },
    isDeliveryReceiptRequested: { type: 'boolean' },
    flag: object([], { flagStatus: { enum: ['notFlagged', 'complete', 'flagged'] } }),
  }),
  saveToSentItems: owned('always true: the Sent Items copy is how an unknown outcome is reconciled'),
});
const EVENTS_CREATE_PARAMS = object(['mailbox', 'event'], {
  mailbox: mailboxSchema,
  event: object(['subject', 'start', 'end'], {
    subject: text,
    start: dateTimeSchema,
    end: dateTimeSchema,
    body: itemBodySchema,
    attendees: { type: 'array' },
    allowNewTimeProposals: { type: 'boolean' },
    responseRequested: { type: 'boolean' },
    transactionId: owned('derived from the business-operation id; do not set it'),
  }),
});
const TODO_TASKS_CREATE_PARAMS = object(['mailbox', 'listId', 'task'], {
  mailbox: mailboxSchema,
  listId: segment('a To Do list id'),
  task: object(['title'], {
    title: text,
    body: itemBodySchema,
    dueDateTime: dateTimeSchema,
    status: { enum: ['notStarted', 'inProgress', 'completed', 'waitingOnOthers', 'deferred'] },
    isReminderOn: { type: 'boolean' },
  }),
});

export const mailSend: GraphOperation<MailSendParams> = {
  name: 'mail.send',
  description:
    'Send an email from a mailbox (POST /me/sendMail or /users/{id}/sendMail). No provider idempotency: the message is tagged with the business-operation id and reconciled from Sent Items; never resent after an unknown outcome.',
  card: mailSendCard,
  keyRule: null,
  // The id reads the user Graph resolves mailbox to (msgraph-adapter.ts).
  resolvesIntent: true,
  sensitiveFields: [
    'message.body',
    'message.toRecipients',
    'message.ccRecipients',
    'message.bccRecipients',
    'message.subject',
  ],
  paramsSchema: MAIL_SEND_PARAMS,
  build: (p, ctx) => ({
    path: `${mailboxPath(p, ctx)}/sendMail`,
    body: {
      message: { ...p.message, singleValueExtendedProperties: withTag(p.message.singleValueExtendedProperties, ctx) },
      saveToSentItems: true,
    },
  }),
  lookup: (p, ctx) =>
    taggedLookup(
      `${mailboxPath(p, ctx)}/mailFolders/sentitems/messages`,
      ['id', 'internetMessageId', 'sentDateTime'],
      ctx,
    ),
  owns: ownsTag,
  // sendMail answers 202 without a body: only the lookup finds the message.
  read(item, found) {
    const result = found ? mailResult('in-sent-items', item) : mailResult('accepted', {});
    return { result, ...(result.messageId ? { providerRef: result.messageId } : {}) };
  },
};

const EVENT_FIELDS = ['id', 'iCalUId', 'transactionId', 'webLink', 'createdDateTime'] as const;
const TASK_FIELDS = ['id', 'status', 'createdDateTime'] as const;

/** A created item as its selected fields (null when absent), its id as the provider reference. */
function readItem(fields: readonly string[]) {
  return (item: Record<string, unknown>): { result: unknown; providerRef?: string } => {
    const id = str(item.id) ?? '';
    const result = { ...Object.fromEntries(fields.map((f) => [f, str(item[f])])), id };
    return { result, ...(id ? { providerRef: id } : {}) };
  };
}

const eventsCreate: GraphOperation<EventsCreateParams> = {
  name: 'events.create',
  description:
    "Create a calendar event in a mailbox's default calendar (POST /me/events or /users/{id}/events) with a transactionId derived from the business-operation id; reconciled by an extended-property lookup.",
  card: eventsCreateCard,
  keyRule: TRANSACTION_ID_RULE,
  resolvesIntent: true,
  sensitiveFields: ['event.body', 'event.attendees', 'event.subject', 'event.location'],
  paramsSchema: EVENTS_CREATE_PARAMS,
  conflictMayMeanApplied: true,
  build: (p, ctx) => ({
    path: `${mailboxPath(p, ctx)}/events`,
    body: {
      ...p.event,
      transactionId: ctx.providerKey,
      singleValueExtendedProperties: withTag(p.event.singleValueExtendedProperties, ctx),
    },
  }),
  lookup: (p, ctx) => taggedLookup(`${mailboxPath(p, ctx)}/events`, EVENT_FIELDS, ctx),
  owns: ownsTag,
  read: readItem(EVENT_FIELDS),
};

const tasksPath = (p: TodoTasksCreateParams, ctx: BuildContext) =>
  `${mailboxPath(p, ctx)}/todo/lists/${encodeURIComponent(p.listId)}/tasks`;

const todoTasksCreate: GraphOperation<TodoTasksCreateParams> = {
  name: 'todo.tasks.create',
  description:
    'Create a Microsoft To Do task in a list (POST /me/todo/lists/{listId}/tasks). No provider idempotency: the task carries a linkedResource whose externalId is the business-operation id, and an unknown outcome is reconciled by a lookup on it or handed off.',
  card: todoTasksCreateCard,
  keyRule: null,
  resolvesIntent: true,
  sensitiveFields: ['task.body', 'task.title'],
  paramsSchema: TODO_TASKS_CREATE_PARAMS,
  build(p, ctx) {
    // A link in the adapter's name given in the params would tag the task with another operation's id.
    const existing = Array.isArray(p.task.linkedResources)
      ? (p.task.linkedResources as unknown[]).filter((l) => !(isObj(l) && l.applicationName === ctx.applicationName))
      : [];
    const link = {
      applicationName: ctx.applicationName,
      displayName: 'retrysafe business operation',
      externalId: ctx.businessOperationId,
    };
    return { path: tasksPath(p, ctx), body: { ...p.task, linkedResources: [...existing, link] } };
  },
  lookup: (p, ctx) => ({
    path: tasksPath(p, ctx),
    // Both: a caller's own link (another application) may carry an externalId equal to this id.
    filter: `linkedResources/any(r: r/applicationName eq ${odataString(ctx.applicationName)} and r/externalId eq ${odataString(ctx.businessOperationId)})`,
    select: TASK_FIELDS,
    expand: 'linkedResources',
  }),
  owns: (item, ctx) =>
    Array.isArray(item.linkedResources) &&
    item.linkedResources.some(
      (l) => isObj(l) && l.applicationName === ctx.applicationName && l.externalId === ctx.businessOperationId,
    ),
  read: readItem(TASK_FIELDS),
};

export const msGraphOperations: Readonly<Record<string, GraphOperation>> = {
  [mailSend.name]: mailSend,
  [eventsCreate.name]: eventsCreate,
  [todoTasksCreate.name]: todoTasksCreate,
};
