import { validateHeaderName, validateHeaderValue } from 'node:http';
import {
  AdapterConfigurationError,
  type BusinessOperationId,
  CardValidationError,
  type FieldError,
  InvalidIntentError,
  type JsonSchema,
  type ProviderKey,
  type ProviderKeyRule,
  type RejectReason,
  type RetrySafetyCard,
  type UnknownCause,
  validateCard,
} from '@retrysafe/contract';
import { withinIntent } from '@retrysafe/contract/rules';

type NamedKey = { readonly name: string; readonly rule?: Partial<ProviderKeyRule> };

/** One row of an operation's error mapping; the first matching row wins. */
export type HttpErrorRule = {
  readonly status: number | readonly number[] | '4xx' | '5xx';
  /** When set, the error code read from the body (see `errors.codePath`) must equal one of these. */
  readonly code?: string | readonly string[];
} & (
  | { readonly outcome: 'rejected'; readonly reason: RejectReason }
  | { readonly outcome: 'not-applied' | 'in-progress' }
  | { readonly outcome: 'unknown'; readonly cause?: UnknownCause }
);

/** A status resource's 200 body: the value at dot path `field` is pending (in-progress), done (or a 303: succeeded) or failed (rejected). */
export interface StatusReading {
  readonly field: string;
  readonly pending: readonly string[];
  readonly done: readonly string[];
  readonly failed?: readonly string[];
}

export type Ids = { readonly businessOperationId: BusinessOperationId; readonly providerKey: ProviderKey | null };

export type LookupReadContext = Ids & { readonly params: Record<string, unknown> };

/** How `doLookup` finds a prior result (the card's `lookup.method` names the same): `M` picks this operation's items from a list (one is adopted, two cannot tell), `A` tells whether a resource shows this operation. */
export type LookupShape<M, A> =
  /** GET a resource named by the key or by params, e.g. `/documents/{id}`: 200 ⇒ found, 404 ⇒ absent. */
  | { readonly method: 'get-by-key'; readonly path: string; readonly applied?: A }
  | {
      /** GET the status URL of an earlier 202: pending ⇒ in-progress, 303 ⇒ succeeded, persisted 4xx ⇒ rejected. */
      readonly method: 'status-url';
      readonly status: StatusReading;
      /** Without a status URL (the 202 was lost): a search for the work item, a re-send inside retention, or `cannot-tell` (default). */
      readonly withoutStatusRef?:
        | 'resend-same-key'
        | 'cannot-tell'
        | { readonly path: string; readonly match: M; readonly statusUrlPath: string; readonly more?: string };
    }
  /**
   * GET a list endpoint and pick the match; `refPath` defaults to the operation's. `more`: dot path of the body's
   * marker that more items follow (`has_more`, `next_cursor`); a miss or one match while it is set, or with
   * `Link: rel="next"`, cannot tell.
   */
  | {
      readonly method: 'search';
      readonly path: string;
      readonly match: M;
      readonly refPath?: string;
      readonly more?: string;
    }
  | { readonly method: 'resend-same-key' | 'none' };

export type HttpLookupSpec = LookupShape<
  (body: unknown, ctx: LookupReadContext) => readonly unknown[],
  (resource: unknown, ctx: LookupReadContext) => boolean
>;

