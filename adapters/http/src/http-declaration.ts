import { AdapterConfigurationError } from '@retrysafe/contract';
import { withinIntent } from '@retrysafe/contract/rules';
import { createHttpAdapter, type HttpAdapter, type HttpAdapterOptions } from './http-adapter.js';
import {
  type HttpLookupSpec,
  type HttpOperationSpec,
  type Ids,
  type LookupReadContext,
  type LookupShape,
  listPath,
  PLACEHOLDER,
  paramPlaceholders,
  placeholders,
  readPath,
  templateValue,
} from './http-operations.js';

// An operation declared as data (JSON/YAML) becomes an `HttpOperationSpec`, so every check of a code declaration applies.

/** Exactly `{name}` is that value (a param's dot path, `{key}` or `{businessOperationId}`); inside a longer string it is interpolated. */
export type Template = string | number | boolean | null | readonly Template[] | { readonly [k: string]: Template };

/** Picks an item: every `where` path of the item must equal its filled template. */
export interface MatchDeclaration {
  /** Dot path of the list in the response body; omit when the body is the list itself. */
  readonly items?: string;
  readonly where: Readonly<Record<string, Template>>;
}

export type HttpLookupDeclaration = LookupShape<MatchDeclaration, Pick<MatchDeclaration, 'where'>>;

/** The four server patterns the package ships loopback sandboxes for (what `retrysafe drill --config` runs against). */
export type HttpPattern = 'ietf-idempotency-key' | 'async-request-reply' | 'etag' | 'client-token';

export interface HttpOperationDeclaration extends Omit<HttpOperationSpec, 'lookup' | 'body'> {
  readonly lookup: HttpLookupDeclaration;
  /** JSON body template; default: the params minus path placeholders and the precondition param. */
  readonly body?: Template;
  /** For the drill: the pattern sandbox to run against, params of drill operation i, the intent field to change. */
  readonly drill?: {
    readonly pattern?: HttpPattern;
    readonly params?: Readonly<Record<string, Template>>;
    readonly changeIntent?: string;
  };
}

/** Header values come resolved (the config reads credentials from the environment before this point). */
export interface HttpAdapterDeclaration extends Omit<HttpAdapterOptions, 'operations'> {
  readonly operations: Readonly<Record<string, HttpOperationDeclaration>>;
}

const WHOLE = new RegExp(`^${PLACEHOLDER.source}$`);

/** Fills a template (see `Template`). A whole-string placeholder with no value becomes undefined (left out of objects). */
export function fillTemplate(t: Template, params: Record<string, unknown>, ids: Ids): unknown {
  if (typeof t === 'string') {
    const whole = WHOLE.exec(t);
    if (whole) return templateValue(whole[1]!, params, ids);
    return t.replace(PLACEHOLDER, (m, name: string) => {
      const v = templateValue(name, params, ids);
      return v === undefined || v === null ? m : String(v);
    });
  }
  if (Array.isArray(t)) return t.map((x) => fillTemplate(x, params, ids));
  if (t && typeof t === 'object') {
    const filled = Object.entries(t).map(([k, v]) => [k, fillTemplate(v as Template, params, ids)]);
    return Object.fromEntries(filled.filter(([, v]) => v !== undefined));
  }
  return t;
}

const templateTexts = (t: Template | undefined): string[] =>
  typeof t === 'string'
    ? [t]
    : t && typeof t === 'object'
      ? Object.values(t).flatMap((x) => templateTexts(x as Template))
      : [];

/** The params a template names: all, or only those inside a longer string, or only whole-string placeholders (which keep the type). */
const templateParams = (t: Template | undefined, which: 'all' | 'inText' | 'whole' = 'all'): string[] =>
  templateTexts(t)
    .filter((text) => which === 'all' || WHOLE.test(text) === (which === 'whole'))
    .flatMap(paramPlaceholders);

const same = (a: unknown, b: unknown) =>
  typeof a === 'number' || typeof b === 'number' ? String(a) === String(b) : JSON.stringify(a) === JSON.stringify(b);

