import type { SandboxReply as Reply } from '@retrysafe/sandbox-kit';
import {
  conflictError,
  notFoundError,
  type PropertyProblem,
  propertyValidationError,
  validationError,
} from './hubspot-errors-shapes.js';

/*
 * The sandbox's state: the CRM records of each object type, with the versions CRM search sees, and
 * what the objects API does to them (create, update, read, batch upsert, search). Every answer is a
 * reply; the server, its gates (auth, scopes, rate limits, faults) and routes are in hubspot-sandbox.ts.
 */

/** One CRM object type the sandbox holds. */
export interface SandboxObjectType {
  /** Names it is addressed by in paths: `tickets`, or a custom object's `2-100` and `p100_orders`. */
  readonly names: readonly string[];
  /** Singular label used in conflict messages (`Contact already exists. Existing ID: 7`). */
  readonly label: string;
  /** Property names that exist; any other name is a `PROPERTY_DOESNT_EXIST` validation error. */
  readonly properties: readonly string[];
  /** Unique-value properties (`hasUniqueValue: true`): a second record with the same value is refused. */
  readonly unique: readonly string[];
  /** Properties a create must carry. */
  readonly required?: readonly string[];
  /** The scope a 403 names when this type is denied. */
  readonly scope: string;
}

interface Version {
  readonly visibleAt: number;
  readonly properties: Readonly<Record<string, string>>;
}

export interface StoredRecord {
  readonly id: string;
  properties: Record<string, string>;
  readonly createdAt: number;
  updatedAt: number;
  /** What CRM search sees: the latest version whose visibleAt has passed. */
  readonly versions: Version[];
}

export interface TypeStore {
  readonly type: SandboxObjectType;
  readonly records: Map<string, StoredRecord>;
  writes: number;
}

const BATCH_MAX = 100;
const SEARCH_PAGE_MAX = 200;

/** The records of every object type, and what the objects API does to them. */
export interface CrmStore {
  /** The type a path names (any of its names), or undefined. */
  typeOf(name: string): TypeStore | undefined;
  readonly types: () => TypeStore[];
  create(store: TypeStore, body: Record<string, unknown>): Reply;
  update(store: TypeStore, id: string, idProp: string | null, body: Record<string, unknown>): Reply;
  read(store: TypeStore, id: string, idProp: string | null, select: string[] | null): Reply;
  upsert(store: TypeStore, body: Record<string, unknown>): Reply;
  search(store: TypeStore, body: Record<string, unknown>): Reply;
  /** Adds a record without a request (not counted as a write); throws when the properties are refused. */
  seed(store: TypeStore, properties: Record<string, string>): StoredRecord;
  setIndexingDelay(ms: number): void;
}

/** What the store's endpoints share: the records by type, the clock, the search lag and the next id. */
interface StoreState {
  readonly stores: Map<string, TypeStore>;
  readonly now: () => number;
  indexingDelayMs: number;
  nextId: number;
  readonly eqFoldsCase: boolean;
}

function write(
  st: StoreState,
  store: TypeStore,
  rec: StoredRecord | null,
  props: Record<string, string>,
): StoredRecord {
  const t = st.now();
  if (rec === null) {
    rec = { id: String(st.nextId++), properties: {}, createdAt: t, updatedAt: t, versions: [] };
    store.records.set(rec.id, rec);
  }
  for (const [name, value] of Object.entries(props)) {
    if (value === '') delete rec.properties[name];
    else rec.properties[name] = value;
  }
  rec.updatedAt = t;
  rec.versions.push({ visibleAt: t + st.indexingDelayMs, properties: { ...systemProperties(rec) } });
  store.writes++;
  return rec;
}

function create(st: StoreState, store: TypeStore, body: Record<string, unknown>): Reply {
  const props = checkProperties(store, body.properties, true);
  if (!props.ok) return props.reply;
  const conflict = uniqueConflict(store, props.value);
  if (conflict) return conflict;
  const rec = write(st, store, null, props.value);
  return { status: 201, body: toJson(rec, null) };
}

function update(
  st: StoreState,
  store: TypeStore,
  id: string,
  idProp: string | null,
  body: Record<string, unknown>,
): Reply {
  const located = locate(store, id, idProp);
  if (!located.ok) return located.reply;
  const found = located.value;
  if (!found) return { status: 404, body: notFoundError() };
  const props = checkProperties(store, body.properties, false);
  if (!props.ok) return props.reply;
  const conflict = uniqueConflict(store, props.value, found.id);
  if (conflict) return conflict;
  const rec = write(st, store, found, props.value);
  return { status: 200, body: toJson(rec, null) };
}

function read(store: TypeStore, id: string, idProp: string | null, select: string[] | null): Reply {
  const located = locate(store, id, idProp);
  if (!located.ok) return located.reply;
  const found = located.value;
  if (!found) return { status: 404, body: notFoundError() };
  return { status: 200, body: toJson(found, select) };
}

