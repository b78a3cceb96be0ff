import {
  AdapterConfigurationError,
  defineAdapter,
  type FrameOperation,
  type OperationSpec,
  type TypedAdapter,
} from '@retrysafe/contract';
import { checkBaseUrl, operationParamsErrors, positiveInteger } from '@retrysafe/contract/provider';
import { type HubSpotOperationName, hubSpotCardsFor } from './hubspot-cards.js';
import {
  type ContactsUpdateParams,
  executeContactsUpdate,
  executeObjectsUpsert,
  executeTicketsCreate,
  type HubSpotOperationTypes,
  KEY_RULE,
  lookupBySearch,
  lookupContactsUpdate,
  PARAMS_SCHEMAS,
} from './hubspot-operations.js';

export interface HubSpotAdapterOptions {
  /** Private-app or OAuth access token, sent as `Authorization: Bearer …`. */
  readonly accessToken: string;
  /** Default `https://api.hubapi.com`; a loopback sandbox in tests (`http://127.0.0.1:PORT`). */
  readonly baseUrl?: string;
  /** Per request, headers and body included (default 30 000 ms). The SDK itself has no timeout. */
  readonly timeoutMs?: number;
  /**
   * The unique-value property (hasUniqueValue: true) that carries the provider key on tickets and on
   * the upserted object type. Default `retrysafe_operation_id`. The account must define it.
   */
  readonly idProperty?: string;
  /**
   * After how long (ms after the first dispatch) a CRM search miss counts as "absent". Default null:
   * HubSpot gives no bound on its indexing delay, so a miss stays "cannot tell" and an unsettled
   * operation is handed off rather than re-created. Setting it is a claim you make about your account.
   */
  readonly searchSettleMs?: number | null;
  /**
   * How long after the client gave up HubSpot may still apply a request (the card's lookup.lateApplyBound).
   * Default null: HubSpot documents no bound, so a search miss never proves absence. Setting it is a claim
   * you make about your account and network (e.g. no proxy that holds requests).
   */
  readonly lateApplyMs?: number | null;
}

export type HubSpotAdapter = TypedAdapter<HubSpotOperationTypes> & {
  readonly provider: 'hubspot';
  readonly operations: Readonly<Record<HubSpotOperationName, OperationSpec>>;
};

const PROVIDER = 'hubspot';
const DEFAULT_BASE_URL = 'https://api.hubapi.com';
const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_TIMEOUT_MS = 600_000;
const PROPERTY_NAME = /^[a-z][a-z0-9_]*$/;

/** What each operation adds to its card: its description, its sensitive params and how one attempt is made. */
const OPERATIONS = {
  'contacts.update': {
    description: 'Set property values on a HubSpot contact (PATCH; sending it twice sets the same values).',
    sensitiveFields: ['properties'],
    execute: executeContactsUpdate,
  },
  'objects.upsert': {
    description:
      'Create or update one CRM record, keyed by a unique property that holds the business-operation id (batch upsert).',
    sensitiveFields: [],
    execute: executeObjectsUpsert,
  },
  'tickets.create': {
    description:
      'Create a HubSpot ticket once: the business-operation id goes into a unique-value property, so a re-send is refused and the existing ticket adopted.',
    sensitiveFields: ['properties.content'],
    execute: executeTicketsCreate,
  },
} as const;

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
  if (typeof options.accessToken !== 'string' || options.accessToken.trim() === '')
    configError('accessToken must be a non-empty string');
  const baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  // https, or plain http only to a loopback sandbox: the token never travels in clear (the contract's one rule).
  checkBaseUrl(PROVIDER, baseUrl);
  const timeoutMs = positiveInteger(PROVIDER, 'timeoutMs', options.timeoutMs, DEFAULT_TIMEOUT_MS);
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

/**
 * The HubSpot adapter: contacts.update, objects.upsert, tickets.create.
 * Uses @hubspot/api-client's generated API classes with its own transport and no SDK retries
 * (see hubspot-http.ts for why `new Client()` is not used).
 */
export function createHubSpotAdapter(options: HubSpotAdapterOptions): HubSpotAdapter {
  const o = checkOptions(options);
  const cards = hubSpotCardsFor(o);

  type Operation = (typeof OPERATIONS)[HubSpotOperationName];
  const operations = {} as Record<HubSpotOperationName, FrameOperation & Operation>;
  for (const [name, op] of Object.entries(OPERATIONS) as [HubSpotOperationName, Operation][]) {
    const reserved = `property ${o.idProperty} is the adapter's id property: the adapter sets it from the business-operation id`;
    operations[name] = {
      ...op,
      name,
      card: cards[name],
      intentFields: cards[name].businessOperationId.intentFields,
      paramsSchema: PARAMS_SCHEMAS[name],
      keyRule: name === 'contacts.update' ? null : KEY_RULE,
      // The id property is an option, so the schema cannot reserve it: setting it would take over the key the
      // adapter writes. Runs after the schema, so `properties` is an object.
      checkParams: (params: unknown) =>
        name !== 'contacts.update' && Object.hasOwn((params as { properties: object }).properties, o.idProperty)
          ? [{ path: `properties.${o.idProperty}`, message: reserved }]
          : [],
    };
  }

  return defineAdapter({
    provider: PROVIDER,
    operations,

    execute: (op, params, ctx) => op.execute(o, params as never, ctx),

    async lookup(op, ctx) {
      const name = op.name as HubSpotOperationName;
      const problems = operationParamsErrors(op, ctx.params);
      if (problems.length > 0)
        return {
          kind: 'cannot-tell',
          reason: `${name}: the recorded params are not valid (${problems.map((f) => `${f.path} ${f.message}`).join('; ')}), so there is nothing to look up by`,
        };
      if (name === 'contacts.update') return lookupContactsUpdate(o, ctx.params as ContactsUpdateParams, ctx);
      return lookupBySearch(o, name, ctx.params, ctx);
    },
  });
}
