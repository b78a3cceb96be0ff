import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { validateCard } from '@retrysafe/contract';
import { durationMs } from '@retrysafe/contract/rules';
import { describe, expect, it } from 'vitest';
import { STRIPE_KEY_RULE, stripeCards } from './stripe-cards.js';

// The cards must say what shared/providers.md says about Stripe, fact for fact. Each statement below is
// quoted from providers.md; when the file is present (this monorepo's sibling /work/shared) the quotes
// are also checked against it, so an edit there fails here until the cards follow.
const PROVIDERS_MD = fileURLToPath(new URL('../../../../shared/providers.md', import.meta.url));

const QUOTES = {
  key: 'Key: `Idempotency-Key` header on POST; max 255 chars',
  retention:
    'Retention: keys may be pruned once at least 24 h old; a pruned key creates a NEW request. Scope (account/endpoint): unknown.',
  mismatch:
    'Parameter mismatch (same key, different params): error type `idempotency_error` → SDK `StripeIdempotencyError` (400). Not retried.',
  stored:
    'Stored: status code + body of the first request once endpoint execution began, including 500s. Replays carry `Idempotent-Replayed: true`.',
  notStored:
    'NOT stored: requests that fail validation, or conflict with a concurrent request; 429 and most 400s come from layers before the idempotency layer',
  concurrent: 'Concurrent same key: 409 `idempotency_error` (code `idempotency_key_in_use`)',
  search: 'normally < 1 min behind, up to 1 h in outages; list APIs are not delayed',
};

describe('stripe cards match shared/providers.md', () => {
  it.runIf(existsSync(PROVIDERS_MD))('the quoted statements are still what providers.md says', () => {
    const text = readFileSync(PROVIDERS_MD, 'utf8');
    for (const quote of Object.values(QUOTES)) expect(text).toContain(quote);
  });

  for (const [name, card] of Object.entries(stripeCards)) {
    describe(name, () => {
      it('is a valid card whose every unknown is listed with its source', () => {
        const v = validateCard(card);
        expect(v.problems).toEqual([]);
        expect(card.operation).toBe(`stripe.${name}`);
        expect(Object.isFrozen(card)).toBe(true);
      });

      it(`key: ${QUOTES.key}`, () => {
        expect(card.providerKey.travels.value).toBe('header');
        expect(card.providerKey.name.value).toBe('Idempotency-Key');
        expect(card.providerKey.maxLength.value).toBe(255);
        expect(STRIPE_KEY_RULE.maxLength).toBe(255);
      });

      it(`retention: ${QUOTES.retention}`, () => {
        expect(card.retention.minimum.value).toBe('24h');
        expect(card.providerKey.scope.value).toBe('unknown');
        expect(card.unverified.map((u) => u.field)).toContain('providerKey.scope');
      });

      it(`mismatch: ${QUOTES.mismatch}`, () => {
        expect(card.parameterMatching.value).toBe('mismatch-error');
        expect(card.parameterMatching.source).toMatch(/idempotency_error/);
        expect(String(card.nonRetryableErrors.value)).toMatch(/idempotency_error/);
      });

      it(`stored: ${QUOTES.stored}`, () => {
        expect(card.storedResult.semantics.value).toBe('replays');
        expect(card.storedResult.includesErrors.value).toBe(true);
        expect(card.storedResult.semantics.source).toMatch(/Idempotent-Replayed/);
      });

      it(`not stored: ${QUOTES.notStored}`, () => {
        expect(String(card.retryableErrors.value)).toMatch(/429.*not stored/);
      });

      it(`concurrency: ${QUOTES.concurrent}`, () => {
        expect(card.concurrency.value).toBe('rejects-in-progress');
        expect(card.concurrency.source).toMatch(/idempotency_key_in_use/);
      });

      it(`lookup: ${QUOTES.search}`, () => {
        expect(card.lookup.method.value).toBe('search');
        expect(card.lookup.method.source).toMatch(/same key/);
        const delay = card.lookup.consistencyDelay.value;
        if (name === 'refunds.create') {
          expect(delay).toBeNull(); // list API: not delayed
          expect(card.lookup.consistencyDelay.source).toMatch(/no Search API/);
        } else {
          expect(delay).toBe('1h'); // Search API: up to 1 h in outages
          expect(durationMs(delay as '1h')).toBe(60 * 60 * 1000);
        }
      });

      it('one retrying layer: the runner, with SDK retries and the closed-connection retry owned', () => {
        expect(card.retryLayer.layer).toBe('runner');
        expect(card.retryLayer.sdkRetries).toBe('disabled');
        expect(card.retryLayer.how).toMatch(/maxNetworkRetries: 0/);
        expect(card.retryLayer.how).toMatch(/ECONNRESET\/EPIPE/);
      });

      it('every fact cites a source', () => {
        const facts = [
          card.sideEffect.kind,
          card.providerKey.name,
          card.retention.minimum,
          card.lookup.method,
          card.concurrency,
          card.ids.request,
        ];
        for (const f of facts) expect(f.source.length).toBeGreaterThan(10);
      });
    });
  }
});

describe('replay indicator and intent normalisation on the Stripe cards (issue 16)', () => {
  it('every card declares Idempotent-Replayed: true, and the result classifier reads the card’s indicator', async () => {
    const { classifyStripeResult } = await import('./stripe-errors.js');
    for (const card of Object.values(stripeCards)) {
      expect(card.storedResult.replayIndicator?.value).toEqual({ header: 'Idempotent-Replayed', value: 'true' });
      expect(card.storedResult.replayIndicator?.source).toMatch(/^https:\/\/docs\.stripe\.com\//);
    }
    const replay = { id: 'pi_1', lastResponse: { headers: { 'idempotent-replayed': 'true' }, statusCode: 200 } };
    expect(
      classifyStripeResult(
        replay,
        stripeCards['paymentIntents.create'].storedResult.replayIndicator!.value as { header: string; value: string },
      ).kind,
    ).toBe('replayed');
    expect(classifyStripeResult(replay, null).kind).toBe('succeeded');
  });
  it('the caller’s …Ref intent fields are trimmed only (Stripe keeps compatibility forms, case and inner white space apart), Stripe ids stay exact, with a public source', () => {
    for (const card of Object.values(stripeCards)) {
      const bo = card.businessOperationId;
      for (const n of bo.normalize ?? []) expect(n.steps).toEqual(['trim']);
      expect(bo.normalize?.map((n) => n.field)).toEqual(bo.intentFields.filter((f) => f.endsWith('Ref')));
      for (const n of bo.normalize ?? []) expect(n.source).toMatch(/^https:\/\/docs\.stripe\.com\/api\/metadata/);
    }
  });
});
