// The ledger seen through a recorder of its write calls, shared by the SQLite and PostgreSQL runner-write tests.
import type { ClaimInput, Ledger, Receipt, StatePatch } from '@retrysafe/contract';

const WRITES = new Set([
  'claim',
  'renewLease',
  'markDispatched',
  'setState',
  'handOff',
  'appendReceipt',
  'release',
  'resolve',
]);

export interface Write {
  readonly method: string;
  readonly dispatch?: boolean;
  readonly state?: string;
  readonly receiptSeq?: number;
}

/** The ledger seen through a recorder of its write calls. */
export function recording(inner: Ledger): { ledger: Ledger; writes: Write[] } {
  const writes: Write[] = [];
  const ledger = new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      const fn = v as (...a: unknown[]) => unknown;
      if (!WRITES.has(String(prop))) return fn.bind(target);
      return (...args: unknown[]) => {
        const method = String(prop);
        if (method === 'claim')
          writes.push({
            method,
            ...((args[0] as ClaimInput).dispatch !== undefined ? { dispatch: (args[0] as ClaimInput).dispatch! } : {}),
          });
        else if (method === 'setState') {
          const p = args[1] as StatePatch;
          writes.push({ method, state: p.state, ...(p.receipt ? { receiptSeq: p.receipt.seq } : {}) });
        } else if (method === 'handOff') {
          const r = args[3] as Receipt | undefined;
          writes.push({ method, state: 'handed-off', ...(r ? { receiptSeq: r.seq } : {}) });
        } else if (method === 'appendReceipt') writes.push({ method, receiptSeq: (args[1] as Receipt).seq });
        else writes.push({ method });
        return fn.apply(target, args);
      };
    },
  });
  return { ledger, writes };
}
