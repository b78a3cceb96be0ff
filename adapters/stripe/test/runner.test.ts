import { ConflictError, fingerprint, pickIntent } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { startFaultProxy } from '@retrysafe/testkit';
import { executeContext, operationIdFor } from '@retrysafe/testkit/conformance';
import { afterEach, describe, expect, it } from 'vitest';
import { createStripeAdapter } from '../src/index.js';
import { startStripeSandbox } from '../src/sandbox/index.js';
import { API_KEY } from './helpers.js';

// The runner (@retrysafe/core) + the real SDK + the sandbox, on one virtual clock.
const MIN = 60_000;
const STRIPE_KEY_RETENTION_MS = 24 * 60 * MIN; // the card's retention.minimum (24h)
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

async function setup(sandboxOptions: Parameters<typeof startStripeSandbox>[0] = {}) {
  const clock = createVirtualClock(Date.UTC(2026, 10, 30));
  const sandbox = await startStripeSandbox({ now: clock.now, sleep: clock.sleep, ...sandboxOptions });
  closers.push(() => sandbox.close());
  const ledger = createMemoryLedger();
  return { clock, sandbox, ledger };
}

describe('lost response', () => {
  it('the response is dropped after Stripe committed: one object; the proxy saw exactly the attempts the runner recorded', async () => {
    const { clock, sandbox, ledger } = await setup();
    const proxy = await startFaultProxy({ target: sandbox.url, faults: ['drop-response'] });
    closers.push(() => proxy.close());
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: proxy.url, timeoutMs: 2000 });
    const runner = createRunner({ ledger, clock, random: () => 0.5 });
    const result = await runner.run(adapter, 'paymentIntents.create', {
      params: { customer: 'cus_fixture', amount: 900, currency: 'eur', orderRef: 'lost-1' },
    });
    expect(result.status).toBe('done');
    if (result.status !== 'done') return;
    expect(result.adopted).toBe(true);
    expect(sandbox.count('paymentIntents.create')).toBe(1);
    // one dispatch (response lost) + one same-key resend (replayed): exactly what the runner recorded
    expect(result.attempts).toBe(2);
    expect(proxy.requests).toHaveLength(2);
    expect(new Set(proxy.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    expect(sandbox.requests().map((r) => r.result)).toEqual(['executed', 'replayed']);
  });
});

describe('two workers without a shared ledger', () => {
  it("Stripe's key is the last line: the second gets 409 idempotency_key_in_use, polls with the same key and adopts the first one's object", async () => {
    const sandbox = await startStripeSandbox();
    closers.push(() => sandbox.close());
    const release = sandbox.hold(); // the first request stays inside endpoint execution until released
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 5000 });
    const params = { customer: 'cus_fixture', amount: 4200, currency: 'eur', orderRef: 'two-workers' };
    const policy = { baseMs: 50, capMs: 200, lookupWindowMs: 30_000 };
    const run = (owner: string) =>
      createRunner({ ledger: createMemoryLedger(), policy, owner }).run(adapter, 'paymentIntents.create', { params });
    const runs = Promise.all([run('machine-a'), run('machine-b')]);
    await sandbox.waitFor((log) => log.some((r) => r.result === 'in-progress'));
    release();
    const [a, b] = await runs;
    expect(a.status).toBe('done');
    expect(b.status).toBe('done');
    if (a.status !== 'done' || b.status !== 'done') throw new Error('both runs must be done');
    expect(a.providerRef).toBe(b.providerRef);
    expect(sandbox.count('paymentIntents.create')).toBe(1);
    const results = sandbox.requests().map((r) => r.result);
    expect(results.filter((r) => r === 'executed')).toHaveLength(1);
    expect(results).toContain('in-progress');
    expect(results.at(-1)).toBe('replayed');
  });
});

describe('the order names the payment', () => {
  it('the same order with a changed amount never becomes a second charge: nothing is sent, one object', async () => {
    const { clock, sandbox, ledger } = await setup();
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 2000 });
    const runner = createRunner({ ledger, clock });
    const first = await runner.run(adapter, 'paymentIntents.create', {
      params: { customer: 'cus_fixture', amount: 1500, currency: 'eur', orderRef: 'A-17' },
    });
    expect(first.status).toBe('done');
    const posts = sandbox.requestCount({ method: 'POST' });
    const second = await runner
      .run(adapter, 'paymentIntents.create', {
        params: { customer: 'cus_fixture', amount: 9900, currency: 'eur', orderRef: 'A-17' },
      })
      .catch((e: unknown) => e);
    // the runner refuses it (ConflictError) or hands back the existing payment; either way the same business operation
    expect(
      ConflictError.isInstance(second) ||
        (second as { businessOperationId?: string }).businessOperationId === first.businessOperationId,
    ).toBe(true);
    expect(sandbox.requestCount({ method: 'POST' })).toBe(posts);
    expect(sandbox.count('paymentIntents.create')).toBe(1);
  });
});

