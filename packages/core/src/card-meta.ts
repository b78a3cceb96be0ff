import { fingerprint, type RetrySafetyCard, validateCard } from '@retrysafe/contract';
import { lookupAvailable, resendSafety } from '@retrysafe/contract/rules';

/** The `_meta` key under which an agent-tool listing carries the operation's card facts. */
export const CARD_META_KEY = 'retrysafe/card';

/** What a host or a calling agent may want from the card without reading it whole. */
export interface CardToolMeta {
  /** `sha256:` + hex of the card's canonical JSON: which card (and version of it) the tool runs under. */
  readonly digest: string;
  readonly cardVersion: number;
  readonly operation: string;
  readonly sideEffect: string;
  readonly idempotentByNature: boolean | 'unknown';
  /** The intent fields: calls that agree on them are one business operation. */
  readonly intentFields: readonly string[];
  /** After an unknown outcome the runner may re-send with the same key (inside `keyRetention`). */
  readonly sameKeyResend: boolean;
  readonly keyRetention: string | null;
  /** The runner can look up what the provider stored after an unknown outcome. */
  readonly lookup: boolean;
  readonly lookupDelay: string | null;
  /** Facts the card does not know: the runner will not rely on them. */
  readonly unknowns: readonly string[];
}

/** The card facts an agent-tool listing carries in `_meta` (read from the card with the runner's own rules). */
export function cardToolMeta(card: RetrySafetyCard): { readonly [CARD_META_KEY]: CardToolMeta } {
  return {
    [CARD_META_KEY]: {
      digest: fingerprint(card),
      cardVersion: card.cardVersion,
      operation: card.operation,
      sideEffect: String(card.sideEffect.kind.value),
      idempotentByNature: card.sideEffect.idempotentByNature.value,
      intentFields: card.businessOperationId.intentFields,
      sameKeyResend: resendSafety(card, null, 0).safe,
      keyRetention: card.retention.minimum.value,
      lookup: lookupAvailable(card),
      lookupDelay: card.lookup.consistencyDelay.value,
      unknowns: validateCard(card).unknowns,
    },
  };
}