/** Everything the adapter must be told about one operation; nothing is assumed. */
export interface HttpOperationSpec {
  readonly description: string;
  readonly method: 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path template; `{name}` is filled from params (URL-encoded), `{key}` from the provider key, `{businessOperationId}` from the id. */
  readonly path: string;
  /** Where the provider key travels; `rule.maxLength`/`charset` default to the card's facts and must fit inside them. */
  readonly key: /** `sf-string` sends an RFC 8941 Structured Field string (quoted), as the IETF draft defines. Default `raw`. */
    | ({ readonly travels: 'header'; readonly encoding?: 'raw' | 'sf-string' } & NamedKey)
    | ({ readonly travels: 'body' | 'query' } & NamedKey)
    | { readonly travels: 'none' };
  /** The full card the user writes (validated with validateCard; `'unknown'` values are accepted). */
  readonly card: RetrySafetyCard;
  readonly lookup: HttpLookupSpec;
  /** Conditional idempotency: the validator comes from `param`, an intent field, so every re-send carries the same precondition. */
  readonly precondition?: {
    readonly param: string;
    /** Status the provider answers when the precondition fails. Default 412. */
    readonly failedStatus?: number;
    /** Where a lookup reads the resource's current validator: a response header (`ETag`) or a body path (`generation`). */
    readonly validatorHeader?: string;
    readonly validatorField?: string;
  } & ({ readonly header: string } | { readonly query: string });
  readonly errors: {
    /** Dot path of the error code in a JSON error body, e.g. `error.code`, `__type`, `type` (problem+json). */
    readonly codePath?: string;
    /** Rows tried in order. A non-2xx response no row matches is `unknown` (never a licence to resend). */
    readonly rules: readonly HttpErrorRule[];
    /** Dot path of the id of what a rejected request still created; the card must then say sideEffect.rejectionMayCreate. */
    readonly createdPath?: string;
  };
  /** A 202 with a `Location` header is in-progress with that status URL (async request-reply). Default false: a 202 is success. */
  readonly asyncReply?: boolean;
  /** Default: the params minus path placeholders and the precondition param. DELETE sends no body. */
  readonly body?: (params: Record<string, unknown>, ctx: Ids) => unknown;
  /** Params `body` places inside longer text (`"Order {n}"`): checked as text like path placeholders (a declaration fills it). */
  readonly bodyTextParams?: readonly string[];
  /**
   * Params a lookup match compares with the provider's item (a declaration's `where` fills it): `inText` placed inside
   * longer text, checked like `bodyTextParams`; `whole` compared as the whole value, which a number still compares
   * as text (5 matches "5"), so a number there needs paramsSchema to pin it.
   */
  readonly lookupTextParams?: { readonly inText: readonly string[]; readonly whole: readonly string[] };
  /** Dot path of the provider's object id in a success body (kept as providerRef), e.g. `id`. */
  readonly refPath?: string;
  /** Response header with the provider's request id, e.g. `x-request-id`. */
  readonly requestIdHeader?: string;
  readonly paramsSchema?: JsonSchema;
  readonly sensitiveFields?: readonly string[];
}

export type HttpOperation = ReturnType<typeof buildOperation>;

export const PLACEHOLDER = /\{([A-Za-z0-9_.]+)\}/g;
const RESERVED_PLACEHOLDERS = new Set(['key', 'businessOperationId']);

export const placeholders = (template: string) => [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!);

/** The params a template names: its placeholders but `{key}` and `{businessOperationId}`. */
export const paramPlaceholders = (template: string) =>
  placeholders(template).filter((p) => !RESERVED_PLACEHOLDERS.has(p));

export const scalarText = (v: unknown): string | undefined =>
  typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;

