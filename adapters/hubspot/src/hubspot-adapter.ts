import {
  type AccountOption,
  AdapterConfigurationError,
  defineAdapter,
  type FrameOperation,
  type OperationSpec,
  type TypedAdapter,
} from '@retrysafe/contract';
import { checkBaseUrl, checkToken, operationParamsErrors, positiveInteger } from '@retrysafe/contract/provider';
import { type HubSpotOperationName, hubSpotCardsFor } from './hubspot-cards.js';
import {
  type ContactsUpdateParams,
  contactTarget,
  type HubSpotOperationTypes,
  KEY_RULE,
  OPERATIONS,
  PARAMS_SCHEMAS,
} from './hubspot-operations.js';

export interface HubSpotAdapterOptions extends AccountOption {
  /** Private-app or OAuth access token, sent as `Authorization: Bearer …`. */
  readonly accessToken: string;
  /** Default `https://api.hubapi.com`; a loopback sandbox in tests (`http://127.0.0.1:PORT`). */
  readonly baseUrl?: string;
  /** Per request, headers and body included (default 30 000 ms). The SDK itself has no timeout. */
  readonly timeoutMs?: number;
  /** The unique-value property (hasUniqueValue) the account defines for the key on tickets and upserts. Default `retrysafe_operation_id`. */
  readonly idProperty?: string;
  /** How long after a write CRM search shows it (lookup.consistencyDelay); a miss counts as absent only after this plus `lateApplyMs` from the last dispatch. Default null: HubSpot gives no bound, so a miss stays "cannot tell". */
  readonly searchSettleMs?: number | null;
  /** How long after the client gave up HubSpot may still apply a request (lookup.lateApplyBound). Default null: undocumented. */
  readonly lateApplyMs?: number | null;
}

export type HubSpotAdapter = TypedAdapter<HubSpotOperationTypes> & {
  readonly provider: 'hubspot';
  readonly operations: Readonly<Record<HubSpotOperationName, OperationSpec>>;
};

const PROVIDER = 'hubspot';
const MAX_TIMEOUT_MS = 600_000;
const PROPERTY_NAME = /^[a-z][a-z0-9_]*$/;

function configError(message: string): never {
  throw new AdapterConfigurationError(PROVIDER, message);
}

/** A duration option that may be left unset (null: the adapter claims nothing). */
function optionalMs(name: string, value: number | null | undefined): number | null {
  if (value !== undefined && value !== null && (!Number.isFinite(value) || value < 0))
    configError(`${name} must be null or a non-negative number, got ${value}`);
  return value ?? null;
}

function checkOptions(options: HubSpotAdapterOptions) {
  if (typeof options !== 'object' || options === null) configError('options must be an object');
  checkToken(PROVIDER, 'accessToken', options.accessToken);
  const baseUrl = (options.baseUrl ?? 'https://api.hubapi.com').replace(/\/+$/, '');
  checkBaseUrl(PROVIDER, baseUrl);
  const timeoutMs = positiveInteger(PROVIDER, 'timeoutMs', options.timeoutMs, 30_000);
  if (timeoutMs > MAX_TIMEOUT_MS) configError(`timeoutMs must be at most ${MAX_TIMEOUT_MS}, got ${timeoutMs}`);
  const idProperty = options.idProperty ?? 'retrysafe_operation_id';
  if (typeof idProperty !== 'string' || !PROPERTY_NAME.test(idProperty))
    configError(
      `idProperty must be a HubSpot internal property name (lower-case letters, digits, underscores), got ${JSON.stringify(idProperty)}`,
    );
  const searchSettleMs = optionalMs('searchSettleMs', options.searchSettleMs);
  const lateApplyMs = optionalMs('lateApplyMs', options.lateApplyMs);
  return { accessToken: options.accessToken, baseUrl, timeoutMs, idProperty, searchSettleMs, lateApplyMs };
}

/** A record id HubSpot does not write (`0101`, ` 101`) may still name contact 101, under an id of its own; a PATCH that
 * changes the unique value it is addressed by moves the contact away from its address: a repeat, a re-send or the
 * lookup by it would find no contact, and its id (read from that address) could not be told again. */
function contactProblems(params: unknown) {
  const { contactId, idProperty, properties } = params as ContactsUpdateParams;
  if ((idProperty === undefined || idProperty === 'hs_object_id') && !/^[1-9]\d*$/.test(contactId))
    return [{ path: 'contactId', message: 'a record id is digits without a leading zero (or name idProperty)' }];
  const value = idProperty === undefined ? undefined : properties[idProperty];
  if (value === undefined || value === contactId) return [];
  // Whether HubSpot finds a unique value regardless of letter case is not documented: a case-only change is refused too.
  const why =
    typeof value === 'string' && value.toLowerCase() === contactId.toLowerCase()
      ? `it changes only its letter case, and whether HubSpot finds a contact by ${idProperty} regardless of case is not documented`
      : 'a repeat could not find the contact';
  const message = `changes the ${idProperty} this update addresses the contact by (${why}): address the contact by its record id (leave idProperty out), or by a unique property it leaves unchanged`;
  return [{ path: `properties.${idProperty}`, message }];
}

/** The HubSpot adapter on the SDK's generated API classes, without its retrying Client (see hubspot-http.ts). */
export function createHubSpotAdapter(options: HubSpotAdapterOptions): HubSpotAdapter {
  const o = checkOptions(options);
  const cards = hubSpotCardsFor(o);
  const reserved = `property ${o.idProperty} is the adapter's id property: the adapter sets it`;
  type Operation = (typeof OPERATIONS)[HubSpotOperationName];
  const operations = {} as Record<HubSpotOperationName, FrameOperation & Operation>;
  for (const [name, op] of Object.entries(OPERATIONS) as [HubSpotOperationName, Operation][]) {
    const keyed = name !== 'contacts.update';
    operations[name] = {
      ...op,
      name,
      card: cards[name],
      paramsSchema: PARAMS_SCHEMAS[name],
      // The upsert's id property names the record (objectType and ref), not the operation: no key travels.
      keyRule: name === 'tickets.create' ? KEY_RULE : null,
      // The id property is an option, so the schema cannot reserve it; runs after the schema (properties is an object).
      checkParams: keyed
        ? (params: unknown) =>
            Object.hasOwn((params as { properties: object }).properties, o.idProperty)
              ? [{ path: `properties.${o.idProperty}`, message: reserved }]
              : []
        : contactProblems,
    };
  }
  return defineAdapter({
    provider: PROVIDER,
    account: options.account,
    operations,
    resolveIntent: (_op, intent, signal) => contactTarget(o, intent, signal),
    execute: (op, params, ctx) => op.execute(o, params as never, ctx),
    async lookup(op, ctx) {
      const problems = operationParamsErrors(op, ctx.params);
      if (problems.length > 0)
        return {
          kind: 'cannot-tell',
          reason: `${op.name}: the recorded params are not valid (${problems.map((f) => `${f.path} ${f.message}`).join('; ')}), so there is nothing to look up by`,
        };
      return op.lookup(o, ctx.params as never, ctx, op.card);
    },
  });
}
