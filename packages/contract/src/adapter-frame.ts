import {
  type AccountOption,
  type AdapterV1,
  type ExecuteContext,
  type JsonSchema,
  type LookupContext,
  type OperationSpec,
  SPECIFICATION_VERSION,
} from './adapter.js';
import type { RetrySafetyCard } from './card.js';
import { lookupAvailable, marginInForce, resendSafety } from './card-rules.js';
import { defaultProblems } from './card-validate.js';
import {
  AdapterConfigurationError,
  CardValidationError,
  type FieldError,
  InvalidIntentError,
  InvalidParamsError,
  UnknownOperationError,
  UnsupportedCapabilityError,
} from './errors.js';
import {
  type BusinessOperationId,
  charsetPattern,
  deriveProviderKey,
  type ProviderKey,
  type ProviderKeyRule,
  revisionKeySource,
} from './ids.js';
import { accountProblem } from './intent.js';
import type { LookupResult, Outcome } from './outcome.js';
import { AJV_WORDS, schemaProblems } from './schema-problems.js';

/** `keyRule`: null exactly when the card says no key travels. */
export interface FrameOperation extends Omit<OperationSpec, 'intentFields'> {
  readonly keyRule: ProviderKeyRule | null;
}

/** One attempt as the adapter gets it: params and key checked, a signal always present (pass it to the SDK call). */
export interface FramedExecuteContext extends ExecuteContext {
  readonly providerKey: ProviderKey | null;
  readonly signal: AbortSignal;
}

/** A lookup as the adapter gets it: the runner's key judgement and margin, or the card rule's with the caller's margin. */
export type FramedLookupContext = LookupContext &
  Pick<FramedExecuteContext, 'providerKey' | 'signal'> &
  Required<Pick<LookupContext, 'keyReusable' | 'clockSkewMarginMs'>>;

export interface AdapterDefinition<P extends string, O extends FrameOperation> extends AccountOption {
  readonly provider: P;
  readonly operations: Readonly<Record<string, O>>;
  /** One attempt, classified into exactly one outcome. */
  execute(op: O, params: unknown, ctx: FramedExecuteContext): Promise<Outcome>;
  /** Never called for an operation whose card says `lookup.method: none` or `unknown`. */
  lookup(op: O, ctx: FramedLookupContext): Promise<LookupResult>;
  /** AdapterV1.doResolveIntent: the intent of params that passed every other intake check, of an operation that
   * declares `resolvesIntent` (given exactly when one does). */
  resolveIntent?(op: O, intent: Record<string, unknown>, signal: AbortSignal): Promise<Record<string, unknown>>;
  close?(): Promise<void>;
}

export type FramedAdapter<P extends string> = AdapterV1 & { readonly provider: P };

export function providerKeyShapeProblem(key: string, rule: ProviderKeyRule): string | null {
  if (typeof key !== 'string' || key.length === 0) return 'is empty';
  if (key.length > rule.maxLength) return `is ${key.length} characters, over the provider's ${rule.maxLength}`;
  if (!charsetPattern(rule.charset).test(key)) return `has characters outside [${rule.charset}]`;
  return null;
}

/** The frame's params check without a schema compiler: it passes every keyword ajv's words do not name ($ref, if/then, …). */
export const schemaErrors = (schema: JsonSchema, params: unknown): FieldError[] =>
  schemaProblems(schema, params, { root: '(root)', say: AJV_WORDS, neverStricter: true });

export function operationParamsErrors(
  spec: Pick<OperationSpec, 'paramsSchema' | 'checkParams'>,
  params: unknown,
): FieldError[] {
  const errors = schemaErrors(spec.paramsSchema, params);
  if (errors.length > 0 || !spec.checkParams) return errors;
  return [...spec.checkParams(params)].map((f) => ({ path: String(f.path), message: String(f.message) }));
}

const NEVER = new AbortController().signal;

/** A late answer after an abort is dropped. */
function raceAbort<T>(run: () => Promise<T>, signal: AbortSignal, onAbort: () => T): Promise<T> {
  if (signal === NEVER) return run();
  return new Promise<T>((resolve, reject) => {
    const abort = () => resolve(onAbort());
    signal.addEventListener('abort', abort, { once: true });
    run().then(
      (v) => (signal.removeEventListener('abort', abort), resolve(v)),
      (e: unknown) => (signal.removeEventListener('abort', abort), reject(e)),
    );
  });
}

/** The first ASCII character `rule` allows and `card` does not; a card charset that does not compile allows nothing. */
function charOutside(rule: string, card: string): string | null {
  const mine = charsetPattern(rule);
  let theirs: RegExp;
  try {
    theirs = charsetPattern(card);
  } catch {
    theirs = /^$/;
  }
  for (let c = 0; c < 128; c++) {
    const ch = String.fromCharCode(c);
    if (mine.test(ch) && !theirs.test(ch)) return ch;
  }
  return null;
}

