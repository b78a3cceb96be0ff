import type { SimplePublicObject as SdkRecord } from '@hubspot/api-client/lib/codegen/crm/objects/index.js';
import type {
  FramedExecuteContext,
  FramedLookupContext,
  JsonSchema,
  LookupResult,
  Outcome,
  ProviderKey,
  ProviderKeyRule,
  RetrySafetyCard,
} from '@retrysafe/contract';
import { businessOperationId } from '@retrysafe/contract';
import { intentLookupFailure, lookupMiss, type SchemaType } from '@retrysafe/contract/provider';
import {
  cannotTellFrom,
  type HubSpotResponse,
  outcomeFromFailure,
  refs,
  responseOf,
  uniqueConflictOf,
} from './hubspot-errors.js';
import {
  type CallSettings,
  contactsApi,
  FilterOperator,
  objectsApi,
  ticketsApi,
  type WireRecord,
} from './hubspot-http.js';

/**
 * HubSpot property values are strings on the wire (the SDK's `properties: { [key: string]: string }`,
 * https://github.com/HubSpot/hubspot-api-nodejs/blob/master/codegen/crm/objects/models/SimplePublicObjectInput.ts),
 * so only strings are accepted: a number 5 beside a string "5" would be two business operations for one value sent.
 */
export type PropertyValue = string;

/** An operation's params as its schema describes them, with property values typed. */
type ParamsOf<N extends keyof typeof PARAMS_SCHEMAS> = SchemaType<(typeof PARAMS_SCHEMAS)[N]> & {
  readonly properties: Readonly<Record<string, PropertyValue>>;
};
export type ContactsUpdateParams = ParamsOf<'contacts.update'>;
export type ObjectsUpsertParams = ParamsOf<'objects.upsert'>;
export type TicketsCreateParams = ParamsOf<'tickets.create'>;

/** Each HubSpot operation's params and the record a `done` result holds (runner.run checks a call against them). */
export type HubSpotOperationTypes = {
  readonly [N in keyof typeof PARAMS_SCHEMAS]: { readonly params: ParamsOf<N>; readonly result: HubSpotRecord };
};

/**
 * Provider keys: up to 100 characters of the business-operation id's alphabet in lower case; a longer id, or one with an
 * upper-case letter, becomes a digest. Whether HubSpot compares unique values case-insensitively is not documented, so
 * two ids that differ only in case never get keys that do (a derived id is lower case already).
 */
export const KEY_RULE: ProviderKeyRule = { maxLength: 100, charset: 'a-z0-9._:/-' };

/** What the operations need from the adapter's options; a call adds its signal. */
export interface Runtime extends Omit<CallSettings, 'signal'> {
  readonly idProperty: string;
}

const PROPERTY_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;

const propertiesSchema = {
  type: 'object',
  minProperties: 1,
  propertyNames: { pattern: PROPERTY_NAME.source },
  additionalProperties: { type: 'string' },
} as const;
const text = { type: 'string', minLength: 1, pattern: '\\S' } as const;

const object = <const R extends readonly string[], const P extends Record<string, JsonSchema>>(
  required: R,
  properties: P,
) => ({ type: 'object', required, additionalProperties: false, properties }) as const;

