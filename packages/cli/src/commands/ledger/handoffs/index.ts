import type { Ledger } from '@retrysafe/contract';
import { waitsForUser } from '@retrysafe/core/internal';
import { defineCommand } from '../../../command.js';
import { paint, plural } from '../../../output.js';
import { addMissingKey, CHAIN_RUNBOOK, verifyChains } from '../chain.js';
import { actionNames, resolveCommand } from '../packet-text.js';
import {
  type LedgerTarget,
  printListing,
  summarize,
  TARGET_OPTIONS,
  targetFlags,
  unreadableRows,
  withLedger,
} from '../target.js';

type HandoffRow = Awaited<ReturnType<typeof ledgerHandoffs>>[number];

/** The handed-off operations; a row the ledger cannot read goes to `onUnreadable` (without it, this rejects).
 * `opened`: the ledger the caller opened (and closes), else it is opened for this call. */
export async function ledgerHandoffs(target: LedgerTarget, onUnreadable?: (id: string) => void, opened?: Ledger) {
  return withLedger(
    target,
    async (ledger) => {
      const rows = await ledger.list({ states: ['handed-off'], onUnreadable });
      const ids = rows.map((r) => r.businessOperationId);
      const chains = await verifyChains(ledger, ids, true); // one per id, in order
      // The agent's rule (retrysafe_handoffs); one whose receipt chain is broken is a person's to look into first.
      const users = await Promise.all(
        rows.map(async (r, i) =>
          chains[i]!.ok && r.handoff !== null
            ? waitsForUser(r.handoff, await ledger.receipts(r.businessOperationId))
            : false,
        ),
      );
      return rows.map((r, i) => {
        const chain = chains[i]!;
        return {
          ...summarize(r),
          waitsFor: users[i] ? ('user' as const) : ('person' as const),
          explanation: r.handoff?.explanation ?? '',
          // the packet listed, which `ledger resolve --handoff-at` binds a decision to
          handoffAt: r.handoff?.createdAt ?? null,
          safeNextActions: r.handoff?.safeNextActions ?? [],
          lastKnown: r.handoff?.lastKnown ?? null,
          // a broken receipt chain: do not act on it before finding out why
          ...(chain.ok ? {} : { chainBroken: chain.reason }),
          // the key id the break names, when the receipt was sealed with a key this process lacks (not an edit)
          ...(chain.ok || chain.missingKey === undefined ? {} : { chainKeyMissing: chain.missingKey }),
        };
      });
    },
    { ledger: opened },
  );
}

/**
 * `target`: the flags naming the ledger read (targetFlags), repeated in the commands it suggests. `leftOpen`: operations
 * left open past their lease were told beside the list (they wait for someone too).
 */
export function handoffsText(rows: readonly HandoffRow[], color = false, target = '', leftOpen = false): string {
  if (rows.length === 0) return leftOpen ? 'No handoffs.' : 'No handoffs: nothing is waiting for a person.';
  const blocks = rows.map((r) => {
    const why = r.chainKeyMissing ? addMissingKey(r.chainKeyMissing) : 'the ledger was edited outside retrysafe';
    const broken = `  ✗ receipt chain broken (${r.chainBroken}): ${why} — resolve refuses it (${CHAIN_RUNBOOK})`;
    const unsafe = actionNames(r.safeNextActions, false);
    return [
      `${paint('bold', r.businessOperationId, color)}  ${r.operation}${r.account === undefined ? '' : ` (account ${r.account})`}  ${paint('yellow', r.handoffReason ?? '?', color)}  (${plural(r.attempts, 'attempt')}, ${r.updatedAt})`,
      `  ${r.explanation}`,
      ...(r.waitsFor === 'user'
        ? ["  waits for the user's own step: once they have, the same call (or --resume) sends it again"]
        : []),
      ...(r.chainBroken ? [paint('red', broken, color)] : []),
      `  safe: ${actionNames(r.safeNextActions) || 'none known — verify at the provider'}${unsafe ? paint('dim', `   not safe: ${unsafe}`, color) : ''}`,
      ...(r.handoffAt ? [`  resolve with: ${resolveCommand({ ...r, createdAt: r.handoffAt }, target)}`] : []),
    ].join('\n');
  });
  const users = rows.filter((r) => r.waitsFor === 'user').length;
  const waiting = users
    ? `handed off: ${rows.length - users} waiting for a person, ${users} for the user's own step`
    : 'waiting for a person';
  return `${plural(rows.length, 'operation')} ${waiting} (the runbook: retrysafe help runbook):\n\n${blocks.join('\n\n')}\n\nInspect one with: retrysafe ledger show <id>${target}`;
}

export const ledgerHandoffsCommand = defineCommand({
  name: 'ledger handoffs',
  description: 'operations waiting for a person, with their safe next actions',
  options: TARGET_OPTIONS,
  async run(ctx, o) {
    const { ids, onUnreadable } = unreadableRows();
    // Open past its lease: a worker or a resolve stopped between its steps, and no recover() pass has driven it since.
    const { rows, open } = await withLedger(o, async (l) => ({
      rows: await ledgerHandoffs(o, onUnreadable, l),
      open: await l.recoverCandidates(Date.now(), undefined, (id) => ids.includes(id) || onUnreadable(id)),
    }));
    if (open.length > 0)
      ctx.io.err(
        `retrysafe: ${plural(open.length, 'operation')} left open past ${open.length === 1 ? 'its' : 'their'} lease (a worker or a resolve stopped between its steps; recover() drives ${open.length === 1 ? 'it' : 'them'}, or: retrysafe ledger resolve <id> --resume${targetFlags(o)}${o.config ? '' : ' --config <file>'}, which hands one its adapters cannot drive to you): ${open.map((r) => r.businessOperationId).join(', ')}`,
      );
    const ok = !rows.some((r) => r.chainBroken);
    return printListing(ctx, o, rows, ids, () => handoffsText(rows, ctx.color, targetFlags(o), open.length > 0), ok);
  },
});
