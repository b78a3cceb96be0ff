import { type Ledger, LedgerError, type OperationRecord, type Receipt } from '@retrysafe/contract';
import {
  byCreation,
  checkListFilter,
  checkPruneOptions,
  checkRecoverCandidates,
  checkRef,
  claimTransition,
  fencedMethods,
  fencedTransition,
  inListing,
  isPrunable,
  leaseLive,
  pruneTally,
  RECOVERABLE_STATES,
  recordJson,
  resolveTransition,
  storedJson,
} from '@retrysafe/contract/ledger';
import { memo } from '../defined.js';

/** What stays is what a stored ledger keeps: JSON, so a value no JSON carries is refused alike (LedgerError). */
const clone = <T>(value: T): T => JSON.parse(storedJson(value, 'memory ledger'));

/** For tests and single-process scripts. */
export function createMemoryLedger(): Ledger {
  const records = new Map<string, OperationRecord>();
  const receipts = new Map<string, Receipt[]>();
  let closed = false;
  const open = () => {
    if (closed) throw new LedgerError('memory ledger is closed');
  };
  const rows = () => {
    open();
    return records;
  };
  // The copy is what stays; the transition's own object, which nobody else holds, is handed out.
  const put = (next: OperationRecord) => {
    const { record, text } = recordJson(next, 'memory ledger');
    records.set(record.businessOperationId, JSON.parse(text));
    return record;
  };

  return {
    async claim(input) {
      const copy = clone(input);
      const { result, write } = claimTransition(rows().get(input.businessOperationId) ?? null, copy);
      if (write === null) return clone(result); // it holds the stored record
      // Written: the result holds the new record and the caller's copied input, which nobody else holds (as in put).
      records.set(write.businessOperationId, clone(write));
      if (copy.receipt !== undefined) memo(receipts, write.businessOperationId, () => []).push(copy.receipt);
      return result;
    },
    ...fencedMethods(async (ref, _what, rule, receipt) => {
      checkRef(ref);
      const id = ref.businessOperationId;
      const stored = rows().get(id) ?? null;
      const next = fencedTransition(stored, ref, rule, receipt, receipts.get(id)?.at(-1)?.seq ?? 0);
      if (receipt !== undefined) memo(receipts, id, () => []).push(clone(receipt));
      return put(next);
    }),
    async resolve(id, resolution, now, receipt) {
      const stored = rows().get(id) ?? null;
      const next = resolveTransition(stored, id, resolution, now, receipt, receipts.get(id)?.at(-1)?.seq);
      // Both copies are made before either is stored: a value that cannot be copied leaves nothing written.
      const copy = receipt === undefined ? undefined : clone(receipt);
      put(next);
      if (copy !== undefined) memo(receipts, id, () => []).push(copy);
      return next;
    },
    async get(id) {
      const r = rows().get(id);
      return r ? clone(r) : null;
    },
    async list(filter = {}) {
      checkListFilter(filter);
      const out = [...rows().values()].filter((r) => inListing(r, filter)).sort(byCreation);
      if (filter.newestFirst) out.reverse();
      return clone(out.slice(0, filter.limit));
    },
    async receipts(id) {
      open();
      return clone(receipts.get(id) ?? []);
    },
    // Its rows are objects it cloned in: none is ever unreadable, so `onUnreadable` is only checked.
    async recoverCandidates(now, limit, onUnreadable) {
      checkRecoverCandidates(now, limit, onUnreadable);
      const out = [...rows().values()]
        .filter((r) => RECOVERABLE_STATES.includes(r.state) && !leaseLive(r, now))
        .sort((a, b) => a.updatedAt - b.updatedAt);
      return clone(out.slice(0, limit));
    },
    async prune(options) {
      const states = checkPruneOptions(options);
      const tally = pruneTally(options.dryRun);
      for (const r of [...rows().values()]) {
        if (!isPrunable(r, states, options.before)) continue;
        if (!options.dryRun) {
          await options.onPrune?.(clone(r), clone(receipts.get(r.businessOperationId) ?? []));
          // Checked again: the callback awaited, and an operation may have been superseded or revised meanwhile.
          const now = records.get(r.businessOperationId);
          if (!now || !isPrunable(now, states, options.before)) continue;
          records.delete(r.businessOperationId);
          receipts.delete(r.businessOperationId);
        }
        tally.count(r.state);
      }
      return tally.report();
    },
    async close() {
      closed = true;
    },
  };
}
