/**
 * Scripted provider faults, written as the sequences they test: an array (one entry per call, calls
 * past its end get `pass`) or a function of the 1-based call number. Network faults (resets, lost or
 * truncated responses) are not scripted here: they belong to the fault proxy.
 */
export type CallScript<F> = readonly F[] | ((call: number) => F);

/** The fault a script names for call `call` (1-based); `pass` past the end of an array. */
export function faultAt<F>(script: CallScript<F> | undefined, call: number, pass: F): F {
  if (script === undefined) return pass;
  if (typeof script === 'function') return script(call);
  return script[call - 1] ?? pass;
}

/** Per-operation scripts with their own call numbering: `take(op)` counts the call and names its fault. */
export interface FaultScripts<K extends string, F> {
  /** Counts one call of `op` and returns its number and the fault scripted for it. */
  take(op: K): { readonly call: number; readonly fault: F };
  /** Replaces (or with undefined removes) `op`'s script and restarts its call numbering at 1. */
  set(op: K, script: CallScript<F> | undefined): void;
  /** Calls of `op` counted since its script was last set. */
  calls(op: K): number;
}

export function createFaultScripts<K extends string, F>(
  pass: F,
  initial: Partial<Record<K, CallScript<F>>> = {},
): FaultScripts<K, F> {
  const scripts = new Map<K, CallScript<F>>(Object.entries(initial) as [K, CallScript<F>][]);
  const counts = new Map<K, number>();
  return {
    take(op) {
      const call = (counts.get(op) ?? 0) + 1;
      counts.set(op, call);
      return { call, fault: faultAt(scripts.get(op), call, pass) };
    },
    set(op, script) {
      if (script === undefined) scripts.delete(op);
      else scripts.set(op, script);
      counts.set(op, 0);
    },
    calls: (op) => counts.get(op) ?? 0,
  };
}

/**
 * "The next n calls get this fault": a queue the next matching calls take from, in order. `add`
 * queues behind what is scripted already; `replace` discards it first.
 */
export interface FaultQueue<F> {
  add(fault: F, times?: number): void;
  replace(fault: F, times?: number): void;
  /** Takes the first queued fault `accepts` (default: any), or undefined when none. */
  take(accepts?: (fault: F) => boolean): F | undefined;
  readonly size: number;
}

export function createFaultQueue<F>(name = 'sandbox'): FaultQueue<F> {
  const queue: F[] = [];
  const push = (fault: F, times: number) => {
    if (!Number.isInteger(times) || times < 0)
      throw new RangeError(`${name}: times must be a non-negative integer, got ${times}`);
    for (let i = 0; i < times; i++) queue.push(fault);
  };
  return {
    add: (fault, times = 1) => push(fault, times),
    replace(fault, times = 1) {
      queue.length = 0;
      push(fault, times);
    },
    take(accepts) {
      const i = accepts ? queue.findIndex(accepts) : queue.length > 0 ? 0 : -1;
      return i < 0 ? undefined : queue.splice(i, 1)[0];
    },
    get size() {
      return queue.length;
    },
  };
}