function upsert(st: StoreState, store: TypeStore, body: Record<string, unknown>): Reply {
  const inputs = body.inputs;
  if (!Array.isArray(inputs) || inputs.length === 0)
    return { status: 400, body: validationError('Invalid input JSON: "inputs" must be a non-empty array') };
  if (inputs.length > BATCH_MAX)
    return { status: 400, body: validationError(`Batch input is limited to ${BATCH_MAX} inputs`) };
  const startedAt = new Date(st.now()).toISOString();
  // Validate every input before applying any, as a batch does.
  const planned: { idProp: string; id: string; props: Record<string, string> }[] = [];
  const seen = new Set<string>();
  for (const input of inputs as Record<string, unknown>[]) {
    const idProp = typeof input?.idProperty === 'string' ? input.idProperty : 'hs_object_id';
    const id = input?.id;
    if (typeof id !== 'string' || id === '')
      return { status: 400, body: validationError('Each input needs a non-empty "id"') };
    if (!store.type.unique.includes(idProp))
      return {
        status: 400,
        body: validationError(`${idProp} is not a unique identifier property for this object type`),
      };
    if (seen.has(`${idProp}=${id}`))
      return {
        status: 400,
        body: validationError(`Duplicate IDs found in batch input: [${id}]. IDs must be unique`),
      };
    seen.add(`${idProp}=${id}`);
    const props = checkProperties(store, input.properties ?? {}, false);
    if (!props.ok) return props.reply;
    if (props.value[idProp] !== undefined && props.value[idProp] !== id)
      return { status: 400, body: validationError(`"${idProp}" in properties differs from the input id`) };
    planned.push({ idProp, id, props: props.value });
  }
  const results = planned.map(({ idProp, id, props }) => {
    const existing = findByUnique(store, idProp, id);
    const rec = write(st, store, existing ?? null, { ...props, [idProp]: id });
    return { ...toJson(rec, null), new: existing === undefined };
  });
  return {
    status: 200,
    body: { status: 'COMPLETE', results, startedAt, completedAt: new Date(st.now()).toISOString() },
  };
}

function search(st: StoreState, store: TypeStore, body: Record<string, unknown>): Reply {
  const limit = body.limit === undefined ? 10 : Number(body.limit);
  if (!Number.isInteger(limit) || limit < 0 || limit > SEARCH_PAGE_MAX)
    return { status: 400, body: validationError(`limit must be between 0 and ${SEARCH_PAGE_MAX}`) };
  const groups = Array.isArray(body.filterGroups) ? (body.filterGroups as { filters?: unknown }[]) : [];
  const select = Array.isArray(body.properties) && body.properties.length ? (body.properties as string[]) : null;
  const after = body.after === undefined ? 0 : Number(body.after);
  const t = st.now();
  const visible: { rec: StoredRecord; props: Readonly<Record<string, string>> }[] = [];
  for (const rec of store.records.values()) {
    let seenVersion: Version | undefined;
    for (const v of rec.versions) if (v.visibleAt <= t) seenVersion = v;
    if (!seenVersion) continue;
    if (groups.length && !groups.some((g) => matchesGroup(seenVersion!.properties, g, st.eqFoldsCase))) continue;
    visible.push({ rec, props: seenVersion.properties });
  }
  visible.sort((a, b) => Number(a.rec.id) - Number(b.rec.id));
  const page = visible.slice(after, after + limit);
  const results = page.map(({ rec, props }) => {
    const properties: Record<string, string | null> = {};
    for (const name of select ?? ['hs_object_id', 'createdate', 'hs_lastmodifieddate'])
      properties[name] = props[name] ?? null;
    return {
      id: rec.id,
      properties,
      createdAt: new Date(rec.createdAt).toISOString(),
      updatedAt: props.hs_lastmodifieddate,
      archived: false,
    };
  });
  const next = after + limit < visible.length ? { next: { after: String(after + limit) } } : {};
  return {
    status: 200,
    body: { total: visible.length, results, ...(Object.keys(next).length ? { paging: next } : {}) },
  };
}

