import { validateCard } from '@retrysafe/contract';
import { describe, expect, it } from 'vitest';
import { BATCH_SEND_KEY_RULE, EMAILS_SEND_KEY_RULE, RESEND_SOURCES, resendCards } from './resend-cards.js';

// Pins the Resend facts the runner decides on, each against the page it cites.
describe('resend cards', () => {
  for (const card of Object.values(resendCards)) {
    it(`${card.operation}: valid, every unknown listed, the documented key facts`, () => {
      expect(validateCard(card).problems).toEqual([]); // includes every unknown missing from unverified[]
      expect(card.providerKey.name.value).toBe('Idempotency-Key');
      expect(card.providerKey.maxLength).toMatchObject({ value: 256 });
      expect(card.providerKey.maxLength.source).toContain(RESEND_SOURCES.idempotency);
      expect(card.retention.minimum).toMatchObject({ value: '24h' });
      expect(card.parameterMatching.value).toBe('mismatch-error');
      expect(card.concurrency.value).toBe('rejects-in-progress');
      // No lookup: Resend reads an email only by its id. A same-key "lookup" past retention would send again.
      expect(card.lookup.method.value).toBe('none');
    });
  }

  it("keeps the two endpoints' keys apart and within 256 characters", () => {
    expect(EMAILS_SEND_KEY_RULE.prefix).not.toBe(BATCH_SEND_KEY_RULE.prefix);
    expect(EMAILS_SEND_KEY_RULE.maxLength).toBe(256);
    expect(BATCH_SEND_KEY_RULE.maxLength).toBe(256);
  });
});
