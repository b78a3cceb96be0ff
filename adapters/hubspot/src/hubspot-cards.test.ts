import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { asBusinessOperationId, validateCard } from '@retrysafe/contract';
import { describe, expect, it } from 'vitest';
import { createHubSpotAdapter } from './hubspot-adapter.js';
import { hubSpotCards, hubSpotCardsFor } from './hubspot-cards.js';
import { KEY_RULE, recordKey } from './hubspot-operations.js';

// The cards must say what shared/providers.md says about HubSpot, fact for fact. Each statement below
// is quoted from providers.md; when the file is present (the monorepo's sibling /work/shared) the
// quotes are checked against it too, so an edit there fails here until the cards follow.
const PROVIDERS_MD = fileURLToPath(new URL('../../../../shared/providers.md', import.meta.url));

const QUOTES = {
  noKey: 'No idempotency key.',
  upsert:
    'Idempotent write: batch upsert `crm.<object>.batchApi.upsert` (`POST /crm/v3/objects/<object>/batch/upsert`) with `idProperty` = a unique-value property; result `new: true|false`.',
  patch: 'Contact update `basicApi.update` = PATCH set-values (naturally idempotent, no precondition/ETag).',
  ticket:
    'Ticket create `POST /crm/v3/objects/tickets`: NOT idempotent; a unique-value custom property holding the business-operation id lets the provider reject a duplicate (status for tickets: unknown; 409 is documented for contact email collision).',
  errors:
    "Errors: 429 (body `policyName`/`errorType`), 5xx retryable; shape `{status:'error', message, correlationId, category, errors?}`",
  sdkRetry:
    "Decorators are a PROCESS-WIDE singleton: one client's retry setting leaks into later clients. The adapter must not rely on it.",
  search:
    'CRM search has an indexing delay ("a few moments", exact figure unknown), 5 req/s per account, 200/page, excludes archived.',
};

const cards = Object.entries(hubSpotCards);

