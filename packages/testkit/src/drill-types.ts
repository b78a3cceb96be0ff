import type { DrillSetup, HandoffPacket, Receipt } from '@retrysafe/contract';
import type { PolicyOverrides } from '@retrysafe/core';
import type { criteriaFor } from './criteria.js';
import type { ObservedValues } from './drill.js';
import type { ProxyRequest } from './fault-proxy.js';

/** A drill setup (the contract's `DrillSetup`, from an adapter's `./sandbox`) plus how this run should go. */
export interface ConformanceOptions extends DrillSetup {
  /** Runner policy overrides; unset fields come from the operation's card. */
  readonly policy?: PolicyOverrides;
  /** Where receipts go: one JSON file per scenario × operation plus `summary.json`. Default: a new temp dir. */
  readonly outDir?: string;
  /** The runner's jitter seed (default 1). */
  readonly seed?: number;
}

/** Every scenario of the drill, in the order it runs, with its title. */
export const SCENARIO_TITLES = {
  'lost-response': 'lost response after commit (connection reset) ⇒ one record',
  'lost-response-timeout': 'lost response after commit (client timeout) ⇒ one record',
  'lost-request': 'lost request (reset before it arrived) ⇒ no blind resend',
  'concurrent-duplicates': '16 concurrent duplicates ⇒ one record, one request',
  'changed-intent': 'same id, changed intent ⇒ ConflictError, nothing sent',
  'permanent-error': 'permanent error ⇒ exactly one attempt and a handoff',
  'transient-beyond-limit': 'transient beyond the limit ⇒ exactly maxAttempts, then handoff',
  'rate-limited': '429 + Retry-After ⇒ waited at least Retry-After',
  'key-past-retention': 'key past retention ⇒ lookup or handoff, never a blind resend',
  'in-progress': 'in progress at the provider ⇒ polled, one work item',
  'crash-after-dispatch': 'crash after dispatch ⇒ recover() reconciles to one record',
  'late-commit': 'late commit: the provider applies the request after the client timed out ⇒ one record',
  'rejection-left-object':
    'a rejection that left an object, then a corrected request ⇒ still one object, the packet names it',
} as const;
export type ScenarioId = keyof typeof SCENARIO_TITLES;
export const SCENARIOS = Object.keys(SCENARIO_TITLES) as readonly ScenarioId[];

export interface DrillOptions extends ConformanceOptions {
  /** Run only these scenarios (the CLI's `--scenario`); every scenario by default. */
  readonly scenarios?: readonly ScenarioId[];
}

export type DrillOutcome = 'done' | 'handed-off' | 'in-progress' | 'conflict' | 'error';

export type CountCriterion = { readonly exact: number } | { readonly min?: number; readonly max: number };

/** Pass criteria: data computed from the card BEFORE the run, written into the receipt. */
export type PassCriteria = ReturnType<typeof criteriaFor>;
/** A pass criterion the drill checks after the run, by its name in `PassCriteria`. */
export type CriterionName = keyof Pick<
  PassCriteria,
  'providerRecords' | 'attemptsAtProxy' | 'oneRequestPerAttempt' | 'outcome' | 'handoff' | 'minWaitMs'
>;

export interface ScenarioSkip {
  /** The card field that made the scenario inapplicable, e.g. `retention.minimum`. */
  readonly cardField: string;
  readonly reason: string;
}

export interface ScenarioResult {
  readonly drill: string;
  readonly operation: string;
  readonly scenario: ScenarioId;
  readonly title: string;
  readonly status: 'passed' | 'failed' | 'skipped';
  readonly skip?: ScenarioSkip;
  readonly criteria?: PassCriteria;
  readonly observed?: ObservedValues;
  /** Each unmet criterion as a sentence naming the scenario and the counts. */
  readonly failures: readonly string[];
  /** The criteria (their names in `criteria`) the run did not meet; a failure outside them (a drive that could not
   * finish, a request outside the run) names none. */
  readonly failedCriteria: readonly CriterionName[];
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly receiptFile: string;
  readonly runnerReceipts: readonly Receipt[];
  readonly handoffPackets: readonly HandoffPacket[];
  readonly proxyRequests: readonly (ProxyRequest & { readonly phase: 'execute' | 'lookup' | 'other' })[];
  readonly notes: readonly string[];
}