/** The one definition of each operation's params: the runner checks it before the claim, the frame on every attempt. */
export const PARAMS_SCHEMAS = {
  'contacts.update': object(['contactId', 'properties'], {
    // Not `.` or `..`: the SDK puts it in the URL path, where a dot segment resolves to another path.
    contactId: {
      ...text,
      pattern: '^(?!\\.\\.?$)[\\s\\S]*\\S',
      description: 'Contact record id, or the value of idProperty',
    },
    properties: { ...propertiesSchema, description: 'Property values to set; an empty string clears one' },
    idProperty: {
      type: 'string',
      pattern: PROPERTY_NAME.source,
      description: 'Unique property to find the contact by, e.g. email',
    },
  }),
  'objects.upsert': object(['objectType', 'ref', 'properties'], {
    // HubSpot takes a type's id or its name in the path (2-1234567, p1234567_orders): one type, two spellings, two
    // operations and two records. Only the id is taken (https://developers.hubspot.com/docs/guides/crm/using-object-apis).
    objectType: {
      type: 'string',
      pattern: '^(0|[1-9]\\d*)-(0|[1-9]\\d*)$',
      description: 'Object type id, e.g. 2-1234567 (a custom object) or 0-1 (contacts); names are refused',
    },
    ref: {
      ...text,
      description: 'Your reference for the record: every upsert of one ref writes that one record',
    },
    properties: { ...propertiesSchema, description: 'The record’s properties' },
  }),
  'tickets.create': object(['ref', 'properties'], {
    ref: { ...text, description: 'Your reference for what the ticket is about; names the business intent' },
    properties: {
      ...propertiesSchema,
      required: ['subject', 'hs_pipeline', 'hs_pipeline_stage'],
      properties: { subject: text, hs_pipeline: text, hs_pipeline_stage: text },
      description: 'Ticket properties: subject, hs_pipeline, hs_pipeline_stage, content, …',
    },
  }),
} as const satisfies Record<string, JsonSchema>;

/** A HubSpot record as plain JSON (dates as ISO strings), for the ledger and the caller. */
export type HubSpotRecord = Readonly<ReturnType<typeof plain>>;

function plain(r: SdkRecord) {
  const iso = (d: unknown) =>
    d instanceof Date && !Number.isNaN(d.getTime()) ? d.toISOString() : typeof d === 'string' ? d : null;
  return {
    id: String(r.id),
    properties: { ...r.properties },
    createdAt: iso(r.createdAt),
    updatedAt: iso(r.updatedAt),
    archived: r.archived === true,
  };
}

function truncated(message: string, wire: WireRecord): Outcome {
  return { kind: 'unknown', cause: 'truncated-response', message, ...wireRefs(wire) };
}

function hasId(r: SdkRecord | null | undefined): r is SdkRecord {
  return typeof r?.id === 'string' && r.id.length > 0;
}

/** One SDK call on a fresh wire record; what it throws is classified by `failed` from what reached the wire. */
async function attempt(
  call: (wire: WireRecord) => Promise<Outcome>,
  failed: (err: unknown, wire: WireRecord) => Outcome | Promise<Outcome> = outcomeFromFailure,
): Promise<Outcome> {
  const wire: WireRecord = { started: false };
  try {
    return await call(wire);
  } catch (err) {
    return failed(err, wire);
  }
}

/** A write that answered a record: succeeded, or unknown when the record has no id. */
const written = (r: SdkRecord, wire: WireRecord): Outcome =>
  hasId(r) ? recordOutcome('succeeded', r, wire) : truncated('HubSpot answered without a record id', wire);

function recordOutcome(kind: 'succeeded' | 'replayed', r: SdkRecord, wire: WireRecord, extra?: object) {
  return { kind, result: { ...plain(r), ...extra }, providerRef: String(r.id), ...wireRefs(wire) } satisfies Outcome;
}

function wireRefs(wire: WireRecord): { status?: number; requestId?: string } {
  const requestId = wire.headers?.['x-hubspot-correlation-id'];
  return { ...(wire.status !== undefined ? { status: wire.status } : {}), ...(requestId ? { requestId } : {}) };
}

/** The contact a contacts.update names, as its record id: HubSpot identifies a contact "by ID or email/unique property
 * value", so 101 and the email of contact 101 are one contact, whose changes must be one operation's revisions (else A by
 * id, B by email, A by id again is answered from the ledger and the contact stays B). By record id: no request. */
