import {
  AdapterConfigurationError,
  type BusinessOperationId,
  CardValidationError,
  type FieldError,
  InvalidIntentError,
  type JsonSchema,
  type OperationSpec,
  type ProviderKey,
  type ProviderKeyRule,
  type RejectReason,
  type RetrySafetyCard,
  type UnknownCause,
  validateCard,
} from '@retrysafe/contract';
import { durationMs } from '@retrysafe/contract/rules';

/** HTTP methods a state-changing operation may use. */
export type HttpMethod = 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * How the provider key travels. `rule` is the derivation rule handed to the contract's
 * `deriveProviderKey`; `maxLength`/`charset` default to the card's facts and must fit inside them.
 */
export type HttpKeySpec =
  | {
      readonly travels: 'header';
      /** Header name, e.g. `Idempotency-Key`. */
      readonly name: string;
      /** `sf-string` sends an RFC 8941 Structured Field string (quoted), as the IETF draft defines. Default `raw`. */
      readonly encoding?: 'raw' | 'sf-string';
      readonly rule?: Partial<ProviderKeyRule>;
    }
  | {
      readonly travels: 'body' /** Top-level JSON body field, e.g. `ClientToken`. */;
      readonly name: string;
      readonly rule?: Partial<ProviderKeyRule>;
    }
  | { readonly travels: 'query'; readonly name: string; readonly rule?: Partial<ProviderKeyRule> }
  | { readonly travels: 'none' };

/** Matches a response status: one code, a list, or a class (`4xx`, `5xx`). */
export type StatusMatcher = number | readonly number[] | '4xx' | '5xx';

/** One row of an operation's error mapping; the first matching row wins. */
export type HttpErrorRule = {
  readonly status: StatusMatcher;
  /** When set, the error code read from the body (see `errors.codePath`) must equal one of these. */
  readonly code?: string | readonly string[];
} & (
  | { readonly outcome: 'rejected'; readonly reason: RejectReason }
  | { readonly outcome: 'not-applied' }
  | { readonly outcome: 'in-progress' }
  | { readonly outcome: 'unknown'; readonly cause?: UnknownCause }
);

export interface HttpErrorSpec {
  /** Dot path of the error code in a JSON error body, e.g. `error.code`, `__type`, `type` (problem+json). */
  readonly codePath?: string;
  /** Rows tried in order. A non-2xx response no row matches is `unknown` (never a licence to resend). */
  readonly rules: readonly HttpErrorRule[];
  /**
   * Dot path, in a rejection's JSON body, of the id of an object the rejected request still created
   * (an order kept though its payment was declined). The card must then say sideEffect.rejectionMayCreate.
   */
  readonly createdPath?: string;
}

/** Reads a status resource (async request-reply). */
export interface StatusReading {
  /** Dot path of a status field in a 200 body, e.g. `status`. */
  readonly field: string;
  /** Values meaning "still working" (200 + one of these ⇒ in-progress). */
  readonly pending: readonly string[];
  /** Values meaning "done" (200 + one of these ⇒ succeeded with the body as result). A 303 See Other is always "done". */
  readonly done: readonly string[];
  /** Values meaning "failed" (200 + one of these ⇒ rejected, reason `other`). Persisted 4xx at the status URL are rejected too. */
  readonly failed?: readonly string[];
}

export interface LookupReadContext {
  readonly businessOperationId: BusinessOperationId;
  readonly providerKey: ProviderKey | null;
  readonly params: Record<string, unknown>;
}

/**
 * How `doLookup` finds a prior result; the card's `lookup.method` must name the same method. `M` picks an item
 * from a list body, `A` tells whether a resource shows this operation (code here, data in a declaration).
 */
