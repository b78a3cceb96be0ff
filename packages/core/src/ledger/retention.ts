import { appendFileSync } from 'node:fs';
import {
  type Duration,
  type Ledger,
  LedgerError,
  type OperationRecord,
  type PruneOptions,
  type Receipt,
  type RetrySafetyCard,
} from '@retrysafe/contract';
import { checkPruneOptions } from '@retrysafe/contract/ledger';
import { durationMs, formatDuration, marginProblem, retentionFloor } from '@retrysafe/contract/rules';
import { RunnerConfigurationError } from '../errors/runner-configuration-error.js';
import { namingPath } from '../files.js';
import { receiptLines } from '../receipts.js';
import type { PolicyOverrides } from '../retry-policy.js';

export interface PruneLedgerOptions extends Pick<PruneOptions, 'states' | 'dryRun' | 'batchSize'> {
  /** Closed operations whose last change is at least this old (a Duration like `30d`, or ms). */
  readonly olderThan: Duration | number;
  /** The cards you run with: their key retention sets the floor (`[]`: you know no key outlives a record). */
  readonly cards: readonly RetrySafetyCard[];
  /** The runner's policy: its `clockSkewMarginMs`, when set, is the margin in force (as for the runner). */
  readonly policy?: Pick<PolicyOverrides, 'clockSkewMarginMs'>;
  /** The key retention to count for cards whose `retention.minimum` is unknown (you checked with the provider).
   * Without it, the prune is refused while the ledger holds old operations of such a card. */
  readonly unknownRetention?: Duration | number;
  /** Prune below the floor the cards set, and operations of unknown retention (no repeat of them can come). */
  readonly force?: boolean;
  /** Append each pruned operation's receipts and chain head here before deleting it (as `ledger export` writes). */
  readonly exportPath?: string;
  /** Default Date.now(). */
  readonly now?: number;
}

/** The ledger's report, the cut-off (`before`, epoch ms) and the cards' floor: `below` (olderThan is below it),
 * `unknownHeld` (operations of unknown key retention old enough to prune) and `forced` (force let either through);
 * `unreadable`: the ids of rows it could not read, kept. */
export type PruneLedgerReport = Awaited<ReturnType<typeof pruneLedger>>;

function durationOption(option: string, value: Duration | number): number {
  const refuse = (why: string) => new RunnerConfigurationError(`prune.${option}`, why);
  let ms: number;
  try {
    ms = typeof value === 'number' ? value : durationMs(value);
  } catch (err) {
    throw refuse((err as Error).message);
  }
  if (!Number.isFinite(ms) || ms < 0) throw refuse(`expected a duration ≥ 0, got ${String(value)}`);
  return ms;
}

/** The operations of cards of unknown key retention that the ledger may hold prunable: the oldest such operation
 * created before the cut-off is enough (updatedAt ≥ createdAt). */
async function unknownRetentionHeld(
  ledger: Ledger,
  unknown: readonly RetrySafetyCard[],
  before: number,
  states: PruneOptions['states'],
  unreadable: Set<string>,
): Promise<string[]> {
  const closed = checkPruneOptions({ before, states });
  const held: string[] = [];
  for (const operation of new Set(unknown.map((c) => c.operation))) {
    const seen = unreadable.size;
    const onUnreadable = (id: string) => void unreadable.add(id);
    const [oldest] = await ledger.list({ operation, states: closed, limit: 1, onUnreadable });
    // A row of it that cannot be read may be an old one: counted as held, as its age cannot be known.
    if (unreadable.size > seen || (oldest !== undefined && oldest.createdAt < before)) held.push(operation);
  }
  return held;
}

/** Deletes closed operations older than `olderThan` (never below the cards' floor unless `force`, never those of a
 * card with an unknown retention unless `unknownRetention` or `force`), exporting first if asked. */
export async function pruneLedger(ledger: Ledger, options: PruneLedgerOptions) {
  if (typeof ledger.prune !== 'function')
    throw new LedgerError(
      'this ledger has no prune(): retention needs a ledger that implements Ledger.prune (memory, SQLite, PostgreSQL)',
    );
  const olderThanMs = durationOption('olderThan', options.olderThan);
  const unknownMs =
    options.unknownRetention === undefined ? undefined : durationOption('unknownRetention', options.unknownRetention);
  const marginRefused = marginProblem(options.policy?.clockSkewMarginMs);
  if (marginRefused !== null) throw new RunnerConfigurationError('policy.clockSkewMarginMs', marginRefused);
  // A forgotten list would prune at any age: no floor only when the caller says so.
  if (!Array.isArray(options.cards))
    throw new RunnerConfigurationError(
      'prune.cards',
      'give the cards you run with (their key retention sets the floor), or [] if you know no key outlives a record',
    );
  const { unknown, ...floor } = retentionFloor(options.cards, options.policy, unknownMs);
  const force = options.force === true;
  const below = olderThanMs < floor.ms;
  if (below && !force)
    throw new RunnerConfigurationError(
      'prune.olderThan',
      `${formatDuration(olderThanMs)} is younger than the key retention of ${floor.card} plus its clock-skew margin in force and late-apply allowance (${formatDuration(floor.ms)}): a record pruned while the provider still holds its key loses the adopt path. Use at least ${formatDuration(floor.ms)}, or force`,
    );
  // Whole ms, as every ledger takes a time: rounded down, so nothing younger than olderThan goes.
  const before = Math.floor((options.now ?? Date.now()) - olderThanMs);
  const { states, dryRun, batchSize, exportPath } = options;
  // Looked up under force too: the report says what force let through. An unreadable row is kept and named.
  const unreadable = new Set<string>();
  const onUnreadable = (id: string) => void unreadable.add(id);
  const unknownHeld = await unknownRetentionHeld(ledger, unknown, before, states, unreadable);
  if (unknownHeld.length > 0 && !force)
    throw new RunnerConfigurationError(
      'prune.unknownRetention',
      `the ledger holds closed operations of ${unknownHeld.join(', ')}, whose card does not know how long the provider keeps its key (retention.minimum unknown): pruned, a repeat could meet a key still held without its record. Give the retention you checked with the provider as unknownRetention, or force`,
    );
  let exported = 0;
  const onPrune = exportPath
    ? async (record: OperationRecord, receipts: readonly Receipt[]) => {
        try {
          appendFileSync(exportPath, receiptLines(record.businessOperationId, receipts, record), 'utf8');
        } catch (e) {
          throw namingPath(e, exportPath);
        }
        exported++;
      }
    : undefined;
  const report = await ledger.prune({ before, states, dryRun, onPrune, batchSize, onUnreadable });
  // `forced`: the one answer to "did force let anything through", below the floor or past an unknown retention.
  const forced = below || unknownHeld.length > 0;
  const floorReport = { ...floor, forced, below, unknownHeld };
  return { ...report, before, olderThanMs, floor: floorReport, exported, unreadable: [...unreadable] };
}
