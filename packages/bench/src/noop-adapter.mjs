// An in-process adapter whose provider does nothing: the runner's cost is then all that is measured.
// It behaves like a provider with stored results (replays by key), so the card is a complete, valid one.
import { asProviderKey, fact, SPECIFICATION_VERSION } from '@retrysafe/contract';

const SRC = 'bench no-op adapter (packages/bench/src/noop-adapter.mjs): in-process, no provider behind it';

export const noopCard = Object.freeze({
  cardVersion: 1,
  provider: 'noop',
  operation: 'noop.orders.create',
  sideEffect: { kind: fact('create', SRC), idempotentByNature: fact(false, SRC), rejectionMayCreate: fact(false, SRC) },
  businessOperationId: { rule: 'derived from intent field orderRef', intentFields: ['orderRef'] },
  ids: { run: 'receipts only', attempt: 'receipts only', request: fact('none', SRC) },
  providerKey: {
    travels: fact('header', SRC),
    name: fact('Idempotency-Key', SRC),
    maxLength: fact(255, SRC),
    charset: fact('A-Za-z0-9_:./-', SRC),
    scope: fact('process', SRC),
  },
  keyReuse: fact('same request, same params, while the process lives', SRC),
  parameterMatching: fact('mismatch-error', SRC),
  storedResult: { semantics: fact('replays', SRC), includesErrors: fact(true, SRC) },
  lookup: { method: fact('get-by-key', SRC), consistencyDelay: fact(null, SRC) },
  retention: { minimum: fact('24h', SRC) },
  concurrency: fact('rejects-in-progress', SRC),
  retryableErrors: fact(['none'], SRC),
  nonRetryableErrors: fact(['none'], SRC),
  backoff: { strategy: 'exponential-full-jitter', base: '200ms', cap: '10s', retryAfterCap: '60s' },
  limits: { maxAttempts: 4, maxElapsed: '2m', lookupWindow: '30s' },
  retryLayer: { layer: 'runner', sdkRetries: 'disabled', how: 'no SDK: the provider is a function call' },
  reconciler: 'the runner, through doLookup (an in-memory map by key)',
  handoff: { condition: 'never in the benchmark', destination: 'none' },
  duplicateTest: 'not applicable (benchmark only)',
  receipts: 'ledger',
  unverified: [],
});

/**
 * @param {{ remember?: boolean, card?: object }} [options] remember=false keeps no stored results (the RSS run must
 *   measure the ledger and runner, not a map of a million results in the fake provider); card: the card in the card
 *   format of the runner measured (a baseline's may be older).
 * @returns {import('@retrysafe/contract').AdapterV1}
 */
export function createNoopAdapter({ remember = true, card = noopCard } = {}) {
  const stored = new Map();
  return {
    specificationVersion: SPECIFICATION_VERSION,
    provider: 'noop',
    operations: {
      'orders.create': {
        name: 'orders.create',
        description: 'does nothing and succeeds',
        card,
        intentFields: ['orderRef'],
        paramsSchema: {
          type: 'object',
          properties: { orderRef: { type: 'string' }, amount: { type: 'number' } },
          required: ['orderRef'],
        },
      },
    },
    deriveProviderKey(_operation, id) {
      return asProviderKey(id.length <= 255 ? id : id.slice(0, 255));
    },
    async doExecute(_operation, params, ctx) {
      const result = { id: `ord_${params.orderRef}` };
      if (remember && ctx.providerKey) stored.set(ctx.providerKey, result);
      return { kind: 'succeeded', result, providerRef: result.id };
    },
    async doLookup(_operation, ctx) {
      const result = ctx.providerKey ? stored.get(ctx.providerKey) : undefined;
      if (result) return { kind: 'found', outcome: { kind: 'succeeded', result, providerRef: result.id } };
      return { kind: 'not-found', reason: 'no stored result for this key' };
    },
  };
}