export type LookupShape<M, A> =
  /** GET a resource named by the key or by params, e.g. `/documents/{id}`: 200 ⇒ found, 404 ⇒ absent. */
  | { readonly method: 'get-by-key'; readonly path: string; readonly applied?: A }
  | {
      /** GET the status URL of an earlier 202: pending ⇒ in-progress, 303 ⇒ succeeded, persisted 4xx ⇒ rejected. */
      readonly method: 'status-url';
      readonly status: StatusReading;
      /**
       * Without a status URL (the 202 was lost): a search listing work items by something the request carried,
       * `resend-same-key` (only inside the card's retention), or `cannot-tell` (default).
       */
      readonly withoutStatusRef?:
        | 'resend-same-key'
        | 'cannot-tell'
        | { readonly path: string; readonly match: M; readonly statusUrlPath: string };
    }
  /** GET a list endpoint and pick the match; `refPath` defaults to the operation's. */
  | { readonly method: 'search'; readonly path: string; readonly match: M; readonly refPath?: string }
  /** Re-send the same request with the same key; the provider returns its stored result. */
  | { readonly method: 'resend-same-key' }
  | { readonly method: 'none' };

export type HttpLookupSpec = LookupShape<
  (body: unknown, ctx: LookupReadContext) => unknown,
  (resource: unknown, ctx: LookupReadContext) => boolean
>;

/**
 * A precondition (conditional idempotency): the value comes from a param that is also an intent
 * field, so every re-send of one business operation carries the same precondition.
 */
export type HttpPreconditionSpec = {
  /** Param holding the expected validator (ETag, generation…). Must be one of the card's intent fields. */
  readonly param: string;
  /** Status the provider answers when the precondition fails. Default 412. */
  readonly failedStatus?: number;
  /** Response header carrying the resource's current validator (for lookups), e.g. `ETag`. */
  readonly validatorHeader?: string;
  /** Dot path of the validator in the resource body (e.g. `generation`), when not in a header. */
  readonly validatorField?: string;
} & ({ readonly header: string } | { readonly query: string });

/** Everything the adapter must be told about one operation. Nothing is assumed. */
export interface HttpOperationSpec {
  readonly description: string;
  readonly method: HttpMethod;
  /** Path template; `{name}` is filled from params (URL-encoded), `{key}` from the provider key, `{businessOperationId}` from the id. */
  readonly path: string;
  readonly key: HttpKeySpec;
  /** The full card the user writes (validated with validateCard; `'unknown'` values are accepted). */
  readonly card: RetrySafetyCard;
  readonly lookup: HttpLookupSpec;
  readonly precondition?: HttpPreconditionSpec;
  readonly errors: HttpErrorSpec;
  /** A 202 with a `Location` header is in-progress with that status URL (async request-reply). Default false: a 202 is success. */
  readonly asyncReply?: boolean;
  /** Builds the JSON body. Default: the params minus path placeholders and the precondition param. DELETE sends no body. */
  readonly body?: (
    params: Record<string, unknown>,
    ctx: { businessOperationId: BusinessOperationId; providerKey: ProviderKey | null },
  ) => unknown;
  /** Dot path of the provider's object id in a success body (kept as providerRef), e.g. `id`. */
  readonly refPath?: string;
  /** Response header with the provider's request id, e.g. `x-request-id`. */
  readonly requestIdHeader?: string;
  readonly paramsSchema?: JsonSchema;
  readonly sensitiveFields?: readonly string[];
}

/** An operation as the adapter exposes it: the contract's OperationSpec plus the HTTP declaration. */
export interface HttpOperation extends OperationSpec {
  readonly http: HttpOperationSpec;
  readonly keyRule: ProviderKeyRule | null;
}

const PLACEHOLDER = /\{([A-Za-z0-9_.]+)\}/g;
const RESERVED_PLACEHOLDERS = new Set(['key', 'businessOperationId']);

/** Placeholder names used in a path template. */
export function placeholders(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!);
}

