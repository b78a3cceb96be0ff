import { existsSync } from 'node:fs';
import { loadConfigFile, type RetrysafeConfig } from '@retrysafe/config';
import type { AdapterV1, Duration, Ledger, OperationState, RetrySafetyCard } from '@retrysafe/contract';
import { PRUNABLE_STATES } from '@retrysafe/contract/ledger';
import { durationMs, formatDuration, isDuration } from '@retrysafe/contract/rules';
import { type PruneLedgerReport, pruneLedger, RunnerConfigurationError } from '@retrysafe/core';
import { defineCommand, type Options, type Parsed } from '../../../command.js';
import { UsageError } from '../../../errors.js';
import { plural } from '../../../output.js';
import { shippedCards } from '../../../registry.js';
import { shellWord, TARGET_OPTIONS, warnUnreadable, withAdapters, withLedger } from '../target.js';

export const PRUNE_OPTIONS = {
  ...TARGET_OPTIONS,
  olderThan: {
    argument: '<duration>',
    required: true,
    description: 'last changed at least this long ago, e.g. 30d, 72h',
  },
  export: {
    argument: '<file>',
    description:
      "write the pruned operations' receipts (with chain heads, as `ledger export`) to this new file before deleting them",
  },
  dryRun: { description: 'count what would be pruned; delete and write nothing (not with --export)' },
  unknownRetention: {
    argument: '<duration>',
    description:
      'the key retention to count for cards whose retention is unknown (you checked with the provider); without it their operations are never pruned',
  },
  force: {
    description:
      'prune below the key retention floor of the cards, and operations of unknown retention (you know no repeat of these operations can come)',
  },
  state: {
    argument: '<state>',
    parse: 'list',
    description: 'only these closed states (succeeded, rejected, abandoned, not-sent)',
  },
} as const satisfies Options;

/** An environment where every variable reads as a stand-in: adapters built only for their cards get no secret. */
const NO_SECRETS: NodeJS.ProcessEnv = new Proxy(
  {},
  {
    get: () => 'stand-in',
    getOwnPropertyDescriptor: () => ({ value: 'stand-in', configurable: true, enumerable: true, writable: true }),
  },
);

/** The cards of every adapter the config names, each built once to read them (never called); none is left out. */
async function configCards(config: RetrysafeConfig, file: string): Promise<RetrySafetyCard[]> {
  const cards = async (adapters: AdapterV1[]) =>
    adapters.flatMap((a) => Object.values(a.operations).map((o) => o.card));
  return withAdapters(config, file, cards, NO_SECRETS).catch((e: unknown) => {
    const why = (e instanceof Error ? e.message : String(e)).split('\n')[0];
    throw new UsageError(`${why}: its adapters' cards cannot be read, so their retention floor is not known`);
  });
}

/** pruneLedger's options as the command's flags. */
const FLAGS = { 'prune.olderThan': '--older-than', 'prune.unknownRetention': '--unknown-retention' } as const;

