import { fact } from '@retrysafe/contract';
import { parseRetryAfter } from '@retrysafe/contract/provider';
import { describe, expect, it } from 'vitest';
import { classifyResponse } from './http-errors.js';
import { buildOperation } from './http-operations.js';
import { etagDocumentsUpdate, ietfOrdersCreate } from './http-patterns.js';

const ietf = ietfOrdersCreate('acme-orders');
const res = (status: number, data: unknown = {}, headers: Record<string, string> = {}) => ({
  status,
  data,
  headers,
  url: 'http://127.0.0.1:1/orders',
});

describe('classifyResponse: only what the operation declares', () => {
  it('429 declared not-applied keeps Retry-After (seconds and HTTP-date)', () => {
    expect(classifyResponse(ietf, res(429, {}, { 'retry-after': '3' }), 1)).toMatchObject({
      kind: 'not-applied',
      status: 429,
      retryAfterMs: 3000,
    });
    const now = Date.parse('2026-11-30T00:00:00Z');
    expect(parseRetryAfter('Mon, 30 Nov 2026 00:00:10 GMT', undefined, now)).toBe(10_000);
    expect(parseRetryAfter('soon', undefined, now)).toBeUndefined();
  });

  it('a status no rule names is unknown, never a licence to resend: 5xx ⇒ server-error, others ⇒ other', () => {
    expect(classifyResponse(ietf, res(503), 1)).toMatchObject({ kind: 'unknown', cause: 'server-error', status: 503 });
    expect(classifyResponse(ietf, res(418), 1)).toMatchObject({ kind: 'unknown', cause: 'other', status: 418 });
  });

  it('the first matching row wins and the body code selects between rows of one status', () => {
    expect(
      classifyResponse(ietf, res(409, { type: 'https://retrysafe.invalid/problems/request-in-flight' }), 1),
    ).toMatchObject({ kind: 'in-progress' });
    expect(
      classifyResponse(ietf, res(409, { type: 'https://retrysafe.invalid/problems/out-of-stock' }), 1),
    ).toMatchObject({ kind: 'rejected', reason: 'other' });
    expect(classifyResponse(ietf, res(409, {}), 1)).toMatchObject({ kind: 'unknown' });
  });

  it('a rejection names what it created only where the operation declares errors.createdPath, and the card must say a rejection can create', () => {
    const declined = res(402, { error: { code: 'payment_declined', order: { id: 'ord_7' } } });
    const rules = [
      ...ietf.errors.rules,
      { status: 402, outcome: 'rejected' as const, reason: 'card-declined' as const },
    ];
    expect(classifyResponse({ ...ietf, errors: { ...ietf.errors, rules } }, declined, 1)).not.toHaveProperty('created');
    const card = { ...ietf.card, sideEffect: { ...ietf.card.sideEffect, rejectionMayCreate: fact(true, 'test') } };
    const keeping = { ...ietf, card, errors: { ...ietf.errors, rules, createdPath: 'error.order.id' } };
    expect(classifyResponse(keeping, declined, 1)).toMatchObject({
      kind: 'rejected',
      reason: 'card-declined',
      created: 'ord_7',
    });
    expect(() => buildOperation('acme-orders', 'orders.create', { ...keeping, card: ietf.card })).toThrow(
      /rejectionMayCreate/,
    );
  });

  it('a card that says a rejection can leave an object needs errors.createdPath: without it no rejection could name one, and a correction would make a second', () => {
    const card = { ...ietf.card, sideEffect: { ...ietf.card.sideEffect, rejectionMayCreate: fact(true, 'test') } };
    expect(() => buildOperation('acme-orders', 'orders.create', { ...ietf, card })).toThrow(/createdPath/);
  });

  it('a card saying the provider refuses a reused key with other params (mismatch-error) needs a rule reading that refusal as a conflict: read as validation, a correction could take a key of its own after a 429 that had landed', () => {
    const withRules =
      (rules: typeof ietf.errors.rules, card = ietf.card) =>
      () =>
        buildOperation('acme-orders', 'orders.create', { ...ietf, card, errors: { ...ietf.errors, rules } });
    const reused = ietf.errors.rules.map((r) => (r.status === 422 ? { ...r, reason: 'validation' as const } : r));
    expect(withRules(reused)).toThrow(/parameterMatching mismatch-error.*conflict/);
    // An earlier rule catching every 422 leaves the conflict rule unreachable.
    const shadowed = [
      { status: 422, outcome: 'rejected' as const, reason: 'validation' as const },
      ...ietf.errors.rules,
    ];
    expect(withRules(shadowed)).toThrow(/parameterMatching mismatch-error.*conflict/);
    expect(withRules(ietf.errors.rules)).not.toThrow();
    expect(withRules(reused, { ...ietf.card, parameterMatching: fact('replay-anyway', 'test') })).not.toThrow();
  });

  it('messages carry status and code only, never the provider text (it may echo PII)', () => {
    const out = classifyResponse(
      ietf,
      res(400, {
        type: 'https://retrysafe.invalid/problems/invalid-order',
        detail: 'customer jane@example.test is invalid',
      }),
      1,
    );
    expect(JSON.stringify(out)).not.toContain('jane@example.test');
  });

  it('412 with a precondition: rejected on the first attempt, unknown on a re-send', () => {
    const etag = etagDocumentsUpdate('acme-docs');
    expect(classifyResponse(etag, res(412), 1)).toMatchObject({ kind: 'rejected', reason: 'conflict' });
    expect(classifyResponse(etag, res(412), 2)).toMatchObject({ kind: 'unknown', cause: 'other' });
  });

  it('a 202 is success unless the operation declares asyncReply', () => {
    expect(classifyResponse(ietf, res(202, { id: 'x' }, { location: '/s/1' }), 1)).toMatchObject({ kind: 'succeeded' });
    expect(
      classifyResponse({ ...ietf, asyncReply: true }, res(202, {}, { location: '/s/1', 'retry-after': '2' }), 1),
    ).toMatchObject({ kind: 'in-progress', statusRef: 'http://127.0.0.1:1/s/1', retryAfterMs: 2000 });
  });
});

