import type { AdapterV1 } from '@retrysafe/contract';

/** `inner` with other `do` methods: identity (account, intent resolution), key derivation and close still go to
 * `inner` (which may be a class). */
export function wrapAdapter(inner: AdapterV1, methods: Pick<AdapterV1, 'doExecute' | 'doLookup'>): AdapterV1 {
  return {
    specificationVersion: inner.specificationVersion,
    provider: inner.provider,
    ...(inner.account !== undefined ? { account: inner.account } : {}),
    operations: inner.operations,
    deriveProviderKey: (op, id) => inner.deriveProviderKey(op, id),
    ...(inner.doResolveIntent ? { doResolveIntent: (op, i, signal) => inner.doResolveIntent!(op, i, signal) } : {}),
    doExecute: methods.doExecute,
    doLookup: methods.doLookup,
    ...(inner.close ? { close: () => inner.close!() } : {}),
  };
}
