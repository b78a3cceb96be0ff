import { type RetrySafetyCard, validateCard } from '@retrysafe/contract';
import { describe, expect, it } from 'vitest';
import { documentsUpdateCard, exportsCreateCard, instancesRunCard, ordersCreateCard } from './http-cards.js';
import { classifyResponse } from './http-errors.js';
import { asyncExportsCreate, clientTokenInstancesRun, ietfOrdersCreate } from './http-patterns.js';

const v = <T>(f: { value: T | 'unknown' }) => f.value;
const res = (status: number, data: unknown) => ({ status, data, headers: {}, url: 'http://127.0.0.1:1/' });

describe('reference cards match shared/providers.md, fact for fact', () => {
  const cards: RetrySafetyCard[] = [
    ordersCreateCard('p'),
    exportsCreateCard('p'),
    documentsUpdateCard('p'),
    instancesRunCard('p'),
  ];

  it('every card validates, cites a source for every fact, lists every unknown in unverified, and makes the runner the only retrying layer', () => {
    for (const card of cards) {
      const r = validateCard(card);
      expect(r.problems).toEqual([]);
      expect(card.retryLayer).toMatchObject({ layer: 'runner', sdkRetries: 'disabled' });
      for (const path of r.unknowns) expect(card.unverified.map((u) => u.field)).toContain(path);
    }
  });

  it('IETF draft: Idempotency-Key header (sf-string); 400 missing key; 422 same key other payload; 409 in flight; stored result replayed incl. errors; published expiry', () => {
    const c = ordersCreateCard('p');
    expect([v(c.providerKey.travels), v(c.providerKey.name)]).toEqual(['header', 'Idempotency-Key']);
    expect(c.providerKey.charset.source).toMatch(/RFC 8941/);
    expect(v(c.parameterMatching)).toBe('mismatch-error');
    expect(v(c.concurrency)).toBe('rejects-in-progress');
    expect([v(c.storedResult.semantics), v(c.storedResult.includesErrors)]).toEqual(['replays', true]);
    expect(v(c.retention.minimum)).toBe('24h'); // the sandbox's published expiry; the draft only requires one to be published
    expect(v(c.providerKey.maxLength)).toBe('unknown'); // the draft sets no maximum
    const op = ietfOrdersCreate('p');
    const P = 'https://retrysafe.invalid/problems/';
    expect(classifyResponse(op, res(400, { type: `${P}idempotency-key-missing` }), 1)).toMatchObject({
      kind: 'rejected',
      reason: 'configuration',
    });
    expect(classifyResponse(op, res(422, { type: `${P}idempotency-key-reused` }), 1)).toMatchObject({
      kind: 'rejected',
      reason: 'conflict',
    });
    expect(classifyResponse(op, res(409, { type: `${P}request-in-flight` }), 1)).toMatchObject({ kind: 'in-progress' });
  });

  it('Async Request-Reply: validate first (400), 202 + Location + Retry-After, status URL lookup, errors persisted, duplicate key ⇒ existing status resource', () => {
    const c = exportsCreateCard('p');
    expect(v(c.sideEffect.kind)).toBe('async-job');
    expect(v(c.lookup.method)).toBe('status-url');
    expect([v(c.storedResult.semantics), v(c.storedResult.includesErrors)]).toEqual(['replays', true]);
    expect(c.nonRetryableErrors.value).toContain('400 InvalidRequest (validation, before acceptance)');
    const op = asyncExportsCreate('p');
    expect(
      classifyResponse(op, { ...res(202, {}), headers: { location: '/exports/status/1', 'retry-after': '5' } }, 1),
    ).toMatchObject({ kind: 'in-progress', retryAfterMs: 5000 });
  });

  it('GCS: conditionally idempotent (preconditions), retry 408/429/5xx/timeouts/disconnects only with a precondition', () => {
    const c = documentsUpdateCard('p');
    expect(v(c.providerKey.travels)).toBe('none');
    expect(v(c.sideEffect.idempotentByNature)).toBe(false);
    expect(v(c.storedResult.semantics)).toBe('rejects-duplicate');
    const retryable = (c.retryableErrors.value as string[]).join(' ');
    for (const s of ['408', '429', '5xx', 'timeouts', 'disconnects']) expect(retryable).toContain(s);
    expect(c.businessOperationId.intentFields).toContain('etag');
  });

  it('AWS: ClientToken ≤ 64 ASCII, same token + changed params ⇒ IdempotentParameterMismatch, ≥ 24 h, identical first response', () => {
    const c = instancesRunCard('p');
    expect([v(c.providerKey.travels), v(c.providerKey.name), v(c.providerKey.maxLength)]).toEqual([
      'body',
      'ClientToken',
      64,
    ]);
    expect(v(c.parameterMatching)).toBe('mismatch-error');
    expect(v(c.retention.minimum)).toBe('24h');
    expect(v(c.storedResult.semantics)).toBe('replays');
    expect(
      classifyResponse(clientTokenInstancesRun('p'), res(400, { __type: 'IdempotentParameterMismatch' }), 1),
    ).toMatchObject({ kind: 'rejected', reason: 'conflict' });
  });
});
