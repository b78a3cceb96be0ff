import { type Duration, defineCard, fact, type RetrySafetyCard } from '@retrysafe/contract';
import { formatDuration } from '@retrysafe/contract/rules';
import type { SandboxBehaviour } from './sandbox-provider.js';

export const SANDBOX_PROVIDER = 'sandbox';
export const SANDBOX_KEY_RULE = { maxLength: 255, charset: 'A-Za-z0-9._:/-', prefix: 'rs-' } as const;

export interface SandboxLimits {
  readonly maxAttempts?: number;
  readonly maxElapsed?: Duration;
  readonly lookupWindow?: Duration;
  readonly base?: Duration;
  readonly cap?: Duration;
  readonly retryAfterCap?: Duration;
}

const PROVIDER_FILE = 'adapters/sandbox/src/sandbox-provider.ts';
const SERVER_FILE = 'adapters/sandbox/src/sandbox-server.ts';
const CREATES = `${PROVIDER_FILE}: POST /records creates one record per processed request`;
const src = (option: string, value: unknown) =>
  `sandbox behaviour option ${option}=${JSON.stringify(value)} (${PROVIDER_FILE})`;

/**
 * The card of `sandbox.records.create`, computed from the behaviour the sandbox was given: a sandbox
 * set to "no replay" gets a card saying storedResult none, and so on. The runner reads only this.
 */
export function sandboxCreateCard(
  b: SandboxBehaviour,
  limits: SandboxLimits = {},
  intentFields: readonly string[] = ['ref'],
): RetrySafetyCard {
  const retention: Duration | null = b.replays && b.retentionMs !== null ? formatDuration(b.retentionMs) : null;
  const delay: Duration | null = b.lookupDelayMs ? formatDuration(b.lookupDelayMs) : null;
  // The sandbox applies a request whenever it reaches it: a request held in the network (the fault proxy
  // can hold one past the client's timeout) lands late, with no bound unless the behaviour states one.
  const late =
    b.lateApplyMs !== undefined
      ? fact<Duration>(formatDuration(b.lateApplyMs), src('lateApplyMs', b.lateApplyMs))
      : fact<Duration>(
          'unknown',
          `${src('lateApplyMs', undefined)}: not set, and a request held in the network may land at any time`,
        );
  return defineCard({
    cardVersion: 1,
    provider: SANDBOX_PROVIDER,
    operation: `${SANDBOX_PROVIDER}.records.create`,
    sideEffect: {
      kind: fact('create', CREATES),
      idempotentByNature: fact(false, CREATES),
      rejectionMayCreate: fact(false, `${PROVIDER_FILE}: a validation error (400) stores nothing`),
    },
    businessOperationId: {
      rule: `derived from intent fields ${intentFields.join(', ')}`,
      intentFields: [...intentFields],
    },
    ids: {
      run: 'receipts only',
      attempt: 'receipts only',
      request: fact('x-request-id response header', SERVER_FILE),
    },
    providerKey: {
      travels: fact('header', SERVER_FILE),
      name: fact('Idempotency-Key', SERVER_FILE),
      maxLength: fact(SANDBOX_KEY_RULE.maxLength, 'adapters/sandbox/src/sandbox-cards.ts (SANDBOX_KEY_RULE)'),
      charset: fact(SANDBOX_KEY_RULE.charset, 'adapters/sandbox/src/sandbox-cards.ts (SANDBOX_KEY_RULE)'),
      scope: fact('one sandbox provider instance', PROVIDER_FILE),
      caseSensitive: fact(true, `${PROVIDER_FILE}: keys are held in a Map, compared exactly`),
    },
    keyReuse: fact(
      b.replays ? 'same request, same params, while the key is retained' : 'never relied on: nothing is stored',
      src('replays', b.replays),
    ),
    parameterMatching: fact(b.parameterMatching, src('parameterMatching', b.parameterMatching)),
    storedResult: {
      semantics: fact(b.replays ? 'replays' : 'none', src('replays', b.replays)),
      includesErrors: fact(false, `${PROVIDER_FILE}: only successful creates are stored`),
    },
    lookup: {
      method: fact(b.lookup, src('lookup', b.lookup)),
      consistencyDelay: fact(delay, src('lookupDelayMs', b.lookupDelayMs ?? 0)),
      lateApplyBound: late,
    },
    retention: { minimum: fact(retention, src('retentionMs', b.retentionMs)) },
    concurrency: fact(b.concurrency, src('concurrency', b.concurrency)),
    retryableErrors: fact(['429', 'connection refused'], 'adapters/sandbox/src/sandbox-adapter.ts (classify)'),
    nonRetryableErrors: fact(['400', '422'], 'adapters/sandbox/src/sandbox-adapter.ts (classify)'),
    backoff: {
      strategy: 'exponential-full-jitter',
      base: limits.base ?? '200ms',
      cap: limits.cap ?? '10s',
      retryAfterCap: limits.retryAfterCap ?? '60s',
    },
    limits: {
      maxAttempts: limits.maxAttempts ?? 4,
      maxElapsed: limits.maxElapsed ?? '2m',
      lookupWindow: limits.lookupWindow ?? '30s',
    },
    retryLayer: {
      layer: 'runner',
      sdkRetries: 'disabled',
      how: 'no SDK: in-process calls or one fetch per attempt, no retry wrapper',
    },
    reconciler:
      b.lookup === 'get-by-key'
        ? 'the runner, through doLookup (GET /records?key=…)'
        : 'the runner by same-key resend when the card allows, else a person',
    handoff: {
      condition: 'rejected, budget exhausted, or unknown with no safe resend',
      destination: "the runner's handoff sink",
    },
    duplicateTest: 'this package is the duplicate test: provider.count() is the number of records held',
    receipts: "the runner's ledger; JSONL export",
    unverified:
      b.lateApplyMs !== undefined
        ? []
        : [
            {
              field: 'lookup.lateApplyBound',
              condition: 'no bound on when a held request reaches the sandbox (set behaviour lateApplyMs to state one)',
              source: PROVIDER_FILE,
            },
          ],
  });
}

/** The sandbox as an IETF Idempotency-Key provider: replays for 24 h, 422 on mismatch, 409 while in flight, lookup by key. */
export const REPLAYING_BEHAVIOUR: SandboxBehaviour = Object.freeze({
  replays: true,
  retentionMs: 86_400_000,
  parameterMatching: 'mismatch-error',
  concurrency: 'rejects-in-progress',
  lookup: 'get-by-key',
});
/** The sandbox as a provider that stores nothing and offers no lookup: every re-send is a new record. */
export const FORGETFUL_BEHAVIOUR: SandboxBehaviour = Object.freeze({
  replays: false,
  retentionMs: null,
  parameterMatching: 'none',
  concurrency: 'duplicates',
  lookup: 'none',
});

/** The cards of the two behaviours the drills use (`sandboxCreateCard(behaviour)` gives the card of any other). */
export const sandboxCards = {
  'sandbox-replaying': sandboxCreateCard(REPLAYING_BEHAVIOUR),
  'sandbox-forgetful': sandboxCreateCard(FORGETFUL_BEHAVIOUR),
} as const;