describe('hubspot cards match shared/providers.md', () => {
  it.runIf(existsSync(PROVIDERS_MD))('the quoted statements are still what providers.md says', () => {
    const text = readFileSync(PROVIDERS_MD, 'utf8');
    for (const quote of Object.values(QUOTES)) expect(text).toContain(quote);
  });

  for (const [name, card] of cards) {
    it(`${name}: a valid, frozen card whose every unknown is listed with its source`, () => {
      const v = validateCard(card);
      expect(v.problems).toEqual([]);
      expect(card.operation).toBe(`hubspot.${name}`);
      expect(Object.isFrozen(card) && Object.isFrozen(card.sideEffect.kind)).toBe(true);
      const listed = new Set(card.unverified.map((u) => u.field));
      for (const path of v.unknowns) expect(listed.has(path)).toBe(true);
    });

    it(`${name}: ${QUOTES.noKey} (no header key; the runner is the only retrying layer)`, () => {
      expect(card.providerKey.travels.value).not.toBe('header');
      expect(card.retryLayer).toMatchObject({ layer: 'runner', sdkRetries: 'disabled' });
      expect(card.retryLayer.how).toMatch(/process-wide singleton/);
      expect(card.retryLayer.how).toMatch(/numberOfApiCallRetries: 6/);
    });

    it(`${name}: ${QUOTES.errors}`, () => {
      expect(card.retryableErrors.value[0]).toBe('429');
      expect(String(card.retryableErrors.value)).toMatch(/5xx/);
      expect(card.nonRetryableErrors.value).toEqual(expect.arrayContaining(['400', '401', '403']));
      expect(card.ids.request.value).toMatch(/correlationId/);
    });
  }

  it(`contacts.update: ${QUOTES.patch}`, () => {
    const c = hubSpotCards['contacts.update'];
    expect(c.sideEffect.kind.value).toBe('set');
    expect(c.sideEffect.idempotentByNature.value).toBe(true);
    expect(c.concurrency.value).toBe('last-write-wins');
    expect(c.providerKey.travels.value).toBe('none');
    expect(c.storedResult.semantics.value).toBe('none');
    expect(c.retention.minimum.value).toBeNull();
  });

  it(`objects.upsert: ${QUOTES.upsert}`, () => {
    const c = hubSpotCards['objects.upsert'];
    expect(c.sideEffect.kind.value).toBe('upsert');
    expect(c.sideEffect.idempotentByNature.value).toBe(true);
    expect(c.sideEffect.kind.source).toMatch(/batch\/upsert/);
    expect(c.sideEffect.idempotentByNature.source).toMatch(/new: false/);
    // The unique value names the record, not the operation: no key, so a later change of the record is applied.
    expect(c.providerKey.travels.value).toBe('none');
    expect(c.providerKey.scope.value).toMatch(/named by its retrysafe_operation_id \(objectType and ref\)/);
    expect(c.storedResult.semantics.value).toBe('none');
  });

  it(`tickets.create: ${QUOTES.ticket}`, () => {
    const c = hubSpotCards['tickets.create'];
    expect(c.sideEffect.kind.value).toBe('create');
    expect(c.sideEffect.idempotentByNature.value).toBe(false);
    expect(c.storedResult.semantics.value).toBe('rejects-duplicate');
    expect(c.providerKey.name.value).toBe('properties.retrysafe_operation_id');
    const dup = c.unverified.find((u) => u.field === 'storedResult.semantics');
    expect(dup?.condition).toMatch(/409 is documented for the contact email collision only/);
    // a create is never re-sent on an unknown outcome without a lookup first: no known retention
    expect(c.retention.minimum.value).toBe('unknown');
  });

  it(`search lookups: ${QUOTES.search}`, () => {
    for (const name of ['objects.upsert', 'tickets.create'] as const) {
      const c = hubSpotCards[name];
      expect(c.lookup.method.value).toBe('search');
      expect(c.lookup.method.source).toMatch(/5 req\/s per account, excludes archived/);
      expect(c.lookup.consistencyDelay.value).toBe('unknown');
      expect(c.unverified.map((u) => u.field)).toContain('lookup.consistencyDelay');
    }
  });

  it('a caller-set search settle time becomes a known consistency delay, cited as the caller’s claim', () => {
    const c = hubSpotCardsFor({ idProperty: 'my_op_id', searchSettleMs: 90_000 })['tickets.create'];
    expect(c.lookup.consistencyDelay.value).toBe('90s');
    expect(c.lookup.consistencyDelay.source).toMatch(/adapter option searchSettleMs/);
    expect(c.unverified.map((u) => u.field)).not.toContain('lookup.consistencyDelay');
    expect(c.providerKey.name.value).toBe('properties.my_op_id');
  });

  // Whether HubSpot compares unique values case-insensitively is not documented: two ids that differ only in case
  // must not be two keys that do, or one record could be taken for the other's (an upsert overwriting it, a lost effect).
  it('caller ids that differ only in case get keys that differ in more than case', () => {
    const a = createHubSpotAdapter({ accessToken: 'test-token-not-a-secret', baseUrl: 'http://127.0.0.1:9' });
    const key = (id: string) => String(a.deriveProviderKey('tickets.create', asBusinessOperationId(id)));
    const [upper, lower] = [key('Order-1'), key('order-1')];
    expect(upper.toLowerCase()).not.toBe(lower.toLowerCase());
    expect(lower).toBe('order-1');
    // objects.upsert sends no key; its record value is a lower-case digest of the ref (upsert-correction.test.ts).
    expect(recordKey({ objectType: '2-1', ref: 'Order-1' })).not.toBe(recordKey({ objectType: '2-1', ref: 'order-1' }));
  });

  it('the key rule the adapter applies is within what the cards say it sends', () => {
    expect(KEY_RULE.maxLength).toBe(100);
    const note = hubSpotCards['tickets.create'].unverified.find((u) => u.field === 'providerKey.maxLength');
    expect(note?.condition).toMatch(/within 100 characters/);
  });
});
