// Unit checks of the classification functions over the whole status range and the edge inputs.
import { parseRetryAfter } from '@retrysafe/contract/provider';
import { describe, expect, it } from 'vitest';
import { outcomeFromErrorAnswer } from './msgraph-errors.js';

const answer = (status: number, headers: Record<string, string> = {}, body: unknown = null) => ({
  status,
  headers: new Headers(headers),
  body,
});

describe('outcomeFromErrorAnswer over every non-2xx status', () => {
  const statuses = [
    ...Array.from({ length: 100 }, (_, i) => 300 + i),
    ...Array.from({ length: 200 }, (_, i) => 400 + i),
  ];

  it.each([false, true])(
    'no 5xx is ever not-applied or rejected; only 429 is not-applied (conflictMayMeanApplied=%s)',
    (conflictMayMeanApplied) => {
      for (const s of statuses) {
        const o = outcomeFromErrorAnswer(answer(s), { conflictMayMeanApplied });
        expect(o.status).toBe(s);
        if (s >= 500) expect(o.kind, `HTTP ${s}`).toBe(s === 507 ? 'rejected' : 'unknown');
        if (o.kind === 'not-applied') expect(s).toBe(429);
        expect(['succeeded', 'replayed', 'in-progress']).not.toContain(o.kind);
      }
    },
  );

  it('keeps the Graph code and the request id (header first, else innerError)', () => {
    const body = {
      error: { code: 'ErrorAccessDenied', message: 'Access is denied.', innerError: { 'request-id': 'from-body' } },
    };
    expect(outcomeFromErrorAnswer(answer(403, {}, body))).toMatchObject({
      kind: 'rejected',
      reason: 'permission',
      code: 'ErrorAccessDenied',
      requestId: 'from-body',
    });
    expect(outcomeFromErrorAnswer(answer(403, { 'request-id': 'from-header' }, body))).toMatchObject({
      requestId: 'from-header',
    });
  });
});

describe('parseRetryAfter', () => {
  it('reads delta-seconds and HTTP dates; ignores garbage', () => {
    expect(parseRetryAfter('7', undefined)).toBe(7_000);
    expect(parseRetryAfter('0', undefined)).toBe(0);
    expect(
      parseRetryAfter('Wed, 21 Oct 2026 07:28:30 GMT', undefined, Date.parse('Wed, 21 Oct 2026 07:28:00 GMT')),
    ).toBe(30_000);
    expect(
      parseRetryAfter('Wed, 21 Oct 2026 07:28:00 GMT', undefined, Date.parse('Wed, 21 Oct 2026 07:29:00 GMT')),
    ).toBe(0);
    expect(parseRetryAfter('soon', undefined)).toBeUndefined();
    expect(parseRetryAfter(null, undefined)).toBeUndefined();
  });
});