/** `retrysafe ledger prune`: retention of closed operations (pruneLedger in @retrysafe/core). */
export async function ledgerPrune(opts: Parsed<typeof PRUNE_OPTIONS>): Promise<PruneLedgerReport> {
  for (const s of opts.state ?? [])
    if (!PRUNABLE_STATES.includes(s as OperationState))
      throw new UsageError(`--state '${s}': only closed operations are pruned (${PRUNABLE_STATES.join(', ')})`);
  // A well-formed duration can still reach back past any date (the cut-off must be one).
  if (isDuration(opts.olderThan) && Number.isNaN(new Date(Date.now() - durationMs(opts.olderThan)).getTime()))
    throw new UsageError(`--older-than ${opts.olderThan}: reaches back past any date; nothing can be that old`);
  // Written, a dry run's export would hold operations still in the ledger, and make the real run refuse its file.
  if (opts.export && opts.dryRun)
    throw new UsageError(
      '--export: a dry run writes nothing; leave --export out to count what would be pruned (ledger export --state writes receipts without deleting)',
    );
  if (opts.export && existsSync(opts.export))
    throw new UsageError(
      `--export ${opts.export}: the file exists (prune appends receipts to a new file; move it away first)`,
    );
  const config = opts.config ? await loadConfigFile(opts.config) : null;
  const prune = async (ledger: Ledger) => {
    // The cards the CLI knows: every built-in adapter's, and those of every adapter --config names.
    const cards = [...(await shippedCards()), ...(config ? await configCards(config, opts.config!) : [])];
    return pruneLedger(ledger, {
      olderThan: opts.olderThan as Duration,
      cards,
      policy: config?.policy,
      unknownRetention: opts.unknownRetention as Duration | undefined,
      force: opts.force,
      dryRun: opts.dryRun,
      exportPath: opts.export,
      states: opts.state?.length ? (opts.state as OperationState[]) : undefined,
    }).catch((err: unknown) => {
      // The retention checks' refusals name their option (opening the ledger has its own errors).
      if (!RunnerConfigurationError.isInstance(err) || !(err.option in FLAGS)) throw err;
      const flag = FLAGS[err.option as keyof typeof FLAGS];
      const why = err.message.slice(err.option.length + 2).replaceAll('unknownRetention', flag);
      throw new UsageError(`${flag}: ${why.replace(/, or force$/, ', or --force')}`);
    });
  };
  return withLedger(opts, prune, { config, writes: !opts.dryRun });
}

export function pruneText(r: PruneLedgerReport, exportPath?: string): string {
  const parts = Object.entries(r.byState).map(([s, n]) => `${n} ${s}`);
  const what = `${plural(r.pruned, 'operation')}${parts.length ? ` (${parts.join(', ')})` : ''} last changed before ${new Date(r.before).toISOString()}`;
  const lines = [r.dryRun ? `would prune ${what}; nothing deleted (--dry-run)` : `pruned ${what}`];
  if (exportPath)
    lines.push(
      r.exported === 0
        ? `nothing to export: ${exportPath} was not written`
        : `receipts of ${plural(r.exported, 'operation')} written to ${exportPath} first (verify offline: retrysafe ledger verify --file ${shellWord(exportPath)})`,
    );
  // Exact, as the refusal says it: the floor is the key retention plus the margin and the late-apply allowance.
  const floor = formatDuration(r.floor.ms);
  if (r.floor.below) lines.push(`below the key retention floor of ${r.floor.card} (${floor}): forced`);
  else if (r.floor.card) lines.push(`key retention floor: ${floor} (${r.floor.card})`);
  if (r.floor.unknownHeld.length > 0)
    lines.push(`operations of ${r.floor.unknownHeld.join(', ')}, whose key retention is unknown: forced`);
  return lines.join('\n');
}

export const ledgerPruneCommand = defineCommand({
  name: 'ledger prune',
  description:
    'retention: delete closed operations (succeeded, rejected, abandoned, not-sent) older than a duration, with their receipts; never open or handed-off ones',
  options: PRUNE_OPTIONS,
  helpAfter:
    '\n' +
    "A closed operation must stay in the ledger at least as long as the provider keeps its idempotency key (the card's retention.minimum) plus the clock-skew margin and the late-apply allowance (lookup.lateApplyBound, one more margin when unknown): " +
    "prune refuses a younger --older-than than the longest such retention among the cards it knows (the built-in adapters', and --config's), unless --force. " +
    'A card whose retention is unknown sets no floor: while the ledger holds old operations of it prune refuses, unless --unknown-retention or --force. ' +
    'After a record is pruned a repeat of the same business operation is a new one. See docs/retention.md.',
  async run({ print, io }, o) {
    const r = await ledgerPrune(o);
    // A row it could not read is kept, and named: exit 1.
    warnUnreadable(io, r.unreadable);
    return print(o, r, () => pruneText(r, o.export), r.unreadable.length === 0);
  },
});
