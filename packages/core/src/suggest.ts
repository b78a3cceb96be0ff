// The "did you mean" of the config checks and of retrysafe-mcp's command line: one small module, so a command line
// that loads nothing else for its usage errors can load this.

/** Edit distance (insert, delete, substitute, swap of neighbours). */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** ` (did you mean "…"?)` with the closest candidate, when it is close enough to be a typo (case counts as none). */
export const suggest = (word: string, candidates: Iterable<string>): string => {
  let best: { c: string; score: number } | null = null;
  for (const c of candidates) {
    const score = editDistance(word.toLowerCase(), c.toLowerCase());
    if (best === null || score < best.score) best = { c, score };
  }
  if (best === null) return '';
  const limit = Math.max(1, Math.min(3, Math.floor(Math.max(word.length, best.c.length) / 3)));
  return best.score <= limit ? ` (did you mean "${best.c}"?)` : '';
};
