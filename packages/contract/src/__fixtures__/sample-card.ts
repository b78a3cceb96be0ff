import { fact, type RetrySafetyCard } from '../index.js';

/** A complete card for a fictional provider that follows the IETF Idempotency-Key draft. */
export const sampleCard = {
  cardVersion: 1,
  provider: 'example',
  operation: 'example.orders.create',
  sideEffect: {
    kind: fact('create', 'https://example.invalid/docs/orders#create'),
    idempotentByNature: fact(false, 'https://example.invalid/docs/orders#create'),
    rejectionMayCreate: fact(false, 'https://example.invalid/docs/errors#validation'),
  },
  businessOperationId: {
    rule: 'derived from intent fields customer, sku, quantity',
    intentFields: ['customer', 'sku', 'quantity'],
  },
  ids: {
    run: 'receipts only',
    attempt: 'receipts only',
    request: fact('Request-Id response header', 'https://example.invalid/docs/errors'),
  },
  providerKey: {
    travels: fact('header', 'draft-ietf-httpapi-idempotency-key-header §2'),
    name: fact('Idempotency-Key', 'draft-ietf-httpapi-idempotency-key-header §2'),
    maxLength: fact(255, 'https://example.invalid/docs/idempotency'),
    charset: fact('A-Za-z0-9_:.-', 'https://example.invalid/docs/idempotency'),
    scope: fact('unknown', 'not documented'),
  },
  keyReuse: fact('same request, same params, while the key is retained', 'https://example.invalid/docs/idempotency'),
  parameterMatching: fact('mismatch-error', 'draft-ietf-httpapi-idempotency-key-header §2.6 (422)'),
  storedResult: {
    semantics: fact('replays', 'draft-ietf-httpapi-idempotency-key-header §2.6'),
    includesErrors: fact(true, 'draft-ietf-httpapi-idempotency-key-header §2.6'),
  },
  lookup: {
    method: fact('get-by-key', 'https://example.invalid/docs/orders#lookup'),
    consistencyDelay: fact(null, 'https://example.invalid/docs/orders#lookup'),
  },
  retention: { minimum: fact('24h', 'https://example.invalid/docs/idempotency#expiry') },
  concurrency: fact('rejects-in-progress', 'draft-ietf-httpapi-idempotency-key-header §2.6 (409)'),
  retryableErrors: fact(['429', '503', 'timeout', 'connection reset'], 'https://example.invalid/docs/errors'),
  nonRetryableErrors: fact(['400', '401', '403', '422'], 'https://example.invalid/docs/errors'),
  backoff: { strategy: 'exponential-full-jitter', base: '200ms', cap: '10s', retryAfterCap: '60s' },
  limits: { maxAttempts: 4, maxElapsed: '2m', lookupWindow: '30s' },
  retryLayer: { layer: 'runner', sdkRetries: 'disabled', how: 'plain fetch, no retry wrapper' },
  reconciler: 'the runner, through doLookup (GET /orders?idempotency_key=…)',
  handoff: {
    condition: 'rejected, or budget exhausted, or unknown with no safe resend',
    destination: 'handoff sink (JSONL file / callback)',
  },
  duplicateTest: 'loopback sandbox behind the fault proxy',
  receipts: 'ledger + JSONL export',
  unverified: [
    {
      field: 'providerKey.scope',
      condition: 'whether keys are scoped per account or per endpoint',
      source: 'not documented',
    },
  ],
} as const satisfies RetrySafetyCard;
