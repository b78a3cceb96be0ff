import { asBusinessOperationId, type ClaimInput, type ProviderKey } from '@retrysafe/contract';
import { REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';

/** A provider that replays a key's first answer: the usual well-behaved provider of these tests. */
export const REPLAYING = REPLAYING_BEHAVIOUR;

/** A claim that dispatches at once, its fingerprints and key derived from `id`. */
export function claimInput(id: string, over: Partial<ClaimInput> = {}): ClaimInput {
  return {
    businessOperationId: asBusinessOperationId(id),
    provider: 'sandbox',
    operation: 'records.create',
    intentFingerprint: `sha256:intent-${id}`,
    paramsFingerprint: `sha256:params-${id}`,
    params: { ref: id },
    providerKey: `key-${id}` as ProviderKey,
    owner: 'worker-1',
    leaseMs: 10_000,
    now: 1_000,
    dispatch: true,
    ...over,
  };
}