/** Why `card` is not operation `name`'s own card in an adapter of `provider` (the runner decides from the card, so
 * another provider's or operation's card would run its calls by that card's rules), or null. */
export function foreignCardProblem(provider: string, name: string, card: RetrySafetyCard): string | null {
  const own = `${provider}.${name}`;
  return card.provider === provider && card.operation === own
    ? null
    : `its card is for ${JSON.stringify(card.operation)} (provider ${JSON.stringify(card.provider)}), expected "${own}": an adapter carries its own operations' cards`;
}

function checkDefinition({ provider, account, operations, resolveIntent }: AdapterDefinition<string, FrameOperation>) {
  const fail = (message: string): never => {
    throw new AdapterConfigurationError(provider, message);
  };
  if (typeof provider !== 'string' || !/^[A-Za-z][A-Za-z0-9_-]*$/.test(provider))
    fail('provider must be an identifier such as "acme" (letters, digits, _ and -)');
  const badAccount = accountProblem(account);
  if (badAccount !== null) fail(badAccount);
  if (typeof operations !== 'object' || operations === null || Object.keys(operations).length === 0)
    fail('declare at least one operation');
  for (const [name, op] of Object.entries(operations)) {
    const { card, keyRule } = op;
    const bad = (why: string) => fail(`operation ${name}: ${why}`);
    // Core asks only `=== true`: another truthy value would be a resolver the runner never calls.
    if (op.resolvesIntent !== undefined && typeof op.resolvesIntent !== 'boolean')
      bad('resolvesIntent must be true or false');
    if (op.name !== name) fail(`operation ${name} is named ${JSON.stringify(op.name)}`);
    const foreign = foreignCardProblem(provider, name, card);
    if (foreign) bad(foreign);
    if (typeof op.paramsSchema !== 'object' || op.paramsSchema === null)
      bad('paramsSchema must be a JSON Schema object');
    const wrongDefaults = defaultProblems(card, op.paramsSchema);
    if (wrongDefaults.length > 0) throw new CardValidationError(card.operation, wrongDefaults);
    // The adapter sends a key exactly when the card knows one travels (never where it is unknown), within its length.
    const travels = card.providerKey.travels.value;
    if (travels === 'none' && keyRule !== null) bad('the card says no key travels but the adapter declares a key rule');
    if (travels === 'unknown' && keyRule !== null)
      bad("the card's providerKey.travels is unknown: a key cannot be sent where the card does not know it travels");
    if (travels !== 'none' && travels !== 'unknown' && keyRule === null)
      bad(`the card says a key travels (${travels}) but the adapter declares no key rule`);
    const max = card.providerKey.maxLength.value;
    if (keyRule && typeof max === 'number' && keyRule.maxLength > max)
      bad(`the key rule allows ${keyRule.maxLength} characters, the card's provider ${max}`);
    const charset = card.providerKey.charset.value;
    const known = typeof charset === 'string' && charset !== 'unknown';
    const extra = keyRule && known ? charOutside(keyRule.charset, charset) : null;
    if (extra !== null) bad(`the key rule allows ${JSON.stringify(extra)}, outside the card's charset [${charset}]`);
  }
  if (Object.values(operations).some((op) => op.resolvesIntent) !== (resolveIntent !== undefined))
    fail('give resolveIntent exactly when an operation declares resolvesIntent');
}

