import {
  type AdapterV1,
  asBusinessOperationId,
  fingerprint,
  IntentLookupError,
  InvalidIntentError,
  intentOf,
  type OperationSpec,
  type RetrySafetyCard,
} from '@retrysafe/contract';
import {
  differingPaths,
  intentFingerprintOf,
  intentIdentity,
  normalizeIntent,
  normalizeParams,
} from '@retrysafe/contract/rules';
import type { Clock } from '../clock.js';
import { memo } from '../defined.js';
import type { Redactor } from '../redact.js';
import { type Budget, planRetry } from '../retry-policy.js';
import type { RunInput } from '../runner/types.js';
import type { EventFields } from '../telemetry.js';

/** RunnerContext.log, for a subject with no id yet. */
type Log = (
  level: 'warn',
  event: string,
  message: string,
  op: { card: RetrySafetyCard; redactor: Redactor },
  fields: EventFields,
) => void;

const comparisons = new WeakMap<RetrySafetyCard, ReturnType<typeof buildComparison>>();
export const comparisonFor = (card: RetrySafetyCard) => memo(comparisons, card, buildComparison);

/** How the card compares intents (businessOperationId.normalize) and params (plus paramComparison; the rest exactly). */
function buildComparison(card: RetrySafetyCard) {
  const intentRules = card.businessOperationId.normalize ?? [];
  const paramRules = card.paramComparison ?? [];
  // One walk and one copy: validateCard keeps paramComparison rules off intent fields and what lies beneath them, and
  // at one depth the param rules go first, so intent fields are compared as their id reads them.
  const rules = [...paramRules, ...intentRules];
  const comparable = (params: unknown) => normalizeParams(params ?? null, rules);
  return {
    /** Whether any rule changes params before they are compared (else their fingerprint is their own). */
    normalizes: intentRules.length > 0 || paramRules.some((r) => r.compare === 'normalized'),
    paramsFingerprint: (params: unknown) => fingerprint(comparable(params)),
    /** Where two params differ as compared (paths only). */
    differences: (stored: unknown, next: unknown) => differingPaths(comparable(stored), comparable(next)),
  };
}

/** Whether the adapter resolves this operation's intent (its spec declares it): one answer for intake, every later
 * send's target check and agent answers. */
export const resolvesIntent = (adapter: AdapterV1, opName: string): boolean =>
  adapter.doResolveIntent !== undefined && adapter.operations[opName]?.resolvesIntent === true;

/** The intent the adapter resolves from a call's params (a Graph mailbox spelled `me`, by UPN or by id is one user),
 * asked once every other intake check passed and before the claim, so a retry with another spelling is the same
 * operation; null when the adapter resolves nothing or the caller gave the intent. A look-up the provider could not
 * answer now is asked again as a not-applied call is (planRetry), each failure logged; still failing, it says how it
 * stopped. */
export async function resolvedIntent(
  { clock, random, log }: { readonly clock: Clock; readonly random: () => number; readonly log: Log },
  op: {
    readonly adapter: AdapterV1;
    readonly opName: string;
    readonly card: RetrySafetyCard;
    readonly policy: Budget['policy'];
    readonly redactor: Redactor;
  },
  input: RunInput,
) {
  const { adapter, opName, policy, redactor } = op;
  if (!resolvesIntent(adapter, opName) || input.intent !== undefined) return null;
  const intent = intentOf(input.params, adapter.operations[opName]!.card.businessOperationId);
  const runStartedAt = clock.now();
  const subject = { card: op.card, redactor }; // no id yet: the spelling's is no operation's
  for (let runAttempts = 1; ; runAttempts++) {
    try {
      return await adapter.doResolveIntent!(opName, intent, input.signal);
    } catch (e) {
      // The provider's answer is quoted in the reason: redacted as a receipt's message is, before anyone prints it.
      if (InvalidIntentError.isInstance(e)) throw new InvalidIntentError(e.path, redactor.text(e.reason));
      if (!IntentLookupError.isInstance(e)) throw e;
      const reason = redactor.text(e.reason);
      if (input.signal?.aborted) throw new IntentLookupError(e.path, reason, e.retryAfterMs);
      const plan = planRetry({ runStartedAt, now: clock.now(), runAttempts }, e.retryAfterMs, { policy, random });
      const next = plan.retry ? `asking again in ${plan.delayMs} ms` : `stopped: ${plan.detail}`;
      const fields = plan.retry ? { decision: 'retry', delayMs: plan.delayMs } : { decision: 'stop' };
      log('warn', 'intent-lookup', `${e.path} could not be looked up: ${reason}; ${next}`, subject, fields);
      if (!plan.retry) throw new IntentLookupError(e.path, `${reason}; stopped: ${plan.detail}`, e.retryAfterMs);
      await clock.sleep(plan.delayMs);
    }
  }
}

/** The params resolved now (`target`), and whether they still name the object the operation's id was derived from (a
 * repository name can pass to another repository, a UPN to another user): `moved` null when they do, else why nothing
 * may be sent by them. Only for an operation that resolvesIntent. */
export async function movedTarget(
  op: {
    readonly adapter: AdapterV1;
    readonly opName: string;
    readonly params: unknown;
    readonly intentFingerprint: string;
  },
  signal: AbortSignal,
): Promise<{ moved: string | null; target: Record<string, unknown> }> {
  const { adapter, opName, params } = op;
  const spec = adapter.operations[opName]!;
  const target = await adapter.doResolveIntent!(opName, intentOf(params, spec.card.businessOperationId), signal);
  if (identityOf(spec, { params, intent: target }, adapter.account).intentFingerprint === op.intentFingerprint)
    return { moved: null, target };
  const moved =
    "the params' names now resolve to another object than the one this operation's id names (renamed, transferred, or re-created under the name)";
  return { moved, target };
}

/** A call's business-operation id (the caller's, or the digest of its normalised intent) and intent fingerprint, both
 * covering the adapter's `account` when it has one: the same caller id from another account is an intent conflict. */
export function identityOf(
  spec: OperationSpec,
  input: Pick<RunInput, 'params' | 'businessOperationId' | 'intent'>,
  account: string | undefined,
) {
  const card = spec.card;
  const rule = card.businessOperationId;
  const given = input.intent ?? null;
  const intent = given === null ? intentOf(input.params, rule) : normalizeIntent(given, rule.normalize);
  if (input.businessOperationId === undefined) return intentIdentity(card.operation, intent, account);
  const id = asBusinessOperationId(input.businessOperationId);
  return { id, intentFingerprint: intentFingerprintOf(card.operation, intent, account) };
}
