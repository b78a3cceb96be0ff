// The receipts' timestamps (issue 23): iso() writes what Date#toISOString writes, for every time.
import { describe, expect, it } from 'vitest';
import { iso } from '../src/runner/context.js';

const engine = (t: number) => new Date(t).toISOString();

describe('iso', () => {
  it('is Date#toISOString across days, hours and milliseconds (its one-day cache switching back and forth)', () => {
    const day = 86_400_000;
    const samples = [0, 1, 9, 10, 99, 100, 999, 1000, 59_999, 60_000, 3_599_999, 3_600_000, day - 1, day, day + 1, 951_782_400_000 /* 2000-02-29 */, 1_780_000_000_000, 253_402_300_799_999];
    let state = 7;
    for (let i = 0; i < 5000; i++) {
      state = (state * 1103515245 + 12345) % 2147483648;
      // Alternating far and near times, so the cached day changes often and also stays.
      samples.push(i % 2 === 0 ? Math.floor((state / 2147483648) * 253_402_300_799_999) : 1_780_000_000_000 + (state % (3 * day)));
    }
    for (const t of samples) expect(iso(t)).toBe(engine(t));
  });

  it('leaves what is not a whole epoch-ms of years 1970-9999 to the engine (same text, same RangeError)', () => {
    for (const t of [-1, -86_400_001, -62_198_755_200_000, 253_402_300_800_000, 8.64e15, -8.64e15, 1.5, 1_780_000_000_000.7, -0.5]) expect(iso(t)).toBe(engine(t));
    for (const t of [Number.NaN, Number.POSITIVE_INFINITY, 8.64e15 + 1]) expect(() => iso(t)).toThrow(RangeError);
  });

  it('the same time twice in a row (an attempt that starts and ends in one millisecond) gives the same text, and the next time its own', () => {
    const times = [1_780_000_000_000, 1_780_000_000_000, 1_780_000_000_001, 1_780_000_000_000, 0, 0, 253_402_300_799_999, 253_402_300_799_999, 1_780_000_000_001];
    for (const t of times) expect(iso(t)).toBe(engine(t));
    expect(iso(1_780_000_000_000.5)).toBe(engine(1_780_000_000_000.5));
    expect(iso(1_780_000_000_000)).toBe(engine(1_780_000_000_000));
  });

  it('writes every hour, minute and second of a day as the engine does (the two-digit table)', () => {
    const day = 1_780_012_800_000; // 2026-05-29T00:00:00.000Z
    for (let h = 0; h < 24; h++) for (let m = 0; m < 60; m++) for (const s of [0, 9, 10, 59]) {
      const t = day + ((h * 60 + m) * 60 + s) * 1000 + ((h + m + s) % 1000);
      expect(iso(t)).toBe(engine(t));
    }
    for (let s = 0; s < 60; s++) expect(iso(day + s * 1000 + 7)).toBe(engine(day + s * 1000 + 7));
  });
});