describe('text UTF-8 cannot carry', () => {
  it('an unpaired surrogate (an emoji cut in half) is refused before the claim, not sent as an unknown outcome', async () => {
    const { clock, sandbox, ledger } = await setup();
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 2000 });
    const run = createRunner({ ledger, clock }).run(adapter, 'customers.create', {
      params: { customerRef: 'c-1', metadata: { note: 'thanks \ud83d' } },
    });
    await expect(run).rejects.toMatchObject({
      name: 'InvalidParamsError',
      fields: [{ path: 'metadata.note', message: expect.stringMatching(/lone surrogate/) }],
    });
    expect([await ledger.list({}), sandbox.requestCount({ method: 'POST' })]).toEqual([[], 0]);
  });
});

// Stripe's API reference: confirm "defaults to false", collection_method "Defaults to charge_automatically".
describe("a param spelled as Stripe's documented default is the request without it", () => {
  it.each([
    [
      'paymentIntents.create',
      { customer: 'cus_fixture', amount: 1500, currency: 'eur', orderRef: 'A-18' },
      { confirm: false },
    ],
    [
      'invoices.create',
      { customer: 'cus_fixture', invoiceRef: 'INV-10' },
      { collectionMethod: 'charge_automatically' },
    ],
    // The example of each create page returns "metadata": {} for an object created without it.
    ['customers.create', { customerRef: 'C-20' }, { metadata: {} }],
    [
      'paymentIntents.create',
      { customer: 'cus_fixture', amount: 1500, currency: 'eur', orderRef: 'A-20' },
      { metadata: {} },
    ],
    ['invoices.create', { customer: 'cus_fixture', invoiceRef: 'INV-20' }, { metadata: {} }],
    ['refunds.create', { paymentIntent: 'pi_fixture', refundRef: 'RF-20', amount: 100 }, { metadata: {} }],
  ] as const)('%s: the repeat that spells it adopts the first object, no second POST', async (op, params, spelled) => {
    const { clock, sandbox, ledger } = await setup();
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 2000 });
    const runner = createRunner({ ledger, clock });
    const first = await runner.run(adapter, op, { params: params as never });
    const second = await runner.run(adapter, op, { params: { ...params, ...spelled } as never });
    expect(second).toMatchObject({ status: 'done', adopted: true, businessOperationId: first.businessOperationId });
    expect(sandbox.requestCount({ method: 'POST' })).toBe(1);
    expect(sandbox.count(op)).toBe(1);
  });
});

describe('receipts', () => {
  it("carry the key, status and Request-Id, but neither the API key nor the customer's email", async () => {
    const { clock, sandbox, ledger } = await setup();
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 2000 });
    const runner = createRunner({ ledger, clock, redact: { patterns: [/sk_(test|live)_\w+/g] } });
    const result = await runner.run(adapter, 'customers.create', {
      params: { customerRef: 'pii-1', email: 'jane.doe@example.test', name: 'Jane Doe' },
    });
    expect(result.status).toBe('done');
    const text = JSON.stringify(await ledger.receipts(result.businessOperationId));
    expect(text).toContain('rs-stripe.customers.create:');
    expect(text).toMatch(/"requestId":"req_/);
    expect(text).not.toContain('jane.doe@example.test');
    expect(text).not.toContain('Jane Doe');
    expect(text).not.toContain(API_KEY);
  });
});

describe('a stored 500', () => {
  it('the key replays the 500 and search finds nothing: the runner hands off instead of looping; 0 objects', async () => {
    const { clock, sandbox, ledger } = await setup();
    sandbox.failNext('server-error');
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 2000 });
    const runner = createRunner({ ledger, clock, random: () => 0.5 });
    const result = await runner.run(adapter, 'customers.create', { params: { customerRef: 'srv-1' } });
    expect(result.status).toBe('handed-off');
    expect(sandbox.count('customers.create')).toBe(0);
    const posts = sandbox.requests().filter((r) => r.method === 'POST');
    expect(posts[0]?.result).toBe('executed');
    expect(posts.slice(1).every((r) => r.result === 'replayed')).toBe(true);
    // Issue 15 item 8: a same-key re-send after a stored 500 only replays it, so the runner does not spend
    // its budget on them (the parent made 4 POSTs: 3 replays). The dispatch, then one lookup re-send that
    // learns the key replays the 5xx; from there lookups only search.
    expect(posts).toHaveLength(2);
    expect(
      sandbox
        .requests()
        .filter((r) => r.method === 'GET')
        .every((r) => r.path === '/v1/customers/search'),
    ).toBe(true);
    if (result.status === 'handed-off') {
      expect(result.packet.reason).toBe('lookup-window-exhausted');
      // What happened, in words a person reads: no raw arithmetic ("60021 ms into a 60000 ms window").
      expect(result.packet.explanation).toMatch(/Stripe stored a 5(00|xx) for this key.*lookup window/);
      expect(result.packet.explanation).not.toMatch(/\d{4,} ?ms|\bms into\b/);
      // And the packet says what a resume would actually do: replay the stored 500.
      const resume = result.packet.safeNextActions.find((a) => a.action === 'resume');
      expect(resume).toMatchObject({ safe: false });
      expect(resume?.why).toMatch(/stored 500/);
    }
  });
});

