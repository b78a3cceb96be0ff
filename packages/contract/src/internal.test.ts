// Canonical JSON's string and number rules, as `@retrysafe/contract/internal` exports them to the
// contract's canonicalJson and to core's receipt writer: each is checked here against what it means.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { numberText, plainAscii, stringText } from './internal.js';

/** The meaning of "plain": every code unit printable ASCII, none a quote or a backslash. */
const plainByDefinition = (s: string) => [...s].every((ch) => ch.length === 1 && ch >= ' ' && ch <= '~' && ch !== '"' && ch !== '\\');

const plainUnit = fc.constantFrom(...Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i)).filter((c) => c !== '"' && c !== '\\'));
const anyUnit = fc.oneof(plainUnit, fc.constantFrom('"', '\\', '\u0000', '\u001f', '\u007f', '\u0080', '\u00e9', '\u0301', '\u212b', '\u2028', '\ud800', '\udc00', '\uffff'));
/** Mostly plain text with at most a few other units, of every length around the loop/pattern switch (24). */
const text = fc.oneof(
  fc.string({ unit: plainUnit, maxLength: 80, size: 'max' }),
  fc.tuple(fc.string({ unit: plainUnit, maxLength: 60, size: 'max' }), anyUnit, fc.string({ unit: plainUnit, maxLength: 60, size: 'max' })).map(([a, b, c]) => a + b + c),
  fc.string({ unit: anyUnit, maxLength: 80, size: 'max' }),
  fc.string({ unit: 'binary', maxLength: 80, size: 'max' }),
);

describe('plainAscii', () => {
  it('is true exactly for printable ASCII without a quote or backslash, at every length (loop below 24 units, pattern above)', () => {
    fc.assert(fc.property(text, (s) => plainAscii(s) === plainByDefinition(s)), { numRuns: 3000 });
  });
  it('sees one odd unit at any place of a long text', () => {
    const base = 'run_cdaf531f-7032-4bec-9fa1-5ef3b365594a';
    for (const odd of ['"', '\\', '\u0000', '\u001f', '\u007f', '\u0080', '\u00e9', '\ud800']) {
      for (let at = 0; at <= base.length; at++) expect(plainAscii(base.slice(0, at) + odd + base.slice(at))).toBe(false);
    }
    for (let n = 0; n <= 64; n++) expect(plainAscii(base.repeat(2).slice(0, n))).toBe(true);
  });
});

describe('stringText', () => {
  it('is JSON.stringify of the NFC form, for every string', () => {
    fc.assert(fc.property(text, (s) => stringText(s) === JSON.stringify(s.normalize('NFC'))), { numRuns: 3000 });
    for (const s of ['e\u0301', '\u212b', 'x'.repeat(30) + 'e\u0301', '\ud800'.repeat(13)]) expect(stringText(s)).toBe(JSON.stringify(s.normalize('NFC')));
  });
});

describe('numberText', () => {
  it("is JSON's text of a finite number (-0 as 0, 1e+21, shortest round trip) and undefined for NaN and ±Infinity", () => {
    fc.assert(
      fc.property(fc.oneof(fc.double(), fc.integer(), fc.constantFrom(-0, 1e21, 1e-7, 0.1 + 0.2, Number.MAX_VALUE, Number.MIN_VALUE)), (n) =>
        Number.isFinite(n) ? numberText(n) === JSON.stringify(n) : numberText(n) === undefined,
      ),
      { numRuns: 3000 },
    );
    expect(numberText(-0)).toBe('0');
    expect(numberText(1e21)).toBe('1e+21');
    expect(numberText(NaN)).toBeUndefined();
    expect(numberText(-Infinity)).toBeUndefined();
  });
});
