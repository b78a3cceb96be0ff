import { describe, expect, it } from 'vitest';
import { layoutHeadroom } from '../src/report.mjs';

describe('layoutHeadroom', () => {
  it('gives the share of an op the runner’s code may take against Powertools, and the share it takes', () => {
    // layout 2,500 ops/s, Powertools 2,000: a runner at Powertools' rate spends 1 − 2,000/2,500 = 20 % in its code.
    const line = layoutHeadroom({ opsPerSec: { layout: 2500, runner: 1800, powertools: 2000 } });
    expect(line).toContain('runs at 1.25× Powertools');
    expect(line).toContain('may spend ≤ 20 % of an op');
    expect(line).toContain('this one spends 28 % (runner/layout 0.72×)');
  });

  it('says when no runner on the layout can reach Powertools', () => {
    const line = layoutHeadroom({ opsPerSec: { layout: 1900, runner: 1500, powertools: 2000 } });
    expect(line).toContain('runs at 0.95× Powertools');
    expect(line).toContain('no runner on this layout can reach Powertools');
    expect(line).not.toContain('may spend');
  });
});
