import { loadConfigFile } from '@retrysafe/config';
import {
  type AdapterV1,
  asBusinessOperationId,
  HANDOFF_REASONS,
  LedgerError,
  RetrysafeError,
} from '@retrysafe/contract';
import { isParamsSealed } from '@retrysafe/core/internal';
import { defineCommand, type Options, type Parsed } from '../../../command.js';
import { exactlyOne, pickKnown, RefusedError, scrubbed, UsageError, wanted } from '../../../errors.js';
import { paint, pick, plural } from '../../../output.js';
import { receiptKeysFromEnv, withParamsKeys } from '../chain.js';
import {
  type Built,
  ledgerResolve,
  printable,
  refuseForceWithoutResume,
  resolved,
  resolveText,
} from '../resolve/index.js';
import {
  configEnvHint,
  TARGET_OPTIONS,
  targetFlags,
  unreadableRows,
  warnUnreadable,
  withAdapters,
  withLedger,
} from '../target.js';

export const RESOLVE_ALL_OPTIONS = {
  ...TARGET_OPTIONS,
  operation: { argument: '<name>', parse: 'list', description: 'only this operation, e.g. stripe.invoices.create' },
  reason: {
    argument: '<reason>',
    parse: 'list',
    description: `only this handoff reason (${HANDOFF_REASONS.join(', ')})`,
  },
  id: { argument: '<id>', parse: 'list', description: 'only these business-operation ids' },
  account: { argument: '<name>', parse: 'list', description: "only operations claimed for this adapter's account" },
  resume: { description: 're-send each with the SAME provider key through the adapters named in --config' },
  abandon: { description: 'give each up (nothing more is sent)' },
  force: {
    description:
      'with --resume: also where the packet marks it not safe, or a key may be forgotten and nothing can look it up first (you checked at the provider)',
  },
  dryRun: { description: 'list what would be done; send and write nothing' },
  by: { argument: '<name>', description: 'who resolved them, for the receipts (default $USER; not with --dry-run)' },
} as const satisfies Options;

export type ResolveAllOptions = Parsed<typeof RESOLVE_ALL_OPTIONS>;

export type ResolveAllReport = Awaited<ReturnType<typeof ledgerResolveAll>>;

/** Resolves every matching handoff with the single-resolve safety rule (unsafe only with --force); --dry-run writes nothing. */
export async function ledgerResolveAll(opts: ResolveAllOptions) {
  exactlyOne(
    [opts.resume, opts.abandon],
    'choose exactly one of --resume, --abandon (--mark-done needs one provider reference per operation: use ledger resolve <id>)',
  );
  refuseForceWithoutResume(opts);
  if (opts.by !== undefined && opts.dryRun)
    throw new UsageError('--by names who resolved them in the receipts: a dry run writes none');
  // Refused before any row, in a dry run as in the real run: no config to resume through, or adapters it cannot build.
  if (opts.resume && !opts.config)
    throw new UsageError(
      `--resume re-sends through the adapters: pass --config <file> naming them (credentials come from environment variables)${configEnvHint()}`,
    );
  for (const i of opts.id ?? []) asBusinessOperationId(i);
  pickKnown('handoff reason', HANDOFF_REASONS, opts.reason ?? []);
  const action = opts.resume ? 'resume' : 'abandon';
  // Each resolve reads the receipt keys: a malformed one is refused once, here, not on every row.
  receiptKeysFromEnv();
  const config = opts.config ? await loadConfigFile(opts.config) : null;
  // Opened once for the listing and every row: per row it would be a new connection pool or client.
  const run = (adapters: AdapterV1[]) =>
    withLedger(opts, (ledger) => resolveMatching(opts, { config, adapters, ledger }, action), {
      config,
      writes: !opts.dryRun,
    });
  return opts.resume && config ? withAdapters(config, opts.config!, run) : run([]);
}

