import { asBusinessOperationId } from '@retrysafe/contract';
import { personRef } from '@retrysafe/core/internal';
import { defineCommand } from '../../../command.js';
import { RefusedError } from '../../../errors.js';
import { paint } from '../../../output.js';
import { addMissingKey, CHAIN_RUNBOOK, verifyChains } from '../chain.js';
import { packetText, receiptText } from '../packet-text.js';
import {
  type LedgerTarget,
  notInLedger,
  refuseIdleConfig,
  summarize,
  TARGET_OPTIONS,
  targetFlags,
  withLedger,
} from '../target.js';

type ShowResult = NonNullable<Awaited<ReturnType<typeof ledgerShow>>>;

export async function ledgerShow(target: LedgerTarget & { readonly showBy?: boolean }, id: string) {
  const bid = asBusinessOperationId(id);
  return withLedger(target, async (ledger) => {
    const r = await ledger.get(bid);
    if (!r) return null;
    return {
      record: {
        ...summarize(r),
        intentFingerprint: r.intentFingerprint,
        paramsFingerprint: r.paramsFingerprint,
        firstDispatchedAt: r.firstDispatchedAt === null ? null : new Date(r.firstDispatchedAt).toISOString(),
        handoff: r.handoff,
        // `resolve --by` is stored as given; shown as a pseudonym (`person#…`) unless the operator asks (`--show-by`)
        resolution:
          r.resolution?.by === undefined || target.showBy
            ? r.resolution
            : { ...r.resolution, by: personRef(r.resolution.by) },
      },
      receipts: await ledger.receipts(bid), // never the params
      // Unkeyed chains from before a key was set pass here (a keyed-then-unkeyed chain never does); `verify` is the strict check.
      chain: (await verifyChains(ledger, [bid], true))[0]!,
    };
  });
}

const kv = (pairs: readonly (readonly [string, unknown])[]) =>
  pairs.map(([k, v]) => `${k.padEnd(20)} ${v === null || v === undefined ? '—' : String(v)}`).join('\n');

/** `target`: the flags naming the ledger (targetFlags), repeated in the command it suggests. */
export function showText(r: ShowResult, color = false, target = ''): string {
  const rec = r.record;
  const res = rec.resolution;
  const by = res && ` by ${res.by ?? '?'} at ${new Date(res.at).toISOString()}`;
  const out = [
    kv([
      ['operation', rec.operation],
      ...('account' in rec ? [['account', rec.account] as const] : []),
      ['business op id', rec.businessOperationId],
      ['state', rec.state],
      ['attempts', rec.attempts],
      ['last outcome', rec.lastOutcome],
      ['provider key', rec.providerKey],
      ['provider ref', rec.providerRef],
      ['intent', rec.intentFingerprint],
      ['created', rec.createdAt],
      ['first dispatched', rec.firstDispatchedAt],
      ['updated', rec.updatedAt],
      ['resolution', res ? `${res.action}${res.providerRef ? ` (${res.providerRef})` : ''}${by}` : null],
    ]),
  ];
  if (rec.handoff) out.push('', packetText(rec.handoff, color, target, rec.state === 'handed-off'));
  if (rec.state === 'not-sent')
    out.push('', 'Given back: no request of it ever left. The next call with this id sends it; nothing to resolve.');
  if (!r.chain.ok) {
    const why = r.chain.missingKey
      ? addMissingKey(r.chain.missingKey)
      : 'the ledger was edited outside retrysafe; do not act on these receipts before finding out why';
    const broken = `✗ receipt chain broken at #${r.chain.index + 1}: ${r.chain.reason} — ${why} (${CHAIN_RUNBOOK})`;
    out.push('', paint('red', broken, color));
  }
  out.push('', `Receipts (${r.receipts.length}):`);
  for (const x of r.receipts)
    out.push(`  #${String(x?.seq).padEnd(3)} ${x?.startedAt}  ${receiptText(x, (t) => paint('dim', t, color))}`);
  return out.join('\n');
}

export const ledgerShowCommand = defineCommand({
  name: 'ledger show',
  description: 'one operation: state, handoff packet, receipts',
  arguments: [['<id>', 'business-operation id']],
  options: {
    ...TARGET_OPTIONS,
    showBy: { description: 'show who resolved it as stored (default: a pseudonym)' },
  },
  async run({ io, color, print }, o, [id]: [string]) {
    // --config feeds only the resolve commands the text shows.
    if (o.json) refuseIdleConfig(o);
    const r = await ledgerShow(o, id);
    // As verify and resolve answer it (exit 1).
    if (!r) throw new RefusedError(notInLedger(id, o));
    const code = print(o, r, () => showText(r, color, targetFlags(o)), r.chain.ok);
    if (!r.chain.ok)
      io.err(`retrysafe: the receipt chain of ${id} is broken at receipt #${r.chain.index + 1}: ${r.chain.reason}`);
    return code;
  },
});