export async function contactTarget(rt: Runtime, intent: Record<string, unknown>, signal: AbortSignal) {
  const { contactId, idProperty } = intent as Pick<ContactsUpdateParams, 'contactId' | 'idProperty'>;
  if (idProperty === undefined || idProperty === 'hs_object_id') return { contactId };
  const wire: WireRecord = { started: false };
  let failed: Outcome;
  try {
    const api = contactsApi({ ...rt, signal }, wire);
    const r = await api.basic.getById(contactId, ['hs_object_id'], undefined, undefined, false, idProperty);
    if (hasId(r)) return { contactId: r.id };
    failed = truncated('HubSpot answered without a record id', wire);
  } catch (err) {
    failed = outcomeFromFailure(err, wire);
  }
  throw intentLookupFailure('contactId', contactMiss(idProperty, failed), failed);
}

/** Why the contact could not be read, saying only what HubSpot's answer shows. */
function contactMiss(idProperty: string, failed: Outcome): string {
  const reason = failed.kind === 'rejected' ? failed.reason : null;
  if (reason === 'not-found') return `HubSpot has no contact with this ${idProperty}`;
  if (reason === 'permission')
    return `HubSpot refused to read the contact by its ${idProperty}: the token needs crm.objects.contacts.read, or give the record id`;
  if (reason === 'authentication')
    return `HubSpot refused the token, so the contact could not be read by its ${idProperty}: give a valid token`;
  return `HubSpot could not say which contact this ${idProperty} names, so the operation's id cannot be told`;
}

/** The contact as the runner read it (its record id) when it did; else as the params address it. By record id, an email
 * that passed to another contact since the read never sends the change there. */
const addressOf = (p: ContactsUpdateParams, ctx: Pick<FramedExecuteContext, 'target'>) =>
  ctx.target ? ([String(ctx.target.contactId), undefined] as const) : ([p.contactId, p.idProperty] as const);

const executeContactsUpdate = (rt: Runtime, p: ContactsUpdateParams, ctx: FramedExecuteContext) =>
  attempt(async (wire) => {
    const api = contactsApi({ ...rt, signal: ctx.signal }, wire);
    const [contactId, idProperty] = addressOf(p, ctx);
    return written(await api.basic.update(contactId, { properties: { ...p.properties } }, idProperty), wire);
  });

async function lookupContactsUpdate(
  rt: Runtime,
  p: ContactsUpdateParams,
  ctx: FramedLookupContext,
  card: RetrySafetyCard,
): Promise<LookupResult> {
  const wanted = p.properties;
  const wire: WireRecord = { started: false };
  let r: SdkRecord;
  try {
    const api = contactsApi({ ...rt, signal: ctx.signal }, wire);
    const [contactId, idProperty] = addressOf(p, ctx);
    r = await api.basic.getById(contactId, Object.keys(wanted), undefined, undefined, false, idProperty);
  } catch (err) {
    const outcome = outcomeFromFailure(err, wire);
    if (outcome.kind !== 'rejected' || outcome.reason !== 'not-found') return cannotTellFrom(outcome, 'GET contact');
    return { kind: 'found', outcome };
  }
  const differing = Object.entries(wanted)
    .filter(([name, value]) => (r.properties[name] ?? '') !== value)
    .map(([name]) => name);
  if (differing.length === 0) return { kind: 'found', outcome: recordOutcome('succeeded', r, wire) };
  const miss = `contact ${r.id} does not hold the requested values of ${differing.join(', ')}`;
  return lookupMiss(card, ctx, miss, { providerRef: String(r.id), ...wireRefs(wire) });
}

/** The upsert's id property value: it names the record (objectType and trimmed ref, as the card's id rule reads them),
 * so every change of one ref writes one record and two refs never share one; a digest in lower case, since whether
 * HubSpot compares unique values case-insensitively is not documented. */
export const recordKey = (p: Pick<ObjectsUpsertParams, 'objectType' | 'ref'>): string =>
  businessOperationId('hubspot.objects.upsert', { objectType: p.objectType, ref: p.ref.trim() });