/** The matching hand-offs, each resolved through `built` (the config, its adapters and the ledger, once for them all). */
async function resolveMatching(opts: ResolveAllOptions, built: Built, action: 'resume' | 'abandon') {
  // A handoff whose row cannot be read is left out and reported (`unreadable`), not a reason to resolve none.
  const { ids: unreadable, onUnreadable } = unreadableRows();
  const { ledger } = built;
  const handedOff = await withParamsKeys(ledger).list({ states: ['handed-off'], onUnreadable });
  const matching = handedOff.filter(
    (r) =>
      wanted(opts.operation, r.operation) &&
      wanted(opts.reason, r.handoff?.reason ?? '') &&
      wanted(opts.id, r.businessOperationId) &&
      wanted(opts.account, r.account ?? ''),
  );
  // So is one whose receipts cannot be read: its resolve would fail as the ledger failing, and stop the others.
  const matched = [];
  for (const r of matching)
    try {
      await ledger.receipts(r.businessOperationId);
      matched.push(r);
    } catch (err) {
      if (!LedgerError.isInstance(err)) throw err;
      onUnreadable(r.businessOperationId);
    }
  const rows = [];
  for (const r of matched) {
    const a = r.handoff?.safeNextActions.find((x) => x.action === action);
    // refused: the packet marks the action not safe (without --force); result: null on a dry run or when refused
    const plan = a && !a.safe && !opts.force ? ('refused' as const) : action;
    // Bound to the packet listed: one resumed or handed off again since is refused, not resolved (nor forced) unseen.
    // What --force overrides is the runner's rule, as for `ledger resolve`.
    const resolve = { ...opts, handoffAt: r.handoff?.createdAt };
    // A dry run makes the same checks, and so says per row what the run would refuse.
    const done =
      plan === 'refused'
        ? null
        : await settle(ledgerResolve(resolve, r.businessOperationId, opts.dryRun === true, built));
    rows.push({
      ...pick(r, 'businessOperationId', 'operation'),
      ...(r.account === undefined ? {} : { account: r.account }),
      handoffReason: r.handoff?.reason ?? null,
      plan,
      why: a
        ? `${a.safe ? 'safe' : opts.force ? 'not safe, forced' : 'not safe'}: ${a.why}`
        : 'the packet names no such action',
      result: done?.result ?? null,
      ...(done?.error !== undefined ? { error: done.error } : {}),
    });
  }
  const ok =
    unreadable.length === 0 &&
    rows.every((r) => r.plan !== 'refused' && !r.error && (r.result === null || resolved(r.result)));
  return { dryRun: opts.dryRun === true, action, matched: matched.length, rows, unreadable, ok };
}

/**
 * One operation's resolution, or why it was not resolved: a refusal, a changed record or params sealed with a key this
 * process lacks do not stop the others; a ledger that fails does.
 */
async function settle(resolving: ReturnType<typeof ledgerResolve>) {
  try {
    return { result: await resolving };
  } catch (err) {
    const own =
      err instanceof RefusedError ||
      isParamsSealed(err) ||
      (RetrysafeError.isInstance(err) && !LedgerError.isInstance(err));
    if (!own) throw err;
    return { result: null, error: scrubbed((err as Error).message) };
  }
}

export function resolveAllText(r: ResolveAllReport, color = false, target = ''): string {
  if (r.matched === 0) return 'No handed-off operation matches: nothing to resolve.';
  const lines = r.rows.map((x) => {
    if (x.error !== undefined)
      return `${paint('red', '✗', color)} ${x.businessOperationId}  ${r.dryRun ? 'would not be resolved' : 'not resolved'}: ${x.error}`;
    if (x.plan === 'refused')
      return `${paint('red', '✗', color)} ${x.businessOperationId}  refused: ${x.why} (check at the provider; --force if you are sure)`;
    if (r.dryRun)
      return `${paint('cyan', '·', color)} ${x.businessOperationId}  would ${r.action} (${x.handoffReason ?? '?'}; ${x.why})`;
    return resolveText(x.result!, color, target);
  });
  const refused = r.rows.filter((x) => x.plan === 'refused' || x.error !== undefined).length;
  const head = r.dryRun
    ? `Dry run: ${r.matched - refused} of ${plural(r.matched, 'handed-off operation')} would be ${r.action === 'resume' ? 'resumed' : 'abandoned'}${refused ? `, ${refused} refused` : ''}; nothing was sent or written.`
    : `${plural(r.matched, 'handed-off operation')} matched:`;
  return [head, ...lines].join('\n');
}

export const ledgerResolveAllCommand = defineCommand({
  name: 'ledger resolve-all',
  description:
    'resolve every handed-off operation matching the filters (--resume or --abandon); --dry-run shows what would be done',
  options: RESOLVE_ALL_OPTIONS,
  async run({ print, color, io }, o) {
    const r = await ledgerResolveAll(o);
    warnUnreadable(io, r.unreadable);
    const shown = { ...r, rows: r.rows.map((x) => ({ ...x, result: x.result && printable(x.result) })) };
    return print(o, shown, () => resolveAllText(r, color, targetFlags(o)), r.ok);
  },
});