describe('the card’s replay indicator (issue 16)', () => {
  const withIndicator = {
    ...ietf,
    card: {
      ...ietf.card,
      storedResult: {
        ...ietf.card.storedResult,
        replayIndicator: { value: { header: 'Idempotent-Replayed', value: 'true' }, source: 'test card' },
      },
    },
  };
  it('a 2xx carrying the declared header is a replay (reported adopted), any case of name and value', () => {
    expect(
      classifyResponse(withIndicator, res(201, { id: 'o_1' }, { 'idempotent-replayed': 'TRUE' }), 1),
    ).toMatchObject({ kind: 'replayed' });
    expect(
      classifyResponse(withIndicator, res(201, { id: 'o_1' }, { 'Idempotent-Replayed': 'true' }), 1),
    ).toMatchObject({ kind: 'replayed' });
    expect(
      classifyResponse(withIndicator, res(201, { id: 'o_1' }, { 'idempotent-replayed': 'false' }), 1),
    ).toMatchObject({ kind: 'succeeded' });
  });
  it('a card that declares none (the IETF draft defines no header) never guesses from headers', () => {
    expect(ietf.card.storedResult.replayIndicator?.value).toBeNull();
    expect(classifyResponse(ietf, res(201, { id: 'o_1' }, { 'idempotent-replayed': 'true' }), 1)).toMatchObject({
      kind: 'succeeded',
    });
  });
});

describe('field errors a problem body names (issue 16)', () => {
  it('RFC 9457 invalid-params and errors[].pointer become field paths; the provider text is never kept', () => {
    const out = classifyResponse(
      ietf,
      res(400, {
        type: 'https://retrysafe.invalid/problems/invalid-order',
        'invalid-params': [{ name: 'quantity', reason: 'must be ≥ 1 for jane@example.test' }],
      }),
      1,
    );
    expect(out).toMatchObject({
      kind: 'rejected',
      fields: [{ path: 'quantity', message: 'named by the provider as invalid' }],
    });
    expect(JSON.stringify(out)).not.toContain('jane@example.test');
    const ptr = classifyResponse(
      ietf,
      res(400, {
        type: 'https://retrysafe.invalid/problems/invalid-order',
        errors: [{ pointer: '#/items/0/sku', detail: 'x' }],
      }),
      1,
    );
    expect(ptr).toMatchObject({ kind: 'rejected', fields: [{ path: 'items[0].sku' }] });
    expect(
      classifyResponse(ietf, res(400, { type: 'https://retrysafe.invalid/problems/invalid-order' }), 1),
    ).not.toHaveProperty('fields');
  });
});
