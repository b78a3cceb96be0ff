// Lines of `pnpm bench`'s report that are arithmetic on a scenario's ops/s (kept apart from bench.mjs, which runs on import, so they are tested).

const x = (r) => `${r.toFixed(2)}×`;
const pct = (v) => `${(100 * v).toFixed(0)} %`;

/**
 * What the ledger's layout leaves the runner's own code against Powertools. `layout` is the ledger's table and
 * the statements it sends, with none of the runner's code: a runner whose code cost nothing would run at
 * layout's rate. To be at least as fast as Powertools, the runner's code may take at most
 * 1 − powertools/layout of an op's time; it takes 1 − runner/layout.
 * @param {{ opsPerSec: { layout: number, runner: number, powertools: number } }} r
 */
export function layoutHeadroom(r) {
  const { layout, runner, powertools } = r.opsPerSec;
  const room = 1 - powertools / layout;
  const used = 1 - runner / layout;
  return `the ledger's layout with no runner code runs at ${x(layout / powertools)} Powertools; `
    + (room > 0 ? `a runner as fast as Powertools may spend ≤ ${pct(room)} of an op's time in its own code` : `no runner on this layout can reach Powertools (its own code would have to cost nothing or less)`)
    + `, this one spends ${pct(used)} (runner/layout ${x(runner / layout)})`;
}