export function readPath(value: unknown, path: string): unknown {
  let cur = value;
  for (const part of path.split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

/** The value a template name stands for: `{key}`, `{businessOperationId}`, or a dot path into params. */
export function templateValue(name: string, params: Record<string, unknown>, ids: Ids): unknown {
  if (name === 'key') return ids.providerKey;
  if (name === 'businessOperationId') return ids.businessOperationId;
  return readPath(params, name);
}

/** A placeholder without a value is an InvalidIntentError, never a request to a half-built URL. */
export function fillPath(template: string, params: Record<string, unknown>, ids: Ids): string {
  return template.replace(PLACEHOLDER, (_m, name: string) => {
    const v = scalarText(templateValue(name, params, ids));
    if (v === undefined) throw new InvalidIntentError(name, `path ${template} needs {${name}} as a string or number`);
    return encodeURIComponent(v);
  });
}

/**
 * Node's refusal of a header, or undefined if Node can send it. Node would refuse it only when the request
 * is built, after the claim, so every check before the claim asks Node's own validators here.
 */
export function headerRefusal(name: string, value?: string): string | undefined {
  try {
    validateHeaderName(name);
    if (value !== undefined) validateHeaderValue(name, value);
  } catch (err) {
    return (err as Error).message;
  }
}

/** RFC 8941 §3.3.3 Structured Field string. */
export function sfString(value: string): string {
  if (!/^[\x20-\x7e]*$/.test(value))
    throw new InvalidIntentError('providerKey', 'a Structured Field string carries printable ASCII only');
  return `"${value.replace(/[\\"]/g, (c) => '\\' + c)}"`;
}

/** The status (one code, a list, or a class such as `4xx`) and, when the rule names codes, the body's code. */
export function ruleMatches(
  { status: m, code: codes }: HttpErrorRule,
  status: number,
  code: string | undefined,
): boolean {
  const statusMatches = typeof m === 'string' ? `${Math.floor(status / 100)}xx` === m : [m].flat().includes(status);
  return statusMatches && (codes === undefined || (code !== undefined && [codes].flat().includes(code)));
}

/** Whether some answer reaches a `conflict` rule: a status (and code) it names that no earlier rule catches. */
function conflictReachable(rules: readonly HttpErrorRule[]): boolean {
  return rules.some((rule, i) => {
    if (rule.outcome !== 'rejected' || rule.reason !== 'conflict') return false;
    const { status: m } = rule;
    const statuses = typeof m === 'string' ? Array.from({ length: 100 }, (_, n) => Number(m[0]) * 100 + n) : [m].flat();
    const codes = rule.code === undefined ? [undefined] : [rule.code].flat();
    return statuses.some((s) => codes.some((c) => !rules.slice(0, i).some((earlier) => ruleMatches(earlier, s, c))));
  });
}

/** Checks a declaration against its card: a card saying one thing while the request does another is what this package prevents. */
export function buildOperation(provider: string, name: string, spec: HttpOperationSpec) {
  const fail = (msg: string): never => {
    throw new AdapterConfigurationError(provider, `operation ${name}: ${msg}`);
  };
  const { card, key: k, lookup } = spec;
  const validation = validateCard(card);
  if (!validation.ok) throw new CardValidationError(String(card?.operation ?? name), validation.problems);
  const intentFields = card.businessOperationId.intentFields;
  const ofOperation = (p: string) => RESERVED_PLACEHOLDERS.has(p) || withinIntent(p, intentFields);
  if (card.provider !== provider)
    fail(`card.provider is ${JSON.stringify(card.provider)}, adapter provider is ${JSON.stringify(provider)}`);
  if (!spec.path.startsWith('/')) fail('path must be a template starting with /');
  const keyRule = keyRuleOf(card, k, fail);

  const cardLookup = card.lookup.method.value;
  if (cardLookup !== 'unknown' && cardLookup !== lookup.method)
    fail(`lookup.method ${lookup.method} but card.lookup.method says ${cardLookup}`);
  if (cardLookup === 'unknown' && lookup.method !== 'none')
    fail('card.lookup.method is unknown: declare lookup { method: "none" }');
  const resends =
    lookup.method === 'resend-same-key' ||
    (lookup.method === 'status-url' && lookup.withoutStatusRef === 'resend-same-key');
  if (resends && k.travels === 'none') fail('a lookup that re-sends with the same key needs a key that travels');
  if (lookup.method === 'status-url' && !spec.asyncReply)
    fail('lookup.method status-url needs asyncReply: true (the status URL comes from the 202 Location)');
  // A list read that is not filtered to this operation answers with other operations' items: a miss there proves nothing.
  const list = listPath(lookup);
  if (list !== undefined && !placeholders(list).some(ofOperation))
    fail(
      `lookup path ${list} names nothing of this operation ({businessOperationId}, {key} or an intent field): a miss in a list not filtered to it is no proof of absence`,
    );

  // A path placeholder outside the intent would let two different targets share one business-operation id.
  for (const p of placeholders(spec.path)) {
    if (!ofOperation(p))
      fail(
        `path placeholder {${p}} must be one of the card's intent fields (${intentFields.join(', ')}) or beneath one`,
      );
    if (p === 'key' && k.travels === 'none') fail('path uses {key} but no key travels');
    const rule = unprovenNormalization(card, p);
    if (rule) fail(`path placeholder {${p}} ${NORMALISED_TARGET(rule)}`);
  }
  const pc = spec.precondition;
  for (const header of [k.travels === 'header' ? k.name : '', pc && 'header' in pc ? pc.header : ''])
    if (header !== '' && headerRefusal(header))
      fail(`${JSON.stringify(header)} is not a header name (letters, digits and !#$%&'*+-.^_\`|~ only)`);
  if (pc && !withinIntent(pc.param, intentFields))
    fail(
      `precondition.param ${pc.param} must be one of the card's intent fields, so every re-send carries the same precondition`,
    );
  // A header value loses its surrounding white space on the wire (RFC 9110 §5.5); a query value keeps it.
  const pcRule = pc && 'query' in pc ? unprovenNormalization(card, pc.param) : undefined;
  if (pc && pcRule) fail(`precondition.param ${pc.param} ${NORMALISED_TARGET(pcRule)}`);
  // The request, its checks, the default body and the lookup read the precondition as a top-level param.
  if (pc?.param.includes('.'))
    fail(`precondition.param ${pc.param} must be a top-level param (the request reads params[${pc.param}])`);
  const mayCreate = card.sideEffect.rejectionMayCreate?.value === true;
  if (spec.errors.createdPath !== undefined && !mayCreate)
    fail(
      'errors.createdPath names what a rejection created: the card must say so (sideEffect.rejectionMayCreate true), so the drill checks it',
    );
  // The runner takes a rejection that names nothing as one that left nothing, and lets a correction go out.
  if (mayCreate && spec.errors.createdPath === undefined)
    fail(
      'the card says a rejected call can leave an object (sideEffect.rejectionMayCreate true): declare errors.createdPath, where the error body names it, or, if it names none, write that fact as unknown (a correction is then left to a person)',
    );
  const codeRule = spec.errors.codePath ? -1 : spec.errors.rules.findIndex((r) => r.code !== undefined);
  if (codeRule >= 0) fail(`errors.rules[${codeRule}] matches a code but errors.codePath is not declared`);
  // Read as anything else, the refusal of a reused key would let a correction go out under a key of its own.
  if (
    card.parameterMatching.value === 'mismatch-error' &&
    k.travels !== 'none' &&
    !conflictReachable(spec.errors.rules)
  )
    fail(
      'the card says the provider refuses a key reused with other params (parameterMatching mismatch-error): map that answer to { outcome: rejected, reason: conflict } in errors.rules, before any rule that catches its status',
    );
  return {
    name,
    description: spec.description,
    card,
    ...(spec.sensitiveFields ? { sensitiveFields: spec.sensitiveFields } : {}),
    paramsSchema: spec.paramsSchema ?? { type: 'object' },
    checkParams: (params: unknown) => requestProblems(spec, params),
    http: spec,
    keyRule,
  };
}

type NormalizeRule = NonNullable<RetrySafetyCard['businessOperationId']['normalize']>[number];

/** The card's normalisation of `field` (or of a field above it) that has no provider evidence, if any. */
function unprovenNormalization(card: RetrySafetyCard, field: string): NormalizeRule | undefined {
  return card.businessOperationId.normalize?.find(
    (r) => r.steps.length > 0 && !r.evidence && (field === r.field || field.startsWith(`${r.field}.`)),
  );
}

// The id folds the spellings into one operation, yet the request sends the caller's spelling: each names another object.
const NORMALISED_TARGET = (rule: NormalizeRule) =>
  `is an intent field the id normalises (${rule.field}: ${rule.steps.join(', ')}) without the provider's evidence that it treats those spellings as one: ` +
  `two spellings would get one business-operation id yet name two targets. Drop the rule (and refuse such values in paramsSchema, e.g. a pattern), or give the rule the provider's evidence`;

/** The key rule the declaration and the card agree on, or null when no key travels. */
function keyRuleOf(
  card: RetrySafetyCard,
  k: HttpOperationSpec['key'],
  fail: (msg: string) => never,
): ProviderKeyRule | null {
  const pk = card.providerKey;
  const travels = pk.travels.value;
  if (travels !== 'unknown' && travels !== k.travels)
    fail(`key travels in ${k.travels} but card.providerKey.travels says ${travels}`);
  if (travels === 'unknown' && k.travels !== 'none')
    fail(
      'card.providerKey.travels is unknown: a key cannot be sent where the card does not know it travels; declare key { travels: "none" }',
    );
  if (k.travels === 'none') return null;
  const cardName = pk.name.value;
  // A header name is case-insensitive; a body field or query parameter is not.
  const spelt = (name: string) => (k.travels === 'header' ? name.toLowerCase() : name);
  if (cardName !== 'unknown' && spelt(cardName ?? '') !== spelt(k.name))
    fail(`key name ${k.name} but card.providerKey.name says ${String(cardName)}`);
  const cardMax = typeof pk.maxLength.value === 'number' ? pk.maxLength.value : undefined;
  const cardCharset = pk.charset.value !== 'unknown' ? (pk.charset.value ?? undefined) : undefined;
  const maxLength =
    k.rule?.maxLength ??
    cardMax ??
    fail(
      'card.providerKey.maxLength is unknown: declare key.rule.maxLength (a conservative length the provider surely accepts)',
    );
  const charset =
    k.rule?.charset ??
    cardCharset ??
    fail('card.providerKey.charset is unknown: declare key.rule.charset (a conservative character set)');
  if (cardMax !== undefined && maxLength > cardMax)
    fail(`key.rule.maxLength ${maxLength} exceeds card.providerKey.maxLength ${cardMax}`);
  if (cardCharset !== undefined && charset !== cardCharset)
    fail(`key.rule.charset [${charset}] differs from card.providerKey.charset [${cardCharset}]`);
  return { maxLength, charset, ...(k.rule?.prefix !== undefined ? { prefix: k.rule.prefix } : {}) };
}

/** The path of a lookup that reads a list and picks this operation's item: a search, or a status search without a status URL. */
export function listPath(l: HttpLookupSpec): string | undefined {
  if (l.method === 'search') return l.path;
  if (l.method === 'status-url' && typeof l.withoutStatusRef === 'object') return l.withoutStatusRef.path;
  return undefined;
}

/** What the request needs beyond the schema: every path placeholder and the precondition value as a string or number. */
function requestProblems(spec: HttpOperationSpec, params: unknown): FieldError[] {
  if (typeof params !== 'object' || params === null || Array.isArray(params))
    return [{ path: '(root)', message: 'must be an object' }];
  // `.` and `..` pass encodeURIComponent as they are, and a dot segment resolves to another path; so does an empty one.
  const dots = ['.', '..', ''];
  const needed = `is needed by the path ${spec.path} as a non-empty string or number, not . or ..`;
  const out: FieldError[] = paramPlaceholders(spec.path)
    .filter((p) => [...dots, undefined].includes(scalarText(readPath(params, p))))
    .map((p) => ({ path: p, message: needed }));
  const l = spec.lookup;
  const lookupPath = 'path' in l ? l.path : listPath(l);
  for (const p of paramPlaceholders(lookupPath ?? '')) {
    const v = scalarText(readPath(params, p));
    if (v !== undefined && dots.includes(v) && !out.some((f) => f.path === p))
      out.push({ path: p, message: `is in the lookup path ${lookupPath} and must not be empty, . or ..` });
  }
  const pc = spec.precondition;
  // An empty validator (`If-Match: `) names no version: a server may read it as absent and write unconditionally.
  if (pc && !scalarText((params as Record<string, unknown>)[pc.param]))
    out.push({ path: pc.param, message: 'is the precondition value and must be a non-empty string or number' });
  if (pc && 'header' in pc && headerRefusal(pc.header, String((params as Record<string, unknown>)[pc.param])))
    out.push({
      path: pc.param,
      message: `travels in the ${pc.header} header, which cannot carry a line break, a control character or one above U+00FF`,
    });
  const asText = new Set([
    ...paramPlaceholders(spec.path),
    ...paramPlaceholders(lookupPath ?? ''),
    ...(pc ? [pc.param] : []),
    ...(spec.bodyTextParams ?? []),
    ...(spec.lookupTextParams?.inText ?? []),
  ]);
  for (const p of new Set([...asText, ...(spec.lookupTextParams?.whole ?? [])])) {
    const v = readPath(params, p);
    if (out.some((f) => f.path === p)) continue;
    if (typeof v === 'number' && !numbersOnly(spec.paramsSchema, p)) out.push({ path: p, message: NUMBER_AS_TEXT });
    else if (Number.isInteger(v) && !Number.isSafeInteger(v)) out.push({ path: p, message: UNSAFE_INTEGER });
    else if (asText.has(p) && (typeof v === 'boolean' || (typeof v === 'object' && v !== null)))
      out.push({ path: p, message: NOT_TEXT });
  }
  return out;
}

// The id digests 5 and "5" apart, while a path, query, header, interpolated body text or a lookup match carries both
// as 5: one target, two operations (or one operation's lookup adopting the other's item).
const NUMBER_AS_TEXT =
  'travels as text (path, query, header, a body template or a lookup match): send it as a string, or declare it an integer or number in paramsSchema, so 5 and "5" are not two operations for one target';
// A JSON parser reads such an integer as the nearest double: two targets (snowflake ids) become one text and one id.
const UNSAFE_INTEGER =
  'is an integer past 2^53, which JSON readers round (two such ids become one): declare it a string in paramsSchema and send it as a string';
// true and "true" are one text; two different objects both read "[object Object]".
const NOT_TEXT = 'travels as text (path, query, header, a body template or a lookup match): send it as a string';

/** Whether paramsSchema admits only numbers at this dot path: then "5" is refused there and 5 has one spelling. */
function numbersOnly(schema: JsonSchema | undefined, path: string): boolean {
  let at: unknown = schema;
  for (const part of path.split('.'))
    at = (at as { properties?: Record<string, unknown> } | undefined)?.properties?.[part];
  const type = (at as { type?: unknown } | undefined)?.type;
  const types = Array.isArray(type) ? type : [type];
  return types.length > 0 && types.every((t) => t === 'integer' || t === 'number');
}

export function defaultBody(spec: HttpOperationSpec, params: Record<string, unknown>): Record<string, unknown> {
  const drop = new Set(paramPlaceholders(spec.path));
  if (spec.precondition) drop.add(spec.precondition.param);
  return Object.fromEntries(Object.entries(params).filter(([k]) => !drop.has(k)));
}