function whereHolds(item: unknown, where: Readonly<Record<string, Template>>, ctx: LookupReadContext): boolean {
  return Object.entries(where).every(([path, t]) => {
    const want = fillTemplate(t, ctx.params, ctx);
    return want !== undefined && same(readPath(item, path), want);
  });
}

export function matcher(m: MatchDeclaration): (body: unknown, ctx: LookupReadContext) => readonly unknown[] {
  return (body, ctx) => {
    const list = m.items ? readPath(body, m.items) : body;
    return Array.isArray(list) ? list.filter((item) => whereHolds(item, m.where, ctx)) : [];
  };
}

/** The code lookup a declaration describes, and the `where` comparisons it makes (checked at construction). */
function lookupSpec(l: HttpLookupDeclaration): [HttpLookupSpec, Readonly<Record<string, Template>>?] {
  if (l.method === 'get-by-key') {
    const where = l.applied?.where;
    return [{ ...l, applied: where && ((resource, ctx) => whereHolds(resource, where, ctx)) }, where];
  }
  if (l.method === 'search') return [{ ...l, match: matcher(l.match) }, l.match.where];
  if (l.method === 'status-url' && typeof l.withoutStatusRef === 'object') {
    const w = l.withoutStatusRef;
    return [{ ...l, withoutStatusRef: { ...w, match: matcher(w.match) } }, w.match.where];
  }
  return [l as HttpLookupSpec];
}

export function operationFromDeclaration(
  provider: string,
  name: string,
  d: HttpOperationDeclaration,
): HttpOperationSpec {
  const fail = (msg: string): never => {
    throw new AdapterConfigurationError(provider, `operation ${name}: ${msg}`);
  };
  const { body, lookup: l, ...rest } = d;
  const [lookup, where] = lookupSpec(l);
  const declared = (d.paramsSchema as { properties?: object } | undefined)?.properties ?? {};
  const intentFields = d.card?.businessOperationId?.intentFields ?? [];
  const fields = new Set([...intentFields, ...Object.keys(declared)]);
  const check = (what: string, t: Template | undefined) => {
    for (const n of templateParams(t))
      if (!fields.has(n.split('.')[0]!))
        fail(
          `${what} template {${n}} is neither an intent field, a declared param (paramsSchema.properties), {key} nor {businessOperationId}`,
        );
  };
  check('body', body);
  check('lookup', where);
  if (where && Object.keys(where).length === 0)
    fail('a lookup match needs at least one `where` comparison (an empty one would match any item)');
  // A list lookup adopts the item its path and `where` select: comparing less than the id covers could take another
  // operation's item for this one, which would then never be made.
  const list = listPath(lookup);
  if (list !== undefined && where) {
    const named = [list, ...templateTexts(where)].flatMap(placeholders);
    // An intent field is compared when a compared placeholder is it or lies above it.
    const missed = intentFields.filter((f) => !withinIntent(f, named));
    if (missed.length > 0 && !named.some((p) => p === 'key' || p === 'businessOperationId'))
      fail(
        `the lookup compares no {businessOperationId} or {key} and leaves out intent field(s) ${missed.join(', ')}: another operation's item could be taken for this one; name them in the lookup path or \`where\``,
      );
  }
  // `where` compares params with the provider's item as text (see `same`): one operation must never match another's.
  const compared = where && {
    lookupTextParams: { inText: templateParams(where, 'inText'), whole: templateParams(where, 'whole') },
  };
  if (body === undefined) return { ...rest, lookup, ...compared };
  const fill = (params: Record<string, unknown>, ids: Ids) => fillTemplate(body, params, ids);
  return { ...rest, lookup, ...compared, body: fill, bodyTextParams: templateParams(body, 'inText') };
}

/** An adapter built from a data declaration (a config file's `type: http` adapter). */
export function createHttpAdapterFromDeclaration(d: HttpAdapterDeclaration): HttpAdapter {
  const operations = Object.entries(d.operations ?? {}).map(([n, op]) => [
    n,
    operationFromDeclaration(d.provider, n, op),
  ]);
  return createHttpAdapter({ ...d, operations: Object.fromEntries(operations) });
}