const executeObjectsUpsert = (rt: Runtime, p: ObjectsUpsertParams, ctx: FramedExecuteContext) =>
  attempt(async (wire) => {
    const key = recordKey(p);
    const r = await objectsApi({ ...rt, signal: ctx.signal }, wire).batch.upsert(p.objectType, {
      inputs: [{ id: key, idProperty: rt.idProperty, properties: { ...p.properties } }],
    });
    if (!Array.isArray(r?.results)) return truncated('HubSpot answered the upsert without results', wire);
    const item = r.results.find((x) => x.properties?.[rt.idProperty] === key) ?? r.results[0];
    if (!hasId(item)) {
      // 207 multi-status: only a validation error proves nothing was written.
      const e = 'errors' in r && Array.isArray(r.errors) ? r.errors[0] : undefined;
      const message = e?.message ?? 'HubSpot answered the upsert without a result for this input';
      const code = e?.category;
      if (code === 'VALIDATION_ERROR')
        return { kind: 'rejected', reason: 'validation', message, code, ...wireRefs(wire) };
      return { kind: 'unknown', cause: 'other', message, ...(code ? { code } : {}), ...wireRefs(wire) };
    }
    return recordOutcome('succeeded', item, wire, { new: item._new === true });
  });

const TICKET_PROPERTIES = ['subject', 'hs_pipeline', 'hs_pipeline_stage'];

function executeTicketsCreate(rt: Runtime, p: TicketsCreateParams, ctx: FramedExecuteContext): Promise<Outcome> {
  const key = ctx.providerKey!; // the frame's: these operations' key rule is never null
  const properties = { ...p.properties, [rt.idProperty]: key };
  return attempt(
    async (wire) => {
      const api = ticketsApi({ ...rt, signal: ctx.signal }, wire);
      return written(await api.basic.create({ properties, associations: [] }), wire);
    },
    (err, wire) => {
      const res = responseOf(wire);
      const duplicate = res && uniqueConflictOf(res);
      if (res && duplicate) return adoptDuplicateTicket(rt, key, res, duplicate.existingId, ctx.signal);
      return outcomeFromFailure(err, wire);
    },
  );
}

/** A unique value is taken: adopt the existing ticket only when a GET shows it holds this operation's key. */
async function adoptDuplicateTicket(
  rt: Runtime,
  key: ProviderKey,
  res: HubSpotResponse,
  existingId: string | null,
  signal: AbortSignal,
): Promise<Outcome> {
  const base = refs(res, 'CONFLICT');
  const lookItUp = (why: string): Outcome => ({
    kind: 'unknown',
    cause: 'other',
    message: `HubSpot refused the ticket as a duplicate ${why}: look it up`,
    ...(existingId === null ? {} : { providerRef: existingId }),
    ...base,
  });
  if (existingId === null) return lookItUp('without naming the existing one');
  let existing: SdkRecord;
  try {
    const api = ticketsApi({ ...rt, signal }, { started: false });
    existing = await api.basic.getById(existingId, [rt.idProperty, ...TICKET_PROPERTIES]);
  } catch {
    return lookItUp(`of ${existingId}, which could not be read back`);
  }
  if (existing.properties[rt.idProperty] === key)
    return { kind: 'replayed', result: plain(existing), providerRef: existingId, ...base };
  return {
    kind: 'rejected',
    reason: 'conflict',
    message: `HubSpot refused the ticket: ticket ${existingId} holds one of its unique values, but not this operation's ${rt.idProperty}`,
    providerRef: existingId,
    ...base,
  };
}

/** A CRM search in `objectType` for `key` in the id property, showing the `shown` properties of a hit; with `wanted`,
 * a hit is this operation's only when it holds those values. */
