import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fact, type RetrySafetyCard } from '@retrysafe/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpAdapter, type HttpOperationSpec, ietfOrdersCreate } from '../src/index.js';
import { lookupOn } from './helpers.js';

// A lookup that re-sends with the same key asks the card rule resendSafety (contract card-rules.ts), the rule
// the runner uses, instead of an age check of its own (issue 17 item 3).
const H = 3_600_000;
const params = { customer: 'c1', sku: 's1', quantity: 1, orderRef: 'r1' };
let server: http.Server;
let url = '';
let requests = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'ord_1', reference: 'r1' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

function adapterWith(edit: (c: RetrySafetyCard) => RetrySafetyCard = (c) => c) {
  const spec = ietfOrdersCreate('acme-orders');
  const card = edit({ ...spec.card, lookup: { ...spec.card.lookup, method: fact('resend-same-key', 'test') } });
  const op: HttpOperationSpec = { ...spec, card, lookup: { method: 'resend-same-key' } };
  return createHttpAdapter({
    provider: 'acme-orders',
    baseUrl: url,
    timeoutMs: 2000,
    operations: { 'orders.create': op },
  });
}

async function lookupCounting(a: ReturnType<typeof adapterWith>, over: Parameters<typeof lookupOn>[3]) {
  const before = requests;
  const r = await lookupOn(a, 'orders.create', params, over);
  return { r, sent: requests - before };
}

describe('http resend-same-key lookup: the card rule decides whether the key may be relied on', () => {
  it('inside the retention (no runner judgement): re-sends once and reports what it found', async () => {
    const now = Date.now();
    const { r, sent } = await lookupCounting(adapterWith(), { firstDispatchedAt: now - H, now });
    expect(sent).toBe(1);
    expect(r).toMatchObject({ kind: 'found', outcome: { kind: 'succeeded' } });
  });

  it("past 24 h − margin − late allowance (card margin 1 min, late-apply unknown = one more): nothing sent, the rule's reason", async () => {
    const now = Date.now();
    const { r, sent } = await lookupCounting(adapterWith(), { firstDispatchedAt: now - 24 * H + 90_000, now });
    expect(sent).toBe(0);
    expect(r.kind).toBe('cannot-tell');
    expect(r.kind === 'cannot-tell' && r.reason).toMatch(/past the provider's 24h retention/);
  });

  it('a card whose provider processes concurrent duplicates: never re-sent, even with a fresh key (the old check read only semantics and retention)', async () => {
    const now = Date.now();
    const { r, sent } = await lookupCounting(
      adapterWith((c) => ({ ...c, concurrency: fact('duplicates', 'test') })),
      { firstDispatchedAt: now - 1000, now },
    );
    expect(sent).toBe(0);
    expect(r.kind === 'cannot-tell' && r.reason).toMatch(/concurrency = duplicates/);
  });

  it("the runner's judgement (keyReusable, with the policy's margin) wins either way", async () => {
    const now = Date.now();
    const no = await lookupCounting(adapterWith(), { firstDispatchedAt: now - H, now, keyReusable: false });
    expect(no.sent).toBe(0);
    expect(no.r.kind === 'cannot-tell' && no.r.reason).toMatch(/too old to rely on/);
    // A policy margin of 0 keeps a key the card's 1 min margin would drop.
    const yes = await lookupCounting(adapterWith(), {
      firstDispatchedAt: now - 24 * H + 90_000,
      now,
      keyReusable: true,
    });
    expect(yes.sent).toBe(1);
  });
});
