import type {
  BusinessOperationId,
  ClaimInput,
  ClaimResult,
  Fenced,
  HandoffPacket,
  Ledger,
  ListFilter,
  OperationRecord,
  OperationState,
  PruneOptions,
  PruneReport,
  Receipt,
  StatePatch,
} from '@retrysafe/contract';
import {
  chainedTransition,
  checkFence,
  checkPruneOptions,
  checkReceipt,
  claimTransition,
  dispatchedTransition,
  handOffTransition,
  isPrunable,
  leaseLive,
  RECOVERABLE_STATES,
  releaseTransition,
  renewTransition,
  resolveTransition,
  setStateTransition,
} from '@retrysafe/contract/ledger';

/** Thrown inside copyPlain when a value is not plain data: the whole value is then copied by structuredClone. */
const NOT_PLAIN: unique symbol = Symbol('not plain');

/**
 * A deep copy of plain data (primitives, plain objects, dense arrays) that gives what structuredClone
 * gives, without its serialise-and-parse round trip (the memory ledger copies on every call). Anything else — a Date, Map, class instance, function, symbol,
 * sparse array or array with extra keys, an own `__proto__` key, or an object reached twice (a cycle
 * or a shared reference, which structuredClone keeps shared) — hands the whole value to structuredClone,
 * so its answer (or its DataCloneError) is exactly structuredClone's.
 */
function copyPlain(v: unknown, seen: Set<object>): unknown {
  if (typeof v !== 'object') {
    if (typeof v === 'function' || typeof v === 'symbol') throw NOT_PLAIN;
    return v;
  }
  if (v === null) return v;
  if (seen.has(v)) throw NOT_PLAIN;
  seen.add(v);
  const proto = Object.getPrototypeOf(v);
  if (proto === Array.prototype) {
    const a = v as unknown[];
    const n = a.length;
    const out = new Array<unknown>(n);
    for (let i = 0; i < n; i++) {
      if (!(i in a)) throw NOT_PLAIN;
      out[i] = copyPlain(a[i], seen);
    }
    // Dense, so its own keys are its indices plus any extra ones: only then are there more than n.
    if (Object.keys(a).length !== n) throw NOT_PLAIN;
    return out;
  }
  if (proto !== Object.prototype && proto !== null) throw NOT_PLAIN;
  const o = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  // for-in: the own enumerable string keys in order (what structuredClone copies; symbol keys are not
  // visited, and Object.prototype has no enumerable ones: checked in clone).
  for (const k in o) {
    // Assigning to `__proto__` would set the prototype: structuredClone keeps it a key.
    if (k === '__proto__') throw NOT_PLAIN;
    out[k] = copyPlain(o[k], seen);
  }
  return out;
}

/** What the ledger hands out or keeps: a copy nobody else holds (structuredClone's answer, cheaper for plain data). */
export function clone<T>(v: T): T {
  if (typeof v !== 'object' || v === null || prototypePolluted()) return structuredClone(v);
  try {
    return copyPlain(v, new Set()) as T;
  } catch (err) {
    if (err === NOT_PLAIN) return structuredClone(v);
    throw err;
  }
}

/** Whether Object.prototype has gained an enumerable key (copyPlain's for-in would then see it). */
function prototypePolluted(): boolean {
  for (const _ in {}) return true;
  return false;
}

