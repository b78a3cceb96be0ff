// The detectors' one-pattern gate (issue 23): it may let a text through that no detector touches, but
// it never stops one that a detector's own hint would have let in (so redaction is unchanged).
import { describe, expect, it } from 'vitest';
import { createRedactor, DETECTORS, mayDetect } from '../src/redact.js';

describe('redaction gate', () => {
  it('passes every text some detector hint passes (any case, look-alike characters, every part)', () => {
    const pieces = [
      '',
      'a',
      'x',
      ' ',
      '1',
      '123',
      '4242 4242 4242 4242',
      '1234567890123',
      ':',
      '=',
      '@',
      '://',
      'PRIVATE KEY',
      'private key',
      'Bearer',
      'BEARER',
      'bEaReR',
      'basic',
      'BASİC',
      'Basıc',
      'bas\u0130c',
      'pat-',
      'PAT-',
      '\u212Aey',
      'AKIA',
      'akia',
      'ASIA',
      'AGPA',
      'AIDA',
      'AROA',
      'ANPA',
      'AIza',
      'eyJ',
      'EYJ',
      'gh',
      'GH',
      'xox',
      'sk-',
      'SK-',
      '_test_',
      '_live_',
      'whsec_',
      'WHSEC_',
      'é',
      '😀',
      'the provider performed it',
      'orderRef',
      'o-1',
      'ord_o-1',
    ];
    let state = 99;
    const rnd = (n: number) => ((state = (state * 1103515245 + 12345) % 2147483648), state % n);
    const texts: string[] = [...pieces];
    for (let i = 0; i < 20_000; i++) {
      let t = '';
      for (let j = rnd(4); j >= 0; j--) t += pieces[rnd(pieces.length)];
      texts.push(t);
    }
    let stopped = 0;
    for (const t of texts) {
      const anyHint = DETECTORS.some((d) => !d.hint || d.hint(t));
      if (anyHint) expect(mayDetect(t), t).toBe(true);
      if (!mayDetect(t)) stopped++;
    }
    // And it does stop the plain texts of a clean operation.
    for (const t of ['the provider performed it', 'orderRef', 'amount', 'o-1', 'ord_o-1'])
      expect(mayDetect(t)).toBe(false);
    expect(stopped).toBeGreaterThan(100);
  });

  it('leaves redaction as it was', () => {
    const r = createRedactor();
    expect(r.text('Authorization: Bearer abc.def-ghi')).toBe('Authorization: [redacted]');
    expect(r.text('card 4242 4242 4242 4242 ok')).toBe('card [redacted] ok');
    expect(r.text('mail me at someone@example.com')).toBe('mail me at [redacted]');
    expect(r.text('the provider performed it')).toBe('the provider performed it');
  });
});
