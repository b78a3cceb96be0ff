/** What the runner checks of an adapter and its operation before using them. */
import {
  AdapterConfigurationError,
  type AdapterV1,
  type AttemptId,
  asAttemptId,
  type BusinessOperationId,
  CardValidationError,
  InvalidIdError,
  newAttemptId,
  type OperationRecord,
  type OperationSpec,
  type ProviderKey,
  type RetrySafetyCard,
  RetrysafeError,
  SPECIFICATION_VERSION,
  UnknownOperationError,
  UnsupportedSpecificationVersionError,
  validateCard,
} from '@retrysafe/contract';
import { foreignCardProblem } from '@retrysafe/contract/provider';
import { accountProblem, charsetPattern } from '@retrysafe/contract/rules';
import { memo } from '../defined.js';
import { AdapterContractError } from '../errors/adapter-contract-error.js';
import { RunnerConfigurationError } from '../errors/runner-configuration-error.js';

// A spec (its card, its intent fields) is checked once: specs and cards do not change.
const checkedSpecs = new WeakSet<object>();

/** The shape the runner relies on, checked first, so a garbage adapter is a typed error and never a TypeError. */
export function checkAdapterShape(adapter: AdapterV1): void {
  if (typeof adapter !== 'object' || adapter === null)
    throw new RunnerConfigurationError('adapter', 'expected an adapter object');
  const { provider, specificationVersion } = adapter;
  if (specificationVersion !== SPECIFICATION_VERSION)
    throw new UnsupportedSpecificationVersionError(String(provider), specificationVersion);
  if (typeof provider !== 'string' || provider.length === 0)
    throw new RunnerConfigurationError('adapter', 'adapter.provider must be a non-empty string');
  const badAccount = accountProblem(adapter.account);
  if (badAccount !== null) throw new AdapterConfigurationError(provider, `adapter.${badAccount}`);
  if (typeof adapter.operations !== 'object' || adapter.operations === null)
    throw new AdapterConfigurationError(provider, 'adapter.operations must be an object of operation specs');
  for (const m of ['deriveProviderKey', 'doExecute', 'doLookup'] as const)
    if (typeof adapter[m] !== 'function')
      throw new AdapterConfigurationError(provider, `adapter.${m} must be a function`);
  // As defineAdapter checks, for adapters written without it (or a wrapper that rebuilds `operations`): a resolver no
  // operation declares is never asked, so two spellings of one target would be two operations, each sent.
  const resolver = adapter.doResolveIntent;
  const declared = Object.values(adapter.operations).some((s) => (s as OperationSpec | null)?.resolvesIntent === true);
  if ((resolver !== undefined && typeof resolver !== 'function') || declared !== (resolver !== undefined))
    throw new AdapterConfigurationError(
      provider,
      'give adapter.doResolveIntent (a function) exactly when an operation declares resolvesIntent: true',
    );
}

export function checkAdapter(adapter: AdapterV1, operation: string): OperationSpec {
  checkAdapterShape(adapter);
  const spec = Object.hasOwn(adapter.operations, operation) ? adapter.operations[operation] : undefined;
  if (!spec) throw new UnknownOperationError(adapter.provider, operation, Object.keys(adapter.operations));
  if (typeof spec.card !== 'object' || spec.card === null || !Array.isArray(spec.intentFields))
    throw new AdapterConfigurationError(adapter.provider, `operation ${operation}: expected { card, intentFields, … }`);
  if (!checkedSpecs.has(spec)) {
    const v = validateCard(spec.card);
    if (!v.ok) throw new CardValidationError(String(spec.card?.operation ?? operation), v.problems);
    // Checked for adapters written without defineAdapter too.
    const foreign = foreignCardProblem(adapter.provider, operation, spec.card);
    if (foreign) throw new AdapterConfigurationError(adapter.provider, `operation ${operation}: ${foreign}`);
    // The id is derived from spec.intentFields: they must be the fields the card names (in any order).
    const fields = spec.card.businessOperationId.intentFields;
    if (spec.intentFields.length !== fields.length || !spec.intentFields.every((f) => fields.includes(f)))
      throw new AdapterConfigurationError(
        adapter.provider,
        `operation ${operation}: intentFields [${spec.intentFields.join(', ')}] are not its card's businessOperationId.intentFields [${fields.join(', ')}]`,
      );
    checkedSpecs.add(spec);
  }
  return spec;
}