async function searchByKey(
  rt: Runtime,
  ctx: FramedLookupContext,
  card: RetrySafetyCard,
  objectType: string,
  key: string,
  shown: readonly string[],
  wanted?: Readonly<Record<string, string>>,
): Promise<LookupResult> {
  const wire: WireRecord = { started: false };
  const request = {
    filterGroups: [{ filters: [{ propertyName: rt.idProperty, operator: FilterOperator.Eq, value: key }] }],
    properties: [rt.idProperty, ...shown],
    // The most HubSpot allows a page: EQ may answer other spellings of the key before this operation's record.
    limit: 200,
  };
  let results: SdkRecord[];
  let more: boolean;
  try {
    // The objects search is the tickets search too: POST /crm/v3/objects/{objectType}/search.
    const answer = await objectsApi({ ...rt, signal: ctx.signal }, wire).search.doSearch(objectType, request);
    results = answer.results;
    more = answer.paging?.next !== undefined;
  } catch (err) {
    return cannotTellFrom(outcomeFromFailure(err, wire), `CRM search in ${objectType}`);
  }
  const [hit, ...others] = results.filter((r) => r.properties[rt.idProperty] === key);
  const refs = wireRefs(wire);
  // Two records with the key: the property is not unique here, and adopting one would hide the other from a person.
  if (hit && others.length > 0) {
    const ids = [hit, ...others].map((r) => r.id);
    const reason = `${ids.length} ${objectType} records hold ${rt.idProperty}=${key}: ${ids.join(', ')}`;
    return { kind: 'cannot-tell', reason, duplicates: ids, ...refs };
  }
  // EQ may answer other spellings first: this operation's record, or a second one, can sit past the page read.
  if (hit && more)
    return {
      kind: 'cannot-tell',
      reason: `${objectType} ${hit.id} holds the key on the first page, and more results follow`,
      ...refs,
    };
  const differing = Object.entries(wanted ?? {}).filter(([name, value]) => (hit?.properties[name] ?? '') !== value);
  if (hit && differing.length > 0) {
    const miss = `${objectType} ${hit.id} does not hold the requested values of ${differing.map(([n]) => n).join(', ')}`;
    return lookupMiss(card, ctx, miss, { providerRef: String(hit.id), ...refs });
  }
  if (hit) return { kind: 'found', outcome: recordOutcome('succeeded', hit, wire) };
  if (ctx.firstDispatchedAt === null) return { kind: 'not-found', reason: 'never dispatched', ...refs };
  const miss = `no ${objectType} record with ${rt.idProperty}=${key}`;
  if (more) return { kind: 'cannot-tell', reason: `${miss} on the first page, and more results follow`, ...refs };
  return lookupMiss(card, ctx, miss, refs);
}

/** What each operation adds to its card: its description, its sensitive params and how it is sent and found. */
export const OPERATIONS = {
  'contacts.update': {
    description: 'Set property values on a HubSpot contact (PATCH; sending it twice sets the same values).',
    sensitiveFields: ['properties'],
    // A contact is one target however it is addressed: the id reads its record id (contactTarget).
    resolvesIntent: true,
    execute: executeContactsUpdate,
    lookup: lookupContactsUpdate,
  },
  'objects.upsert': {
    description:
      'Create or update one CRM record and set its properties (batch upsert), keyed by a unique property that holds a value derived from objectType and ref: every change of one ref writes one record.',
    // HubSpot's validation message quotes the refused value, whatever the property is called.
    sensitiveFields: ['properties'],
    execute: executeObjectsUpsert,
    lookup: (rt: Runtime, p: ObjectsUpsertParams, ctx: FramedLookupContext, card: RetrySafetyCard) =>
      searchByKey(rt, ctx, card, p.objectType, recordKey(p), Object.keys(p.properties), p.properties),
  },
  'tickets.create': {
    description:
      'Create a HubSpot ticket once: the business-operation id goes into a unique-value property, so a re-send is refused and the existing ticket adopted.',
    sensitiveFields: ['properties'],
    execute: executeTicketsCreate,
    lookup: (rt: Runtime, _p: TicketsCreateParams, ctx: FramedLookupContext, card: RetrySafetyCard) =>
      searchByKey(rt, ctx, card, 'tickets', ctx.providerKey!, TICKET_PROPERTIES), // its key rule is never null
  },
} as const;
