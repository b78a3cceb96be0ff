import { describe, expect, it } from 'vitest';
import { layoutHeadroom } from '../src/report.mjs';

describe('layoutHeadroom', () => {
  it('gives the share of an op the runner’s code may take to match Powertools and 0.7× raw, and the share it takes', () => {
    // layout 2,500 ops/s, Powertools 2,000: a runner at Powertools' rate spends 1 − 2,000/2,500 = 20 % in its code;
    // raw 3,000: 0.7 × 3,000 = 2,100, so 1 − 2,100/2,500 = 16 %.
    const line = layoutHeadroom({ opsPerSec: { layout: 2500, runner: 1800, powertools: 2000, raw: 3000 } });
    expect(line).toContain('runs at 1.25× Powertools: to match Powertools it may spend ≤ 20 % of an op');
    expect(line).toContain('layout runs at 0.833× raw: to match 0.7× raw it may spend ≤ 16 % of an op');
    expect(line).toContain('this runner spends 28 % (runner/layout 0.72×)');
  });

  it('says when no runner on the layout can match a bound', () => {
    // Today's PostgreSQL, 8 workers: layout 2,522, raw 3,618 — 0.7 × raw = 2,533 is above layout.
    const line = layoutHeadroom({ opsPerSec: { layout: 2522, runner: 1830, powertools: 2353, raw: 3618 } });
    expect(line).toContain('to match Powertools it may spend ≤ 7 %');
    expect(line).toContain('no runner on this layout can match 0.7× raw');
    const slow = layoutHeadroom({ opsPerSec: { layout: 1900, runner: 1500, powertools: 2000 } });
    expect(slow).toContain('no runner on this layout can match Powertools');
    expect(slow).not.toContain('raw');
  });
});
