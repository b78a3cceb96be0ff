// Lines of `pnpm bench`'s report that are arithmetic on a scenario's ops/s (kept apart from bench.mjs, which runs on import, so they are tested).

const x = (r) => `${r.toFixed(2)}×`;
const pct = (v) => `${(100 * v).toFixed(0)} %`;

/** Issue 23's PostgreSQL target against the bare pattern: the runner at ≥ 0.7× raw (with 8 workers). */
export const RAW_TARGET = 0.7;

/**
 * What the ledger's layout leaves the runner's own code. `layout` is the ledger's table and the statements it
 * sends, with none of the runner's code: a runner whose code cost nothing would run at layout's rate. To reach
 * a rate `bound` (Powertools', or RAW_TARGET × raw's), the runner's code may take at most 1 − bound/layout of
 * an op's time; it takes 1 − runner/layout. At or below zero, no runner on this layout reaches it.
 * @param {{ opsPerSec: { layout: number, runner: number, powertools: number, raw?: number } }} r
 */
export function layoutHeadroom(r) {
  const { layout, runner, powertools, raw } = r.opsPerSec;
  const room = (bound, what) => {
    const share = 1 - bound / layout;
    return share > 0 ? `to match ${what} it may spend ≤ ${pct(share)} of an op in its own code` : `no runner on this layout can match ${what} (its own code would have to cost nothing or less)`;
  };
  const rawPart = raw ? `; layout runs at ${(layout / raw).toFixed(3)}× raw: ${room(RAW_TARGET * raw, `${RAW_TARGET}× raw`)}` : '';
  return `the ledger's layout with no runner code runs at ${x(layout / powertools)} Powertools: ${room(powertools, 'Powertools')}${rawPart}; `
    + `this runner spends ${pct(1 - runner / layout)} (runner/layout ${x(runner / layout)})`;
}
