import { describe, expect, it } from 'vitest';
import { canonicalJson, fingerprint } from './canonical.js';

describe('canonicalJson', () => {
  it('writes every string and key exactly as JSON.stringify of its NFC form (the plain-ASCII shortcut changes no byte)', () => {
    // Every code unit 0..0x7f alone and inside text, plus quotes, backslashes, controls, U+2028/9, lone
    // surrogates and combining marks: the shortcut must agree with the encoder everywhere.
    const samples = ['', 'order-1', 'a b', 'say "hi"', 'back\\slash', 'tab\tnew\nline', '\u007f', '\u2028\u2029', '\ud800', 'e\u0301', '\u00e9', '~!#$%&()*+,-./:;<=>?@[]^_`{|}'];
    for (let c = 0; c < 0x80; c++) samples.push(String.fromCharCode(c), `x${String.fromCharCode(c)}y`);
    for (const t of samples) {
      expect(canonicalJson(t)).toBe(JSON.stringify(t.normalize('NFC')));
      expect(canonicalJson({ [t]: 1 })).toBe(`{${JSON.stringify(t)}:1}`);
    }
  });
  it('sorts keys, drops whitespace and undefined members, folds -0', () => {
    expect(canonicalJson({ b: 1, a: [true, null, -0], c: undefined, d: { z: 'x', y: 1.5 } })).toBe('{"a":[true,null,0],"b":1,"d":{"y":1.5,"z":"x"}}');
  });
  it('normalises strings to NFC so the same text typed two ways is one value', () => {
    expect(canonicalJson('e\u0301')).toBe(canonicalJson('\u00e9'));
  });
  it('writes dates as ISO strings', () => {
    expect(canonicalJson({ at: new Date(Date.UTC(2026, 7, 5)) })).toBe('{"at":"2026-08-05T00:00:00.000Z"}');
  });
  it('fingerprints equal values equally', () => {
    expect(fingerprint({ a: 1, b: 2 })).toBe(fingerprint({ b: 2, a: 1 }));
    expect(fingerprint({ a: 1 })).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(() => canonicalJson([1, undefined])).toThrow(/undefined array item/);
    expect(() => canonicalJson({ n: 10n })).toThrow(/bigint/);
  });
});