export function createCrmStore(
  types: readonly SandboxObjectType[],
  now: () => number,
  indexingDelay: number,
  eqFoldsCase = false,
): CrmStore {
  const stores = new Map<string, TypeStore>();
  for (const type of types) {
    const store: TypeStore = { type, records: new Map(), writes: 0 };
    for (const name of type.names) stores.set(name, store);
  }
  const st: StoreState = { stores, now, indexingDelayMs: indexingDelay, nextId: 1001, eqFoldsCase };

  return {
    typeOf: (name) => st.stores.get(name),
    types: () => [...new Set(st.stores.values())],
    create: (store, b) => create(st, store, b),
    update: (store, id, idProp, b) => update(st, store, id, idProp, b),
    read,
    upsert: (store, b) => upsert(st, store, b),
    search: (store, b) => search(st, store, b),
    seed(store, properties) {
      const props = checkProperties(store, properties, false);
      if (!props.ok)
        throw new RangeError(
          `hubspot sandbox: cannot seed ${store.type.names[0]}: ${(props.reply.body as { message?: string }).message}`,
        );
      const rec = write(st, store, null, props.value);
      store.writes--; // seeding is not a write the adapter made
      return rec;
    },
    setIndexingDelay(ms) {
      st.indexingDelayMs = ms;
    },
  };
}

function toJson(rec: StoredRecord, select: readonly string[] | null) {
  const all = systemProperties(rec);
  const properties: Record<string, string | null> = {};
  const names = select ?? Object.keys(all);
  for (const name of names) properties[name] = all[name] ?? null;
  return {
    id: rec.id,
    properties,
    createdAt: new Date(rec.createdAt).toISOString(),
    updatedAt: new Date(rec.updatedAt).toISOString(),
    archived: false,
  };
}

function systemProperties(rec: StoredRecord): Record<string, string> {
  return {
    ...rec.properties,
    hs_object_id: rec.id,
    createdate: new Date(rec.createdAt).toISOString(),
    hs_lastmodifieddate: new Date(rec.updatedAt).toISOString(),
  };
}

function findByUnique(store: TypeStore, property: string, value: string, except?: string): StoredRecord | undefined {
  for (const rec of store.records.values()) {
    if (rec.id !== except && rec.properties[property] === value) return rec;
  }
  return undefined;
}

function checkProperties(store: TypeStore, props: unknown, forCreate: boolean): Checked<Record<string, string>> {
  if (typeof props !== 'object' || props === null || Array.isArray(props))
    return refuse({ status: 400, body: validationError('Invalid input JSON: "properties" must be an object') });
  const problems: PropertyProblem[] = [];
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(props as Record<string, unknown>)) {
    if (!store.type.properties.includes(name)) {
      problems.push({ name, error: 'PROPERTY_DOESNT_EXIST', message: `Property "${name}" does not exist` });
      continue;
    }
    if (value === null || typeof value === 'object') {
      problems.push({
        name,
        error: 'INVALID_PROPERTY_VALUE',
        message: `Property "${name}" must be a string, number or boolean`,
      });
      continue;
    }
    out[name] = String(value);
  }
  if (forCreate) {
    for (const name of store.type.required ?? []) {
      if (out[name] === undefined || out[name] === '')
        problems.push({ name, error: 'REQUIRED_PROPERTY', message: `Property "${name}" is required` });
    }
  }
  if (problems.length) return refuse({ status: 400, body: propertyValidationError(problems) });
  return { ok: true, value: out };
}

function uniqueConflict(store: TypeStore, props: Record<string, string>, except?: string): Reply | null {
  for (const property of store.type.unique) {
    const value = props[property];
    if (value === undefined || value === '') continue;
    const other = findByUnique(store, property, value, except);
    if (other) return { status: 409, body: conflictError(store.type.label, other.id) };
  }
  return null;
}

function locate(store: TypeStore, id: string, idProp: string | null): Checked<StoredRecord | undefined> {
  if (idProp === null || idProp === 'hs_object_id') return { ok: true, value: store.records.get(id) };
  if (!store.type.unique.includes(idProp))
    return refuse({
      status: 400,
      body: validationError(`${idProp} is not a unique identifier property for this object type`),
    });
  return { ok: true, value: findByUnique(store, idProp, id) };
}

type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reply: Reply };

function refuse(reply: Reply): { readonly ok: false; readonly reply: Reply } {
  return { ok: false, reply };
}

function matchesGroup(
  props: Readonly<Record<string, string>>,
  group: { filters?: unknown },
  eqFoldsCase: boolean,
): boolean {
  const fold = (v: string) => (eqFoldsCase ? v.toLowerCase() : v);
  const filters = Array.isArray(group.filters) ? (group.filters as Record<string, unknown>[]) : [];
  return filters.every((f) => {
    const name = String(f.propertyName ?? '');
    const value = props[name];
    switch (f.operator) {
      case 'EQ':
        return value !== undefined && fold(value) === fold(String(f.value));
      case 'NEQ':
        return value !== String(f.value);
      case 'IN':
        return value !== undefined && Array.isArray(f.values) && f.values.map(String).includes(value);
      case 'NOT_IN':
        return !(Array.isArray(f.values) && value !== undefined && f.values.map(String).includes(value));
      case 'HAS_PROPERTY':
        return value !== undefined && value !== '';
      case 'NOT_HAS_PROPERTY':
        return value === undefined || value === '';
      default:
        return false;
    }
  });
}
