import { loadConfigFile } from '@retrysafe/config';
import { asBusinessOperationId } from '@retrysafe/contract';
import type { ResolveResult } from '@retrysafe/core';
import type { Options, Parsed } from '../../../command.js';
import { UsageError } from '../../../errors.js';
import { paint } from '../../../output.js';
import { ledgerResolve, resolveText } from '../resolve/index.js';
import { TARGET_OPTIONS, withLedger } from '../target.js';

export const RESOLVE_ALL_OPTIONS = {
  ...TARGET_OPTIONS,
  operation: {
    argument: '<name>',
    parse: 'list',
    description: 'only this operation, e.g. stripe.invoices.create',
  },
  reason: {
    argument: '<reason>',
    parse: 'list',
    description: 'only this handoff reason, e.g. rejected',
  },
  id: {
    argument: '<id>',
    parse: 'list',
    description: 'only these business-operation ids',
  },
  resume: { description: 're-send each with the SAME provider key through the adapters named in --config' },
  abandon: { description: 'give each up (nothing more is sent)' },
  force: { description: 'also where the packet marks the action not safe (you checked at the provider)' },
  dryRun: { description: 'list what would be done; send and write nothing' },
  by: { argument: '<name>', description: 'who resolved them, for the receipts (default $USER)' },
} as const satisfies Options;

export type ResolveAllOptions = Parsed<typeof RESOLVE_ALL_OPTIONS>;

export interface ResolveAllRow {
  readonly businessOperationId: string;
  readonly operation: string;
  readonly handoffReason: string | null;
  /** `would-resume` / `would-abandon` on a dry run; `refused` when the packet marks the action not safe (without --force). */
  readonly plan: 'resume' | 'abandon' | 'refused';
  readonly why: string;
  /** The resolution's result; null on a dry run or when refused. */
  readonly result: ResolveResult | null;
}

export interface ResolveAllReport {
  readonly dryRun: boolean;
  readonly action: 'resume' | 'abandon';
  readonly matched: number;
  readonly rows: readonly ResolveAllRow[];
  readonly ok: boolean;
}

/** Resolves every matching handoff with the single-resolve safety rule (unsafe only with --force); --dry-run writes nothing. */
export async function ledgerResolveAll(opts: ResolveAllOptions): Promise<ResolveAllReport> {
  const chosen = [opts.resume === true, opts.abandon === true].filter(Boolean).length;
  if (chosen !== 1)
    throw new UsageError(
      'choose exactly one of --resume, --abandon (--mark-done needs one provider reference per operation: use ledger resolve <id>)',
    );
  if (opts.resume && !opts.config && !opts.dryRun)
    throw new UsageError(
      '--resume re-sends through the adapters: pass --config <file> naming them (credentials come from environment variables)',
    );
  for (const i of opts.id ?? []) asBusinessOperationId(i);
  const action = opts.resume ? 'resume' : 'abandon';
  const config = opts.config ? await loadConfigFile(opts.config) : null;
  const matched = await withLedger(
    opts,
    async (ledger) =>
      (await ledger.list({ states: ['handed-off'] })).filter(
        (r) =>
          (!opts.operation?.length || opts.operation.includes(r.operation)) &&
          (!opts.reason?.length || opts.reason.includes(r.handoff?.reason ?? '')) &&
          (!opts.id?.length || opts.id.includes(r.businessOperationId)),
      ),
    { config },
  );
  const planned = matched.map((r) => {
    const a = r.handoff?.safeNextActions.find((x) => x.action === action);
    const refused = a !== undefined && !a.safe && !opts.force;
    return {
      record: r,
      plan: (refused ? 'refused' : action) as ResolveAllRow['plan'],
      why: a
        ? `${a.safe ? 'safe' : opts.force ? 'not safe, forced' : 'not safe'}: ${a.why}`
        : 'the packet names no such action',
    };
  });
  const rows: ResolveAllRow[] = [];
  for (const p of planned) {
    const base = {
      businessOperationId: p.record.businessOperationId,
      operation: p.record.operation,
      handoffReason: p.record.handoff?.reason ?? null,
      plan: p.plan,
      why: p.why,
    };
    if (opts.dryRun || p.plan === 'refused') {
      rows.push({ ...base, result: null });
      continue;
    }
    const result = await ledgerResolve(
      {
        ...opts,
        ...(action === 'resume' ? { resume: true, abandon: false } : { abandon: true, resume: false }),
        force: true,
      },
      p.record.businessOperationId,
    );
    rows.push({ ...base, result });
  }
  const ok = rows.every(
    (r) => r.plan !== 'refused' && (r.result === null || r.result.status === 'resolved' || r.result.status === 'done'),
  );
  return { dryRun: opts.dryRun === true, action, matched: matched.length, rows, ok };
}

export function resolveAllText(r: ResolveAllReport, color = false): string {
  if (r.matched === 0) return 'No handed-off operation matches: nothing to resolve.';
  const verb = r.action === 'resume' ? 'resume' : 'abandon';
  const lines = r.rows.map((x) => {
    if (x.plan === 'refused')
      return `${paint('red', '✗', color)} ${x.businessOperationId}  refused: ${x.why} (check at the provider; --force if you are sure)`;
    if (r.dryRun)
      return `${paint('cyan', '·', color)} ${x.businessOperationId}  would ${verb} (${x.handoffReason ?? '?'}; ${x.why})`;
    return resolveText(x.result!, color);
  });
  const refused = r.rows.filter((x) => x.plan === 'refused').length;
  const head = r.dryRun
    ? `Dry run: ${r.matched - refused} of ${r.matched} handed-off operation${r.matched === 1 ? '' : 's'} would be ${verb === 'resume' ? 'resumed' : 'abandoned'}${refused ? `, ${refused} refused` : ''}; nothing was sent or written.`
    : `${r.matched} handed-off operation${r.matched === 1 ? '' : 's'} matched:`;
  return [head, ...lines].join('\n');
}