describe('key past retention (crash, then recovery a day later)', () => {
  it('never re-sends on the expired key: metadata search finds the object once the search lag has passed, adopts it; 0 duplicates', async () => {
    const { clock, sandbox, ledger } = await setup({ searchDelayMs: 50 * MIN });
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 2000 });
    const params = { customerRef: 'late-7', email: 'late7@example.test' };
    const id = operationIdFor(adapter, 'customers.create', params);
    const card = adapter.operations['customers.create']!.card;

    // Worker A claims and writes `dispatched` at t0; its first request never reached Stripe.
    const t0 = clock.now();
    const claim = await ledger.claim({
      businessOperationId: id,
      provider: 'stripe',
      operation: card.operation,
      intentFingerprint: fingerprint({ operation: card.operation, intent: pickIntent(params, ['customerRef']) }),
      paramsFingerprint: fingerprint(params),
      params,
      providerKey: adapter.deriveProviderKey('customers.create', id),
      owner: 'worker-A',
      leaseMs: 30_000,
      now: t0,
    });
    if (claim.kind !== 'claimed') throw new Error(`unexpected claim ${claim.kind}`);
    await ledger.markDispatched({ businessOperationId: id, fence: claim.record.fence }, t0);
    // 23 h 45 min later its same-key re-send lands and Stripe commits; A dies before recording it.
    clock.advance(STRIPE_KEY_RETENTION_MS - 15 * MIN);
    const landed = await adapter.doExecute(
      'customers.create',
      params,
      executeContext(adapter, 'customers.create', id, { attempt: 2 }),
    );
    expect(landed.kind).toBe('succeeded');

    // Worker B recovers 5 minutes after 24 h from the first dispatch; search is still 50 min behind.
    // (Stripe's copy of the key dates from the re-send, so it is younger: expire it anyway, so any
    // re-send relying on it would show as a second object.)
    clock.advance(20 * MIN);
    expect(sandbox.expireKeys()).toBe(1);
    const postsBefore = sandbox.requestCount({ method: 'POST' });
    const runner = createRunner({
      ledger,
      clock,
      random: () => 0.5,
      policy: { lookupWindowMs: 2 * 60 * MIN, maxElapsedMs: 3 * 60 * MIN },
    });
    const [report] = await runner.recover({ adapters: [adapter] });

    expect(report).toMatchObject({ businessOperationId: id, to: 'succeeded', action: 'adopted' });
    expect(sandbox.requestCount({ method: 'POST' })).toBe(postsBefore); // no re-send relying on the key
    expect(sandbox.count('customers.create')).toBe(1); // 0 duplicates
    const lookups = sandbox.requests().filter((r) => r.path === '/v1/customers/search');
    expect(lookups.length).toBeGreaterThan(1); // misses during the lag ("cannot tell"), then the hit
    expect(lookups.length).toBeLessThanOrEqual(60); // the adapter asks for ~1 min between searches, not the backoff cap
    expect(clock.now() - t0).toBeGreaterThanOrEqual(STRIPE_KEY_RETENTION_MS - 15 * MIN + 50 * MIN); // adopted only after the lag
    const record = await ledger.get(id);
    expect(record?.providerRef).toBe(landed.kind === 'succeeded' ? landed.providerRef : 'x');
  });
});

