// The cards against what shared/providers.md § Microsoft Graph states, fact by fact, and the SDK
// facts against the installed @microsoft/microsoft-graph-client source.

import { RetryHandler, RetryHandlerOptions } from '@microsoft/microsoft-graph-client';
import { validateCard } from '@retrysafe/contract';
import { cardRows } from '@retrysafe/contract/render';
import { describe, expect, it } from 'vitest';
import { createMsGraphAdapter } from './msgraph-adapter.js';
import { eventsCreateCard, mailSendCard, msGraphCards, todoTasksCreateCard } from './msgraph-cards.js';
import { msGraphOperations } from './msgraph-operations.js';

describe('every card', () => {
  it.each(Object.entries(msGraphCards))(
    '%s validates, lists every unknown in unverified, and matches its operation',
    (name, card) => {
      const v = validateCard(card);
      expect(v.problems).toEqual([]);
      const listed = new Set<string>(card.unverified.map((u) => u.field));
      for (const path of v.unknowns) expect(listed.has(path)).toBe(true);
      expect(card.operation).toBe(`msgraph.${name}`);
      expect(msGraphOperations[name]?.card).toBe(card);
      const adapter = createMsGraphAdapter({ accessToken: 'token' });
      expect(adapter.operations[name]?.intentFields).toEqual(card.businessOperationId.intentFields);
      expect(Object.isFrozen(card)).toBe(true);
    },
  );

  it.each(Object.entries(msGraphCards))(
    '%s: the runner is the one retrying layer; 429 retryable (Retry-After honoured); 503/504 never resent',
    (_name, card) => {
      expect(card.retryLayer).toMatchObject({ layer: 'runner', sdkRetries: 'disabled' });
      expect(card.retryLayer.how).toMatch(/no RetryHandler/);
      // providers.md: "Throttling: 429 + Retry-After (honour it …)"
      const retryable = card.retryableErrors.value as readonly string[];
      const nonRetryable = card.nonRetryableErrors.value as readonly string[];
      expect(retryable.some((e) => e.startsWith('429'))).toBe(true);
      // providers.md: "Graph's 503/504 on sendMail have delivered mail" ⇒ not retryable, unknown
      expect(retryable.join(' ')).not.toMatch(/503|504/);
      expect(nonRetryable.join(' ')).toMatch(/503\/504.*unknown/);
      expect(card.sideEffect.idempotentByNature.value).toBe(false);
    },
  );
});

describe('msgraph.mail.send vs providers.md', () => {
  it('"no idempotency key": no key travels, nothing stored, concurrent sends duplicate', () => {
    expect(mailSendCard.providerKey.travels.value).toBe('none');
    expect(mailSendCard.providerKey.name.value).toBeNull();
    expect(mailSendCard.storedResult.semantics.value).toBe('none');
    expect(mailSendCard.retention.minimum.value).toBeNull();
    expect(mailSendCard.concurrency.value).toBe('duplicates');
    expect(mailSendCard.sideEffect.kind.value).toBe('send');
  });
  it('"tag the message with a singleValueExtendedProperties entry … GET /me/mailFolders/sentitems/messages?$filter=…": lookup is a search', () => {
    expect(mailSendCard.lookup.method.value).toBe('search');
    expect(mailSendCard.reconciler).toContain(
      'mailFolders/sentitems/messages?$filter=singleValueExtendedProperties/Any',
    );
  });
  it('"Delay before it appears: unknown" ⇒ consistencyDelay unknown, shown as unknown and listed as unverified', () => {
    expect(mailSendCard.lookup.consistencyDelay.value).toBe('unknown');
    const row = cardRows(mailSendCard).find((r) => r.path === 'lookup.consistencyDelay');
    expect(row?.unknown).toBe(true);
    expect(mailSendCard.unverified.map((u) => u.field)).toContain('lookup.consistencyDelay');
  });
  it('handoff after the bounded lookup window, never a blind resend', () => {
    expect(mailSendCard.handoff.condition).toMatch(/lookup window/);
    expect(mailSendCard.handoff.condition).toMatch(/never resends blindly/);
  });
});

describe('msgraph.events.create vs providers.md', () => {
  it('transactionId travels in the body', () => {
    expect(eventsCreateCard.providerKey.travels.value).toBe('body');
    expect(eventsCreateCard.providerKey.name.value).toBe('transactionId');
  });
  it('"what a duplicate returns and how long it is remembered: unknown"', () => {
    expect(eventsCreateCard.storedResult.semantics.value).toBe('unknown');
    expect(eventsCreateCard.retention.minimum.value).toBe('unknown');
    for (const f of [
      'storedResult.semantics',
      'retention.minimum',
      'parameterMatching',
      'concurrency',
      'providerKey.scope',
    ]) {
      expect(eventsCreateCard.unverified.map((u) => u.field)).toContain(f);
    }
  });
});

describe('msgraph.todo.tasks.create', () => {
  it('no key, nothing stored, duplicates on a resend; the lookup filter itself is listed as unverified', () => {
    expect(todoTasksCreateCard.providerKey.travels.value).toBe('none');
    expect(todoTasksCreateCard.storedResult.semantics.value).toBe('none');
    expect(todoTasksCreateCard.concurrency.value).toBe('duplicates');
    expect(todoTasksCreateCard.unverified.map((u) => u.field)).toContain('lookup.method');
  });
});

describe('SDK facts in providers.md, checked against the installed SDK', () => {
  it('"RetryHandler (default on): 3 retries, 3 s delay, retries 429/503/504"', () => {
    expect((RetryHandler as unknown as { RETRY_STATUS_CODES: number[] }).RETRY_STATUS_CODES).toEqual([429, 503, 504]);
    const o = new RetryHandlerOptions();
    expect(o.maxRetries).toBe(3);
    expect(o.delay).toBe(3);
  });
});
