/**
 * What a sandbox saw, in arrival order: the entries drills and tests assert on ("how many effects",
 * "which call carried which key"). Entries are numbered from 1 as they are recorded.
 */
export interface RequestLog<E extends { readonly n: number }> {
  /** The live log (read-only view). */
  readonly entries: readonly E[];
  /** Appends `entry` with the next number and returns it (still mutable by the sandbox until answered). */
  record(entry: Omit<E, 'n'>): E;
  count(filter?: (entry: E) => boolean): number;
  /** Resolves once `predicate` holds for the log (polls every 5 ms); rejects after `timeoutMs`. */
  waitFor(predicate: (entries: readonly E[]) => boolean, timeoutMs?: number): Promise<void>;
}

export function createRequestLog<E extends { readonly n: number }>(name = 'sandbox'): RequestLog<E> {
  const entries: E[] = [];
  return {
    entries,
    record(entry) {
      const full = { n: entries.length + 1, ...entry } as E;
      entries.push(full);
      return full;
    },
    count: (filter) => (filter ? entries.filter(filter).length : entries.length),
    async waitFor(predicate, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(entries)) {
        if (Date.now() > deadline) throw new Error(`${name}.waitFor: condition not met within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
  };
}

/** Per-operation counters (calls, writes, lookups…): `bump` returns the new count, the n-th call. */
export interface Counts<K extends string = string> {
  bump(op: K, by?: number): number;
  get(op: K): number;
  total(): number;
  reset(op?: K): void;
}

export function createCounts<K extends string = string>(): Counts<K> {
  const counts = new Map<K, number>();
  return {
    bump(op, by = 1) {
      const n = (counts.get(op) ?? 0) + by;
      counts.set(op, n);
      return n;
    },
    get: (op) => counts.get(op) ?? 0,
    total: () => [...counts.values()].reduce((s, n) => s + n, 0),
    reset(op) {
      if (op === undefined) counts.clear();
      else counts.delete(op);
    },
  };
}
