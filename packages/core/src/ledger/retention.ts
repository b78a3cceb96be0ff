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
import { durationMs, formatDuration, retentionFloor } from '@retrysafe/contract/rules';
import { RunnerConfigurationError } from '../errors/runner-configuration-error.js';
import { receiptLines } from '../receipts.js';
import type { PolicyOverrides } from '../retry-policy.js';

/** `states`, `dryRun` and `batchSize` go to the ledger's prune as they are. */
export interface PruneLedgerOptions extends Pick<PruneOptions, 'states' | 'dryRun' | 'batchSize'> {
  /** Closed operations whose last change is at least this old (a Duration like `30d`, or ms). */
  readonly olderThan: Duration | number;
  /** The cards whose key retention sets the floor; without cards there is no floor. */
  readonly cards?: readonly RetrySafetyCard[];
  /** The runner's policy: its `clockSkewMarginMs`, when set, is the margin in force (as for the runner). */
  readonly policy?: Pick<PolicyOverrides, 'clockSkewMarginMs'>;
  /** Prune below the floor the cards set (you know no repeat of these operations can come). */
  readonly force?: boolean;
  /** Append each pruned operation's receipts and chain head here before deleting it (as `ledger export` writes). */
  readonly exportPath?: string;
  /** Epoch ms the age is counted from (default Date.now()). */
  readonly now?: number;
}

/** The ledger's report, the cut-off (`before`, epoch ms), the cards' floor and whether `force` went below it. */
export type PruneLedgerReport = Awaited<ReturnType<typeof pruneLedger>>;

/** Deletes closed operations older than `olderThan` (never below the cards' floor unless `force`), exporting first if asked. */
export async function pruneLedger(ledger: Ledger, options: PruneLedgerOptions) {
  if (typeof ledger.prune !== 'function')
    throw new LedgerError(
      'this ledger has no prune(): retention needs a ledger that implements Ledger.prune (memory, SQLite, PostgreSQL)',
    );
  const refuse = (why: string) => new RunnerConfigurationError('prune.olderThan', why);
  let olderThanMs: number;
  try {
    olderThanMs = typeof options.olderThan === 'number' ? options.olderThan : durationMs(options.olderThan);
  } catch (err) {
    throw refuse((err as Error).message);
  }
  if (!Number.isFinite(olderThanMs) || olderThanMs < 0)
    throw refuse(`expected a duration ≥ 0, got ${String(options.olderThan)}`);
  const margin = options.policy?.clockSkewMarginMs;
  if (margin !== undefined && !(Number.isFinite(margin) && margin >= 0))
    throw new RunnerConfigurationError(
      'policy.clockSkewMarginMs',
      `expected a finite number ≥ 0, got ${String(margin)}`,
    );
  const floor = retentionFloor(options.cards ?? [], options.policy);
  if (olderThanMs < floor.ms && options.force !== true)
    throw refuse(
      `${formatDuration(olderThanMs)} is younger than the key retention of ${floor.card} plus its clock-skew margin in force (${formatDuration(floor.ms)}): a record pruned while the provider still holds its key loses the adopt path. Use at least ${formatDuration(floor.ms)}, or force`,
    );
  const before = (options.now ?? Date.now()) - olderThanMs;
  let exported = 0;
  const { states, dryRun, batchSize, exportPath } = options;
  const onPrune = exportPath
    ? async (record: OperationRecord, receipts: readonly Receipt[]) => {
        appendFileSync(exportPath, receiptLines(record.businessOperationId, receipts, record), 'utf8');
        exported++;
      }
    : undefined;
  const report = await ledger.prune({ before, states, dryRun, onPrune, batchSize });
  return { ...report, before, olderThanMs, floor: { ...floor, forced: olderThanMs < floor.ms }, exported };
}