describe('a corrected request after a rejection', () => {
  const base = { customer: 'cus_fixture', amount: 1500, currency: 'eur', orderRef: 'PO-1001', confirm: true };

  it('a declined create+confirm left its PaymentIntent: the corrected request makes no second one, the packet names it', async () => {
    const { clock, sandbox, ledger } = await setup();
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 2000 });
    const runner = createRunner({ ledger, clock, random: () => 0.5 });
    const declined = await runner.run(adapter, 'paymentIntents.create', {
      params: { ...base, paymentMethod: 'pm_card_chargeDeclined' },
    });
    expect(declined.status).toBe('handed-off');
    if (declined.status !== 'handed-off') return;
    const [left] = sandbox.records('payment_intent').filter((r) => !r.fixture);
    expect(left?.object.status).toBe('requires_payment_method');
    expect(declined.packet.lastKnown.created).toBe(left?.id);
    expect(declined.packet.safeNextActions.map((a) => a.action)).not.toContain('resend-with');
    expect(declined.packet.safeNextActions.find((a) => a.action === 'resume')).toMatchObject({ safe: false });

    // an agent's correction (the same order, another card) and an operator's resend-with are both refused, naming the PaymentIntent
    const corrected = { ...base, orderRef: 'PO-1001 ', paymentMethod: 'pm_card_ok' };
    const again = await runner.run(adapter, 'paymentIntents.create', { params: corrected }).catch((e: unknown) => e);
    expect(ConflictError.isInstance(again)).toBe(true);
    expect((again as Error).message).toContain(left!.id);
    const resent = await runner
      .resolve(declined.businessOperationId, { action: 'resend-with', params: corrected }, { adapters: [adapter] })
      .catch((e: unknown) => e);
    expect(ConflictError.isInstance(resent)).toBe(true);
    expect(sandbox.count('paymentIntents.create')).toBe(1);
    expect(sandbox.requests().map((r) => r.status)).toEqual([402]);
  });

  it('a rejection that created nothing (400 before the idempotency layer): the corrected request is a new revision, one invoice', async () => {
    const { clock, sandbox, ledger } = await setup();
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 2000 });
    const runner = createRunner({ ledger, clock, random: () => 0.5 });
    const params = { customer: 'cus_fixture', invoiceRef: 'INV-9', collectionMethod: 'send_invoice' as const };
    const rejected = await runner.run(adapter, 'invoices.create', { params });
    expect(rejected.status).toBe('handed-off');
    const fixed = await runner.run(adapter, 'invoices.create', { params: { ...params, daysUntilDue: 30 } });
    expect(fixed.status).toBe('done');
    expect(fixed.businessOperationId).toBe(rejected.businessOperationId);
    expect(sandbox.count('invoices.create')).toBe(1);
    expect(sandbox.requests().map((r) => r.status)).toEqual([400, 200]);
  });
});

describe('a correction under the key a throttled call kept', () => {
  const RATE_LIMITED = { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests' } };

  it('had the 429 hidden a PaymentIntent, Stripe refuses the other amount under the key (400 idempotency_error): one object, no resume or resend-with offered', async () => {
    const { clock, sandbox, ledger } = await setup();
    // Worse than Stripe documents (its 429 comes before the key store): the request was executed behind the 429
    const proxy = await startFaultProxy({
      target: sandbox.url,
      faults: [{ kind: 'status', status: 429, forward: true, body: RATE_LIMITED }],
    });
    closers.push(() => proxy.close());
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: proxy.url, timeoutMs: 2000 });
    const runner = createRunner({ ledger, clock, random: () => 0.5, policy: { maxAttempts: 1 } });
    const params = { customer: 'cus_fixture', amount: 900, currency: 'eur', orderRef: 'kept-1' };
    const first = await runner.run(adapter, 'paymentIntents.create', { params });
    expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'retry-exhausted' } });

    const corrected = await runner.run(adapter, 'paymentIntents.create', { params: { ...params, amount: 950 } });
    expect(corrected).toMatchObject({
      status: 'handed-off',
      packet: { reason: 'rejected', lastKnown: { code: 'idempotency_error' } },
    });
    const actions = corrected.status === 'handed-off' ? corrected.packet.safeNextActions : [];
    expect(actions.find((a) => a.action === 'resume')).toMatchObject({ safe: false });
    expect(actions.map((a) => a.action)).not.toContain('resend-with');
    const again = await runner
      .run(adapter, 'paymentIntents.create', { params: { ...params, amount: 990 } })
      .catch((e: unknown) => e);
    expect(ConflictError.isInstance(again) && again.needsPerson).toBe(true);
    expect(sandbox.count('paymentIntents.create')).toBe(1);
    expect(new Set(proxy.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });
});

describe("the testkit's operationIdFor", () => {
  it("gives the id the runner derives, the card's normalisation included (a padded customerRef)", async () => {
    const { clock, sandbox, ledger } = await setup();
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 2000 });
    const params = { customerRef: '  pad-1 ', email: 'pad1@example.test' };
    const result = await createRunner({ ledger, clock }).run(adapter, 'customers.create', { params });
    expect(result.businessOperationId).toBe(operationIdFor(adapter, 'customers.create', params));
    expect(operationIdFor(adapter, 'customers.create', { ...params, customerRef: 'pad-1' })).toBe(
      result.businessOperationId,
    );
  });
});
