// Negative control: what the adapter prevents. The same send through the plain resend SDK without an
// Idempotency-Key, sent again after a lost answer (the SDK says statusCode null, which reads like a failure),
// is a second email. Through the adapter the same lost answer is one email. In the explorer, the same card
// with the key and the lookup removed makes the runner hand off: it never turns the lost answer into that
// second email (the explorer's provider follows the card, so the duplicate itself is shown at the sandbox).

import { asBusinessOperationId } from '@retrysafe/contract';
import { startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { executeContext } from '@retrysafe/testkit/conformance';
import { explore } from '@retrysafe/testkit/explorer';
import { Resend } from 'resend';
import { describe, expect, it } from 'vitest';
import { createResendAdapter, resendCards } from '../src/index.js';
import { startResendSandbox } from '../src/sandbox/index.js';
import { API_KEY, emailParams } from './helpers.js';

async function lostFirstAnswer() {
  const sandbox = closeAfterTest(await startResendSandbox());
  const proxy = closeAfterTest(await startFaultProxy({ target: sandbox.url, faults: ['drop-response'] }));
  return { sandbox, proxy };
}

const email = {
  from: 'Acme <billing@acme.test>',
  to: ['customer@example.test'],
  subject: 'Invoice A-17',
  text: 'Please find your invoice attached.',
};

describe('negative control: a lost answer without the key', () => {
  it('plain SDK, no key, sent again after the lost answer ⇒ 2 emails for one intent', async () => {
    const { sandbox, proxy } = await lostFirstAnswer();
    const client = new Resend(API_KEY, { baseUrl: proxy.url });
    const first = await client.emails.send(email);
    expect(first.error?.statusCode).toBeNull(); // the SDK cannot tell "never arrived" from "sent, answer lost"
    const second = await client.emails.send(email);
    expect(second.error).toBeNull();
    expect(sandbox.count('emails.send')).toBe(2);
  });

  it('the adapter, the same lost answer ⇒ 1 email: the re-send carries the same key and Resend answers from its store', async () => {
    const { sandbox, proxy } = await lostFirstAnswer();
    const adapter = createResendAdapter({ apiKey: API_KEY, baseUrl: proxy.url, timeoutMs: 2000 });
    const ctx = executeContext(adapter, 'emails.send', asBusinessOperationId('invoice-ready/A-17'));
    expect((await adapter.doExecute('emails.send', emailParams('invoice-ready/A-17'), ctx)).kind).toBe('unknown');
    expect((await adapter.doExecute('emails.send', emailParams('invoice-ready/A-17'), ctx)).kind).toBe('succeeded');
    expect(sandbox.count('emails.send')).toBe(1);
    expect(sandbox.requests().map((r) => r.result)).toEqual(['executed', 'replayed']);
  });
});

describe('negative control in the explorer', () => {
  const card = resendCards['emails.send'];
  // The same operation with the key and the lookup removed: what a plain SDK call is.
  const control = {
    ...card,
    providerKey: {
      ...card.providerKey,
      travels: { value: 'none', source: 'control' },
      name: { value: null, source: 'control' },
      maxLength: { value: null, source: 'control' },
      charset: { value: null, source: 'control' },
    },
    storedResult: {
      semantics: { value: 'none', source: 'control' },
      includesErrors: { value: false, source: 'control' },
    },
    retention: { minimum: { value: null, source: 'control' } },
    concurrency: { value: 'duplicates', source: 'control' },
    lookup: { ...card.lookup, method: { value: 'none', source: 'control' } },
  } as unknown as typeof card;
  it('the resend card: at most one email in every explored interleaving', () => {
    const r = explore({ card, workers: 1, maxCrashes: 0, maxNetworkFaults: 2 });
    expect(r.violation).toBeNull();
  });

  it('the control card (no key, no lookup): the runner hands off instead of sending twice', () => {
    const r = explore({ card: control, workers: 1, maxCrashes: 0, maxNetworkFaults: 1 });
    expect(r.violation).toBeNull();
    expect(r.handsOff).toBe(true);
  });
});
