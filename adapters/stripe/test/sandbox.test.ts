import { createVirtualClock } from '@retrysafe/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { paramsFingerprint, parseForm } from '../src/sandbox/form.js';
import {
  parseSearchQuery,
  SearchQueryError,
  type StripeSandbox,
  startStripeDrillSandbox,
  startStripeSandbox,
} from '../src/sandbox/index.js';

// The sandbox on its own, over plain HTTP (no SDK): the documented behaviour it emulates.

describe('form encoding', () => {
  it('nests brackets, turns digit keys into arrays and decodes', () => {
    expect(
      parseForm(
        'amount=100&metadata[order_ref]=A%2017&payment_method_types[0]=card&payment_method_types[1]=sepa_debit&x=a+b',
      ),
    ).toEqual({
      amount: '100',
      metadata: { order_ref: 'A 17' },
      payment_method_types: ['card', 'sepa_debit'],
      x: 'a b',
    });
  });
  it('the params fingerprint ignores pair order but not values', () => {
    expect(paramsFingerprint('a=1&b=2')).toBe(paramsFingerprint('b=2&a=1'));
    expect(paramsFingerprint('a=1&b=2')).not.toBe(paramsFingerprint('a=1&b=3'));
  });
});

describe('search query language', () => {
  it('exact-match clauses on fields and metadata, joined by AND or OR, with escaped quotes', () => {
    expect(parseSearchQuery(`metadata['retrysafe_operation_id']:'op:1' AND email:"a@b.test"`)).toEqual({
      join: 'AND',
      clauses: [
        { field: 'metadata.retrysafe_operation_id', value: 'op:1' },
        { field: 'email', value: 'a@b.test' },
      ],
    });
    expect(parseSearchQuery(`name:'O\\'Brien' OR name:'x'`).clauses[0]!.value).toBe("O'Brien");
  });
  it('rejects mixing AND with OR, other operators and unterminated strings', () => {
    expect(() => parseSearchQuery(`a:'1' AND b:'2' OR c:'3'`)).toThrow(SearchQueryError);
    expect(() => parseSearchQuery(`amount>100`)).toThrow(/only exact match/);
    expect(() => parseSearchQuery(`a:'1`)).toThrow(/unterminated/);
  });
});

describe('over HTTP', () => {
  let sandbox: StripeSandbox;
  let t = Date.UTC(2026, 10, 30);
  beforeEach(async () => {
    t = Date.UTC(2026, 10, 30);
    sandbox = await startStripeSandbox({ now: () => t, retentionMs: 60_000, searchDelayMs: 10_000 });
  });
  afterEach(async () => {
    await sandbox.close();
  });

  const post = (path: string, body: string, key?: string, auth = 'Bearer sk_test_1') =>
    fetch(`${sandbox.url}${path}`, {
      method: 'POST',
      headers: {
        authorization: auth,
        'content-type': 'application/x-www-form-urlencoded',
        ...(key ? { 'idempotency-key': key } : {}),
      },
      body,
    });
  const get = (path: string) =>
    fetch(`${sandbox.url}${path}`, { headers: { authorization: 'Bearer sk_test_1', 'idempotency-key': 'ignored' } });

  it('the same key on another endpoint is an idempotency_error; GET ignores keys', async () => {
    expect((await post('/v1/customers', 'name=a', 'k1')).status).toBe(200);
    const other = await post('/v1/invoices', 'customer=cus_fixture', 'k1');
    expect(other.status).toBe(400);
    expect(((await other.json()) as { error: { type: string } }).error.type).toBe('idempotency_error');
    expect((await get('/v1/customers/cus_fixture')).status).toBe(200);
    expect(sandbox.requests().at(-1)?.idempotencyKey).toBeNull();
  });

  it('unknown parameters and missing auth are answered before the idempotency layer: nothing stored', async () => {
    const unknown = await post('/v1/customers', 'nickname=x', 'k2');
    expect(unknown.status).toBe(400);
    expect((await post('/v1/customers', 'name=x', 'k3', 'Bearer nope')).status).toBe(401);
    expect(sandbox.keys()).toEqual([]);
    expect((await post('/v1/customers', 'name=x', 'k2')).status).toBe(200); // k2 was never stored
  });

  it('keys are pruned after retentionMs: the same request then creates a second object', async () => {
    await post('/v1/customers', 'name=a', 'k4');
    t += 59_999;
    expect((await post('/v1/customers', 'name=a', 'k4')).headers.get('idempotent-replayed')).toBe('true');
    t += 1;
    const again = await post('/v1/customers', 'name=a', 'k4');
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(sandbox.count('customer')).toBe(2);
  });

  it('search lags searchDelayMs behind; lists do not; count() leaves the fixtures out', async () => {
    await post('/v1/refunds', 'payment_intent=pi_fixture&amount=10&metadata[k]=v', 'r1');
    await post('/v1/customers', 'name=a&metadata[k]=v', 'c1');
    const q = `/v1/customers/search?query=${encodeURIComponent("metadata['k']:'v'")}`;
    expect(((await (await get(q)).json()) as { data: unknown[] }).data).toHaveLength(0);
    t += 10_000;
    expect(((await (await get(q)).json()) as { data: unknown[] }).data).toHaveLength(1);
    const list = (await (await get('/v1/refunds?payment_intent=pi_fixture')).json()) as {
      data: { metadata: Record<string, string> }[];
    };
    expect(list.data.map((r) => r.metadata.k)).toEqual(['v']);
    expect(sandbox.count()).toBe(2);
    expect(sandbox.count('refunds.create')).toBe(1);
    expect(sandbox.records('payment_intent').map((r) => r.fixture)).toEqual([true]);
    expect(() => sandbox.count('charges.create')).toThrow(TypeError);
  });

  it('refunds cannot exceed what was received, and that rejection is stored for the key', async () => {
    const tooMuch = await post('/v1/refunds', 'payment_intent=pi_fixture&amount=20000', 'r2');
    expect(tooMuch.status).toBe(400);
    const replay = await post('/v1/refunds', 'payment_intent=pi_fixture&amount=20000', 'r2');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(sandbox.count('refund')).toBe(0);
  });
});

describe("the drill's sandbox", () => {
  it('lags search a minute behind writes, as Stripe documents (docs.stripe.com/search#data-freshness)', async () => {
    const clock = createVirtualClock(Date.UTC(2026, 10, 30));
    const drillSandbox = await startStripeDrillSandbox({ clock });
    try {
      const headers = { authorization: 'Bearer sk_test_1' };
      await fetch(`${drillSandbox.url}/v1/customers`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded', 'idempotency-key': 'd1' },
        body: 'name=a&metadata[k]=v',
      });
      const q = `${drillSandbox.url}/v1/customers/search?query=${encodeURIComponent("metadata['k']:'v'")}`;
      const found = async () => ((await (await fetch(q, { headers })).json()) as { data: unknown[] }).data.length;
      clock.advance(59_999);
      expect(await found()).toBe(0);
      clock.advance(1);
      expect(await found()).toBe(1);
    } finally {
      await drillSandbox.close();
    }
  });
});