/** The adapter (and operation name) that performs a stored operation: its provider, card operation and account. Two
 * that match are refused, never one picked: the stored operation may be another account's, sent with its token. */
export function findAdapter(adapters: readonly AdapterV1[], record: OperationRecord) {
  const found: { adapter: AdapterV1; opName: string }[] = [];
  for (const adapter of new Set(adapters)) {
    if (adapter.provider !== record.provider || adapter.account !== record.account) continue;
    for (const [opName, spec] of Object.entries(adapter.operations))
      if ((spec as OperationSpec | null)?.card?.operation === record.operation) found.push({ adapter, opName });
  }
  if (found.length > 1)
    throw new RunnerConfigurationError(
      'adapters',
      `${found.length} adapters given for provider ${record.provider} perform ${record.operation}${record.account === undefined ? '' : ` as account ${JSON.stringify(record.account)}`}: give only one, or give each adapter its own \`account\` (the account it acts as)`,
    );
  return found[0] ?? null;
}

/** The caller's attempt ids, each checked and new to the run. The first two are drawn before anything is written (a
 * resume writes its receipt, then sends); a bad one after those stops the run, which its error must say. */
export function callerAttemptIds(fn: (() => string) | undefined): () => AttemptId {
  if (fn === undefined) return newAttemptId;
  if (typeof fn !== 'function')
    throw new RunnerConfigurationError('attemptIds', 'expected a function returning a new attempt id per call');
  const seen = new Set<string>();
  const draw = (): AttemptId => {
    const id = asAttemptId(fn());
    if (seen.has(id)) throw new InvalidIdError('attempt id', id, 'already used in this run: each call needs a new one');
    seen.add(id);
    return id;
  };
  const ahead = [draw(), draw()];
  return () => {
    const next = ahead.shift();
    if (next !== undefined) return next;
    try {
      return draw();
    } catch (err) {
      const why = `${(err as Error).message}; the run stopped before the step it was for, and its earlier provider calls may have reached the provider (their outcomes are in the ledger): run the operation again or recover(), both look it up first`;
      throw new RunnerConfigurationError('attemptIds', why);
    }
  };
}

/** The adapter's provider key, checked like user input. */
export function derivedProviderKey(
  adapter: AdapterV1,
  opName: string,
  card: RetrySafetyCard,
  source: BusinessOperationId,
): ProviderKey | null {
  const broken = (problem: string, cause?: unknown) =>
    new AdapterContractError(adapter.provider, opName, problem, cause === undefined ? undefined : { cause });
  let key: unknown;
  try {
    key = adapter.deriveProviderKey(opName, source);
  } catch (err) {
    if (RetrysafeError.isInstance(err)) throw err;
    throw broken(
      `deriveProviderKey threw (${err instanceof Error ? `${err.name}: ${err.message}` : String(err)})`,
      err,
    );
  }
  const travels = card.providerKey.travels.value;
  if (key === null) {
    if (travels === 'none' || travels === 'unknown') return null;
    throw broken(`deriveProviderKey returned null, but the card says the key travels in the ${String(travels)}`);
  }
  if (typeof key !== 'string' || key.length === 0)
    throw broken(
      `deriveProviderKey returned ${typeof key === 'string' ? 'an empty string' : typeof key}, not a provider key (a non-empty string, or null)`,
    );
  const max = card.providerKey.maxLength.value;
  if (typeof max === 'number' && key.length > max)
    throw broken(`deriveProviderKey returned a key of ${key.length} characters, over the card's maxLength ${max}`);
  const charset = memo(charsets, card, charsetOf);
  if (charset !== null && !charset.test(key))
    throw broken(
      `deriveProviderKey returned a key with characters outside the card's charset [${card.providerKey.charset.value}]`,
    );
  return key as ProviderKey;
}

// Once per card (validateCard made sure it compiles).
const charsets = new WeakMap<RetrySafetyCard, RegExp | null>();
function charsetOf(card: RetrySafetyCard): RegExp | null {
  const body = card.providerKey.charset.value;
  return typeof body === 'string' && body !== 'unknown' ? charsetPattern(body) : null;
}
