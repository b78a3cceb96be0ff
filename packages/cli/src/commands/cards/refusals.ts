import { type RetrySafetyCard, UNKNOWN } from '@retrysafe/contract';
import { lookupAvailable, notFoundIsAuthoritative, resendSafety } from '@retrysafe/contract/rules';

/** What the runner will not do because of the card's unknowns, in the runner's own words (core's decision rules). */
export function refusals(card: RetrySafetyCard): string[] {
  const out: string[] = [];
  const resend = resendSafety(card, null, 0);
  if (!resend.safe) out.push(`no re-send after an unknown outcome (timeout, reset, 5xx): ${resend.why}`);
  if (!lookupAvailable(card)) {
    out.push(
      `no lookup of what the provider stored (card lookup.method = ${String(card.lookup.method.value)}): ${resend.safe ? 'after an unknown outcome it only re-sends with the same key, inside the retention' : 'every unknown outcome goes to a person'}`,
    );
  } else if (!notFoundIsAuthoritative(card, { now: Number.MAX_SAFE_INTEGER, firstDispatchedAt: 0 })) {
    // judged as late as can be: a "not found" that never proves absence
    out.push(
      `a lookup's "not found" is never taken as "not applied" (card lookup.consistencyDelay = ${String(card.lookup.consistencyDelay.value)}): it keeps looking for limits.lookupWindow, then hands off`,
    );
  }
  if (card.sideEffect.rejectionMayCreate?.value === UNKNOWN)
    out.push(
      'no corrected request after a rejection the provider processed (card sideEffect.rejectionMayCreate = unknown): a rejection that names nothing left proves nothing, so a person checks at the provider',
    );
  if (card.sideEffect.kind.value === UNKNOWN)
    out.push('agent tools mark the operation destructive (card sideEffect.kind = unknown)');
  return out;
}
