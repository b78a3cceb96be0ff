import type { HandoffPacket, Receipt } from '@retrysafe/contract';
import { paint } from '../../output.js';

/** A receipt in one line, as `ledger show` and the demo print it: kind → outcome, the decision, then its details. */
export function receiptText(x: Receipt, dim: (text: string) => string = (t) => t): string {
  // A stored entry edited from outside (the chain check says so): shown as such, the others still listed.
  if (typeof x?.kind !== 'string' || typeof x.decision !== 'object' || x.decision === null) return '(not a receipt)';
  const extra = [
    x.status && `HTTP ${x.status}`,
    x.code,
    x.neverSent && 'never sent',
    x.providerRef && `ref ${x.providerRef}`,
    x.decision.delayMs && `wait ${x.decision.delayMs} ms`,
  ].filter(Boolean);
  return `${x.kind.padEnd(8)} → ${(x.outcome ?? '—').padEnd(11)} ${x.decision.action}: ${x.decision.reason}${extra.length ? dim(`  (${extra.join(' · ')})`) : ''}`;
}

/** The names of the next actions a packet marks safe (with `safe` false: not safe). */
export const actionNames = (actions: HandoffPacket['safeNextActions'], safe = true) =>
  actions.flatMap((a) => (a.safe === safe ? [a.action] : [])).join(', ');

/** The flags of the resolutions that need a value; the others are `--<action>`. */
const FLAGS: Readonly<Record<string, string>> = {
  'mark-done': '--mark-done <providerRef>',
  'resend-with': '--resend-with <params.json>',
};

/** The command that resolves this hand-off, bound to it: refused once it was resumed or handed off again since.
 * `target`: the flags naming the ledger it was read from (targetFlags), so the command acts on that one. */
export function resolveCommand(
  p: Pick<HandoffPacket, 'businessOperationId' | 'createdAt' | 'safeNextActions'>,
  target: string,
) {
  const safe = p.safeNextActions.filter((a) => a.safe).map((a) => FLAGS[a.action] ?? `--${a.action}`);
  return `retrysafe ledger resolve ${p.businessOperationId}${target} --handoff-at ${p.createdAt} ${safe.join(' | ') || '(no action is known to be safe: verify at the provider first)'}`;
}

const actionText = (a: HandoffPacket['safeNextActions'][number], color: boolean) =>
  `    ${a.safe ? paint('green', '✓ safe    ', color) : paint('red', '✗ not safe', color)} ${a.action.padEnd(9)} ${a.why}`;

/** `open`: still handed off. A packet resolved since is history: its actions and command would now be refused. */
export function packetText(p: HandoffPacket, color: boolean, target: string, open = true): string {
  const last = p.lastKnown;
  return [
    paint('bold', `Handed off: ${p.reason}`, color),
    `  ${p.explanation}`,
    `  last known: ${last.outcome ?? '—'}${last.status ? ` · HTTP ${last.status}` : ''}${last.code ? ` · ${last.code}` : ''}${last.providerRef ? ` · ref ${last.providerRef}` : ''}${last.message && last.message !== `HTTP ${last.status}` ? ` · ${last.message}` : ''}`,
    `  provider key: ${p.providerKey ?? '(none travels)'}`,
    ...(open
      ? [
          '  next actions:',
          ...p.safeNextActions.map((a) => actionText(a, color)),
          `  resolve with: ${resolveCommand(p, target)}`,
        ]
      : []),
  ].join('\n');
}