/** The frame owns the rules shared by every provider: names, params, keys, card agreement, the abort signal. */
export function defineAdapter<const P extends string, O extends FrameOperation, X extends object = {}>(
  definition: AdapterDefinition<P, O>,
  extras?: X,
): FramedAdapter<P> & Readonly<X> {
  const { provider, account, operations: declared } = definition;
  checkDefinition(definition);
  // The public spec of each operation: the adapter's own fields (key rule, request builders) stay inside.
  const operations: Record<string, OperationSpec> = {};
  for (const [name, op] of Object.entries(declared)) {
    const { description, card, sensitiveFields, paramsSchema, checkParams, resolvesIntent } = op;
    const { intentFields } = card.businessOperationId;
    const optional = {
      ...(sensitiveFields && { sensitiveFields }),
      ...(checkParams && { checkParams }),
      ...(resolvesIntent && { resolvesIntent }),
    };
    operations[name] = Object.freeze({ name, description, card, intentFields, paramsSchema, ...optional });
  }
  Object.freeze(operations);

  const resolve = (name: string): O => {
    if (typeof name === 'string' && Object.hasOwn(declared, name)) return declared[name]!;
    throw new UnknownOperationError(provider, String(name), Object.keys(declared));
  };

  // The card owns the key comparison: an id's case tells keys apart only where its provider is known to keep it.
  const derive = (op: O, rule: ProviderKeyRule, source: BusinessOperationId): ProviderKey =>
    deriveProviderKey(source, { ...rule, caseSensitive: op.card.providerKey.caseSensitive?.value === true });

  // A recorded key is sent as recorded when it has the rule's shape, so a changed rule never strands an operation.
  function keyFor(op: O, ctx: ExecuteContext | LookupContext): { key: ProviderKey | null } | { problem: string } {
    if (op.keyRule === null) return { key: null };
    const recorded = ctx.providerKey;
    if (recorded === null || recorded === undefined)
      return { key: derive(op, op.keyRule, revisionKeySource(ctx.businessOperationId, ctx.keyRevision)) };
    const problem = providerKeyShapeProblem(recorded, op.keyRule);
    return problem ? { problem: `the recorded provider key ${problem}` } : { key: recorded };
  }

  const adapter: AdapterV1 = {
    specificationVersion: SPECIFICATION_VERSION,
    provider,
    ...(account !== undefined && { account }),
    operations,

    deriveProviderKey(operation: string, id: BusinessOperationId): ProviderKey | null {
      const op = resolve(operation);
      return op.keyRule === null ? null : derive(op, op.keyRule, id);
    },

    async doExecute(operation: string, params: unknown, ctx: ExecuteContext): Promise<Outcome> {
      const op = resolve(operation);
      const fields = operationParamsErrors(op, params);
      if (fields.length > 0) return invalid(op.name, fields);
      const k = keyFor(op, ctx);
      if ('problem' in k)
        return {
          kind: 'rejected',
          reason: 'configuration',
          code: 'retrysafe_provider_key_shape',
          message: `${op.name}: ${k.problem}; nothing was sent`,
        };
      const signal = ctx.signal ?? NEVER;
      if (signal.aborted)
        return {
          kind: 'not-applied',
          code: 'ABORTED_BEFORE_SEND',
          message: `${op.name}: aborted by the caller before sending; nothing was sent`,
          neverSent: true,
        };
      try {
        return await raceAbort(
          () => definition.execute(op, params, { ...ctx, providerKey: k.key, signal }),
          signal,
          () => ({
            kind: 'unknown',
            cause: 'other',
            code: 'ABORTED',
            message: `${op.name}: aborted by the caller mid-call; the request may have reached ${provider}`,
          }),
        );
      } catch (error) {
        // The adapter found bad input while building the request: nothing was sent.
        if (InvalidParamsError.isInstance(error)) return invalid(op.name, error.fields);
        if (InvalidIntentError.isInstance(error))
          return invalid(op.name, [{ path: error.path || '(root)', message: error.message }]);
        throw error;
      }
    },

    async doLookup(operation: string, ctx: LookupContext): Promise<LookupResult> {
      const op = resolve(operation);
      // The runner never looks up without a stated lookup; a direct caller gets the same typed refusal.
      if (!lookupAvailable(op.card))
        throw new UnsupportedCapabilityError(
          provider,
          `lookup for ${op.name}`,
          `the card declares lookup.method ${op.card.lookup.method.value}`,
        );
      const k = keyFor(op, ctx);
      if ('problem' in k)
        return {
          kind: 'cannot-tell',
          reason: `${op.name}: ${k.problem}; nothing was asked`,
          code: 'retrysafe_provider_key_shape',
        };
      const signal = ctx.signal ?? NEVER;
      const aborted = (): LookupResult => ({
        kind: 'cannot-tell',
        code: 'ABORTED',
        reason: `${op.name}: lookup aborted by the caller`,
      });
      if (signal.aborted) return aborted();
      // One answer to "may the key be re-sent" for every adapter: the caller's, else the card rule with its margin.
      const clockSkewMarginMs = marginInForce(op.card, ctx);
      const keyReusable =
        ctx.keyReusable ?? resendSafety(op.card, ctx.firstDispatchedAt, ctx.now, clockSkewMarginMs).safe;
      const framed = { ...ctx, providerKey: k.key, signal, keyReusable, clockSkewMarginMs };
      return raceAbort(() => definition.lookup(op, framed), signal, aborted);
    },

    ...(definition.resolveIntent && {
      doResolveIntent: async (operation: string, intent: Record<string, unknown>, signal?: AbortSignal) => {
        const op = resolve(operation);
        return op.resolvesIntent ? definition.resolveIntent!(op, intent, signal ?? NEVER) : intent;
      },
    }),

    async close(): Promise<void> {
      await definition.close?.();
    },
  };
  return Object.freeze(Object.assign(adapter, extras ?? {})) as FramedAdapter<P> & Readonly<X>;
}

function invalid(operation: string, fields: readonly FieldError[]): Outcome {
  return {
    kind: 'rejected',
    reason: 'validation',
    code: 'retrysafe_invalid_params',
    message: `${operation}: ${fields.map((f) => `${f.path} ${f.message}`).join('; ')}; nothing was sent`,
    fields,
  };
}
