import { createRequire } from 'node:module';
import { type FieldError, InvalidParamsError, type JsonSchema, type OperationSpec } from '@retrysafe/contract';
import type { Ajv, ErrorObject, Options, ValidateFunction } from 'ajv';
import { memo } from '../defined.js';
import { RunnerConfigurationError } from '../errors/runner-configuration-error.js';

// ajv and ajv-formats (CommonJS) load on the first validation: they cost more than the rest of core's cold import.
const require = createRequire(import.meta.url);
type AjvClass = new (options: Options) => Ajv;
const DIALECTS: Record<string, () => AjvClass> = {
  'draft-07': () => (require('ajv') as { Ajv: AjvClass }).Ajv,
  '2019-09': () => (require('ajv/dist/2019.js') as { Ajv2019: AjvClass }).Ajv2019,
  '2020-12': () => (require('ajv/dist/2020.js') as { Ajv2020: AjvClass }).Ajv2020,
};
// Ajv's defaults leave the params untouched (no coercion, no defaults filled in): they are sent as given. A compiled
// schema is not added by its $id (addUsedSchema), so operations sharing an $id neither collide nor resolve each other's.
const OPTIONS: Options = { allErrors: true, strict: false, logger: false, addUsedSchema: false };
const dialects = new Map<string, Ajv>();
const compiled = new WeakMap<object, ValidateFunction>();

function newAjv(dialect: string): Ajv {
  const formats = require('ajv-formats') as { default?: (ajv: Ajv) => Ajv };
  const Ajv = DIALECTS[dialect]!();
  return (formats.default ?? (formats as unknown as (ajv: Ajv) => Ajv))(new Ajv(OPTIONS));
}

function compile(schema: JsonSchema): ValidateFunction {
  const dialect = /json-schema\.org\/draft\/(2019-09|2020-12)\//.exec(String(schema.$schema ?? ''))?.[1];
  return memo(dialects, dialect ?? 'draft-07', newAjv).compile(schema as object);
}

function validatorFor(schema: JsonSchema, operation: string): ValidateFunction {
  try {
    return memo(compiled, schema, compile);
  } catch (err) {
    const why = `the params schema of ${operation} does not compile: ${(err as Error).message}`;
    throw new RunnerConfigurationError('paramsSchema', why);
  }
}

/** Throws the RunnerConfigurationError its every call would (a server, at start). */
export function checkParamsSchema(spec: OperationSpec): void {
  validatorFor(spec.paramsSchema, spec.card.operation);
}

/** `/items/0/name` → `items[0].name`; the object itself is `(root)`. */
function dotPath(pointer: string, child?: string): string {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) parts.push(child);
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  return out || '(root)';
}

/** The ajv param that holds the child's name, and the message. */
const CHILD_ERRORS: Record<string, readonly [string, string]> = {
  required: ['missingProperty', 'is required'],
  additionalProperties: ['additionalProperty', 'is not a field of this operation'],
};

function fieldErrors(errors: readonly ErrorObject[] | null | undefined): FieldError[] {
  const out = (errors ?? []).map((e): FieldError => {
    const child = Object.hasOwn(CHILD_ERRORS, e.keyword) ? CHILD_ERRORS[e.keyword] : undefined;
    return child
      ? { path: dotPath(e.instancePath, String(e.params[child[0]])), message: child[1] }
      : { path: dotPath(e.instancePath), message: e.message ?? `fails ${e.keyword}` };
  });
  // One per path and message, in the order first seen.
  return [...new Map(out.map((fe) => [`${fe.path}\u0000${fe.message}`, fe])).values()];
}

// A lone surrogate (an emoji cut in half) has no UTF-8 form: an SDK throws on it after the claim (an unknown outcome,
// so a hand-off of a call never sent), a header refuses it, or a JSON or form writer sends U+FFFD: two intents as one.
const LONE = /\p{Cs}/u;

function loneSurrogates(value: unknown, path: string, seen: Set<object>): FieldError[] {
  const at = path || '(root)';
  if (typeof value === 'string')
    return LONE.test(value) ? [{ path: at, message: 'holds a lone surrogate, which no request can carry' }] : [];
  if (typeof value !== 'object' || value === null || seen.has(value)) return [];
  seen.add(value);
  return Object.entries(value).flatMap(([k, v]) => {
    if (LONE.test(k))
      return [{ path: at, message: 'has a field name with a lone surrogate, which no request can carry' }];
    return loneSurrogates(v, Array.isArray(value) ? `${path}[${k}]` : path ? `${path}.${k}` : k, seen);
  });
}

export function paramsErrors(spec: OperationSpec, params: unknown): FieldError[] {
  const validate = validatorFor(spec.paramsSchema, spec.card.operation);
  if (!validate(params)) return fieldErrors(validate.errors);
  const lone = loneSurrogates(params, '', new Set());
  if (lone.length) return lone;
  // Then the adapter's own checks (OperationSpec.checkParams), still before anything is claimed.
  return spec.checkParams
    ? [...spec.checkParams(params)].map((f) => ({ path: String(f.path), message: String(f.message) }))
    : [];
}

export function assertParams(spec: OperationSpec, params: unknown): void {
  const errors = paramsErrors(spec, params);
  if (errors.length) throw new InvalidParamsError(spec.card.operation, errors);
}