/** A ledger in this process's memory: for tests and single-process scripts. Lost when the process exits. */
export function createMemoryLedger(): Ledger {
  const records = new Map<string, OperationRecord>();
  const receipts = new Map<string, Receipt[]>();
  let closed = false;
  const open = () => {
    if (closed) throw new Error('memory ledger is closed');
  };
  const fenced = (ref: Fenced) => checkFence(records.get(ref.businessOperationId) ?? null, ref);
  // The copy is what stays; the transition's own object, which nobody else holds, is handed out.
  const put = (r: OperationRecord) => {
    records.set(r.businessOperationId, clone(r));
    return r;
  };
  /** Checks the receipt against the operation's receipts; returns the commit step (so a refused state writes neither). */
  const receiptStep = (ref: Fenced, receipt: Receipt | undefined): (() => void) => {
    if (receipt === undefined) return () => undefined;
    const list = receipts.get(ref.businessOperationId);
    checkReceipt(ref, receipt, list !== undefined && list.length ? list[list.length - 1]!.seq : 0);
    const copy = clone(receipt);
    return () => {
      if (list !== undefined) list.push(copy);
      else receipts.set(ref.businessOperationId, [copy]);
    };
  };

  return {
    capabilities: { claimDispatch: true, receiptWithState: true },
    async claim(input: ClaimInput): Promise<ClaimResult> {
      open();
      const { result, write } = claimTransition(records.get(input.businessOperationId) ?? null, clone(input));
      if (write === null) return clone(result); // it holds the stored record
      // Written: the result holds the new record and the caller's copied input, which nobody else holds (as in put).
      records.set(write.businessOperationId, clone(write));
      return result;
    },
    async renewLease(ref, leaseMs, now) {
      open();
      put(renewTransition(fenced(ref), ref, leaseMs, now));
    },
    async markDispatched(ref, now) {
      open();
      return put(dispatchedTransition(fenced(ref), now));
    },
    async setState(ref, patch: StatePatch) {
      open();
      const { receipt: _receipt, durability: _durability, ...fields } = patch;
      const next = setStateTransition(fenced(ref), clone(fields));
      receiptStep(ref, patch.receipt)();
      return put(chainedTransition(next, patch.receipt));
    },
    async handOff(ref, packet: HandoffPacket, now, receipt?: Receipt) {
      open();
      const next = handOffTransition(fenced(ref), clone(packet), now);
      receiptStep(ref, receipt)();
      return put(chainedTransition(next, receipt));
    },
    async appendReceipt(ref, receipt) {
      open();
      const current = fenced(ref);
      receiptStep(ref, receipt)();
      put(chainedTransition(current, receipt));
    },
    async release(ref) {
      open();
      put(releaseTransition(fenced(ref)));
    },
    async resolve(id, resolution, now) {
      open();
      return put(resolveTransition(records.get(id) ?? null, id, resolution, now));
    },
    async get(id: BusinessOperationId) {
      open();
      const r = records.get(id);
      return r ? clone(r) : null;
    },
    async list(filter: ListFilter = {}) {
      open();
      let out = [...records.values()];
      if (filter.states) out = out.filter((r) => filter.states!.includes(r.state));
      if (filter.provider) out = out.filter((r) => r.provider === filter.provider);
      if (filter.operation) out = out.filter((r) => r.operation === filter.operation);
      out.sort((a, b) => a.createdAt - b.createdAt || a.businessOperationId.localeCompare(b.businessOperationId));
      if (filter.newestFirst) out.reverse();
      return clone(filter.limit !== undefined ? out.slice(0, filter.limit) : out);
    },
    async receipts(id) {
      open();
      return clone(receipts.get(id) ?? []);
    },
    async recoverCandidates(now, limit) {
      open();
      const out = [...records.values()]
        .filter((r) => RECOVERABLE_STATES.includes(r.state) && !leaseLive(r, now))
        .sort((a, b) => a.updatedAt - b.updatedAt);
      return clone(limit !== undefined ? out.slice(0, limit) : out);
    },
    async prune(options: PruneOptions): Promise<PruneReport> {
      open();
      const states = checkPruneOptions(options);
      const byState: Partial<Record<OperationState, number>> = {};
      let pruned = 0;
      for (const r of [...records.values()]) {
        if (!isPrunable(r, states, options.before)) continue;
        if (!options.dryRun) {
          await options.onPrune?.(clone(r), clone(receipts.get(r.businessOperationId) ?? []));
          // Checked again: the callback awaited, and a rejected operation may have been superseded meanwhile.
          const now = records.get(r.businessOperationId);
          if (!now || !isPrunable(now, states, options.before)) continue;
          records.delete(r.businessOperationId);
          receipts.delete(r.businessOperationId);
        }
        pruned++;
        byState[r.state] = (byState[r.state] ?? 0) + 1;
      }
      return { pruned, byState, dryRun: options.dryRun === true };
    },
    async close() {
      closed = true;
    },
  };
}