/** Reads a dot path out of a JSON value. */
export function readPath(value: unknown, path: string): unknown {
  let cur = value;
  for (const part of path.split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

/** Fills a path template. A placeholder whose value is missing is an InvalidIntentError (never a request to a half-built URL). */
export function fillPath(
  template: string,
  params: Record<string, unknown>,
  ids: { businessOperationId: BusinessOperationId; providerKey: ProviderKey | null },
): string {
  return template.replace(PLACEHOLDER, (_m, name: string) => {
    let v: unknown;
    if (name === 'key') v = ids.providerKey;
    else if (name === 'businessOperationId') v = ids.businessOperationId;
    else v = readPath(params, name);
    if (v === undefined || v === null || (typeof v !== 'string' && typeof v !== 'number')) {
      throw new InvalidIntentError(name, `path ${template} needs {${name}} as a string or number`);
    }
    return encodeURIComponent(String(v));
  });
}

/** Structured Field string (RFC 8941 §3.3.3): quoted, with `\` and `"` escaped; printable ASCII only. */
export function sfString(value: string): string {
  if (!/^[\x20-\x7e]*$/.test(value))
    throw new InvalidIntentError('providerKey', 'a Structured Field string carries printable ASCII only');
  return `"${value.replace(/[\\"]/g, (c) => '\\' + c)}"`;
}

/**
 * Validates one operation declaration against its card and returns the exposed operation.
 * Every inconsistency is an AdapterConfigurationError naming the field: a card that says one thing
 * while the request does another is the failure this package exists to prevent.
 */
export function buildOperation(provider: string, name: string, spec: HttpOperationSpec): HttpOperation {
  const fail = (msg: string): never => {
    throw new AdapterConfigurationError(provider, `operation ${name}: ${msg}`);
  };
  const card = spec.card;
  const validation = validateCard(card);
  if (!validation.ok)
    throw new CardValidationError(String((card as { operation?: unknown })?.operation ?? name), validation.problems);
  if (card.provider !== provider)
    fail(`card.provider is ${JSON.stringify(card.provider)}, adapter provider is ${JSON.stringify(provider)}`);
  if (card.operation !== `${provider}.${name}`)
    fail(`card.operation must be ${provider}.${name}, got ${card.operation}`);
  if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(spec.method))
    fail(`method ${String(spec.method)} is not a state-changing method`);
  if (typeof spec.path !== 'string' || !spec.path.startsWith('/')) fail('path must be a template starting with /');

  // The key declaration and the card must say the same thing.
  const k = spec.key;
  const travels = card.providerKey.travels.value;
  if (travels !== 'unknown' && travels !== k.travels)
    fail(`key travels in ${k.travels} but card.providerKey.travels says ${travels}`);
  if (travels === 'unknown' && k.travels !== 'none')
    fail(
      'card.providerKey.travels is unknown: a key cannot be sent where the card does not know it travels; declare key { travels: "none" }',
    );
  let keyRule: ProviderKeyRule | null = null;
  if (k.travels !== 'none') {
    const cardName = card.providerKey.name.value;
    if (cardName !== 'unknown' && (cardName ?? '').toLowerCase() !== k.name.toLowerCase())
      fail(`key name ${k.name} but card.providerKey.name says ${String(cardName)}`);
    const cardMax = card.providerKey.maxLength.value;
    const cardCharset = card.providerKey.charset.value;
    const maxLength = k.rule?.maxLength ?? (typeof cardMax === 'number' ? cardMax : undefined);
    const charset =
      k.rule?.charset ?? (typeof cardCharset === 'string' && cardCharset !== 'unknown' ? cardCharset : undefined);
    if (maxLength === undefined)
      fail(
        'card.providerKey.maxLength is unknown: declare key.rule.maxLength (a conservative length the provider surely accepts)',
      );
    if (charset === undefined)
      fail('card.providerKey.charset is unknown: declare key.rule.charset (a conservative character set)');
    if (typeof cardMax === 'number' && maxLength! > cardMax)
      fail(`key.rule.maxLength ${maxLength} exceeds card.providerKey.maxLength ${cardMax}`);
    if (typeof cardCharset === 'string' && cardCharset !== 'unknown' && charset !== cardCharset)
      fail(`key.rule.charset [${charset}] differs from card.providerKey.charset [${cardCharset}]`);
    keyRule = {
      maxLength: maxLength!,
      charset: charset!,
      ...(k.rule?.prefix !== undefined ? { prefix: k.rule.prefix } : {}),
    };
  }

  // Lookup declaration and card.
  const cardLookup = card.lookup.method.value;
  if (cardLookup !== 'unknown' && cardLookup !== spec.lookup.method)
    fail(`lookup.method ${spec.lookup.method} but card.lookup.method says ${cardLookup}`);
  if (cardLookup === 'unknown' && spec.lookup.method !== 'none')
    fail('card.lookup.method is unknown: declare lookup { method: "none" }');
  if (
    (spec.lookup.method === 'resend-same-key' ||
      (spec.lookup.method === 'status-url' && spec.lookup.withoutStatusRef === 'resend-same-key')) &&
    k.travels === 'none'
  ) {
    fail('a lookup that re-sends with the same key needs a key that travels');
  }
  if (spec.lookup.method === 'status-url' && !spec.asyncReply)
    fail('lookup.method status-url needs asyncReply: true (the status URL comes from the 202 Location)');

  // Path placeholders must come from intent fields: a placeholder outside the intent would let two
  // different targets share one business-operation id.
  const intentFields = card.businessOperationId.intentFields;
  for (const p of placeholders(spec.path)) {
    if (!RESERVED_PLACEHOLDERS.has(p) && !intentFields.includes(p))
      fail(`path placeholder {${p}} must be one of the card's intent fields (${intentFields.join(', ')})`);
    if (p === 'key' && k.travels === 'none') fail('path uses {key} but no key travels');
  }
  if (spec.precondition) {
    const pc = spec.precondition;
    if (!intentFields.includes(pc.param))
      fail(
        `precondition.param ${pc.param} must be one of the card's intent fields, so every re-send carries the same precondition`,
      );
    if (!('header' in pc) && !('query' in pc))
      fail('precondition needs a header (e.g. If-Match) or a query parameter (e.g. ifGenerationMatch)');
  }
  if (spec.errors.createdPath !== undefined && card.sideEffect.rejectionMayCreate?.value !== true)
    fail(
      'errors.createdPath names what a rejection created: the card must say so (sideEffect.rejectionMayCreate true), so the drill checks it',
    );
  for (const [i, rule] of spec.errors.rules.entries()) {
    if (rule.code !== undefined && !spec.errors.codePath)
      fail(`errors.rules[${i}] matches a code but errors.codePath is not declared`);
  }
  const retention = card.retention.minimum.value;
  if (retention !== null && retention !== 'unknown') durationMs(retention); // validated by the card already; parse to be sure

  return {
    name,
    description: spec.description,
    card,
    intentFields,
    ...(spec.sensitiveFields ? { sensitiveFields: spec.sensitiveFields } : {}),
    paramsSchema: spec.paramsSchema ?? { type: 'object' },
    checkParams: (params: unknown) => requestProblems(spec, params),
    http: spec,
    keyRule,
  };
}

/**
 * What the request needs from params beyond the schema: an object, every path placeholder and the
 * precondition value as a string or number (an operation declared with a precondition is never sent
 * without it). Run by the runner before the claim and by the frame on every attempt.
 */
function requestProblems(spec: HttpOperationSpec, params: unknown): FieldError[] {
  if (typeof params !== 'object' || params === null || Array.isArray(params))
    return [{ path: '(root)', message: 'must be an object' }];
  const scalar = (v: unknown) => typeof v === 'string' || typeof v === 'number';
  const out: FieldError[] = [];
  for (const p of placeholders(spec.path)) {
    if (!RESERVED_PLACEHOLDERS.has(p) && !scalar(readPath(params, p)))
      out.push({ path: p, message: `is needed by the path ${spec.path} as a string or number` });
  }
  const pc = spec.precondition;
  if (pc && !scalar((params as Record<string, unknown>)[pc.param]))
    out.push({ path: pc.param, message: 'is the precondition value and must be a string or number' });
  return out;
}

/** Default body: params minus path placeholders and the precondition param. */
export function defaultBody(spec: HttpOperationSpec, params: Record<string, unknown>): Record<string, unknown> {
  const drop = new Set(placeholders(spec.path).filter((p) => !RESERVED_PLACEHOLDERS.has(p)));
  if (spec.precondition) drop.add(spec.precondition.param);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) if (!drop.has(k)) out[k] = v;
  return out;
}
