import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import {
  AdapterConfigurationError,
  type DrillFault,
  type DrillOperation,
  type RetrySafetyCard,
} from '@retrysafe/contract';
import { durationMs, isDuration } from '@retrysafe/contract/rules';
import { criteriaFor, readCard, skipReason } from './criteria.js';
import { loopTurns } from './drill-clock.js';
import { CONCURRENCY, type Drive, type DriveInput, driveScenario } from './drill-drive.js';
import { createDrillContext, type DrillContext, type Harness, startHarness } from './drill-harness.js';
import type {
  CountCriterion,
  CriterionName,
  DrillOptions,
  PassCriteria,
  ScenarioId,
  ScenarioResult,
} from './drill-types.js';
import { SCENARIO_TITLES, SCENARIOS } from './drill-types.js';
import type { FaultProxy, FaultScript, ProxyRequest } from './fault-proxy.js';

const DEFAULT_RATE_LIMITED = { kind: 'status', status: 429, retryAfterS: 2 } as const;

const phaseOf = (r: ProxyRequest): 'execute' | 'lookup' | 'other' =>
  r.label?.startsWith('execute') ? 'execute' : r.label === 'lookup' ? 'lookup' : 'other';

const meets = (c: CountCriterion, n: number) => ('exact' in c ? n === c.exact : n <= c.max && n >= (c.min ?? 0));
const describeCount = (c: CountCriterion) =>
  'exact' in c ? `exactly ${c.exact}` : c.min !== undefined ? `${c.min}–${c.max}` : `at most ${c.max}`;
const safeName = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, '_');

/** The client timeout of the late-commit scenario (the request is held until the client gives up). */
const LATE_COMMIT_TIMEOUT_MS = 400;

/** When the late-commit fault applies a request: as late as `lookup.lateApplyBound` allows, else after 10 minutes. */
function lateApplyMs(card: RetrySafetyCard): number {
  const value = card.lookup.lateApplyBound?.value;
  if (value === null) return 0;
  return isDuration(value) ? durationMs(value) : 10 * 60_000;
}

/** The Retry-After seconds a fault puts on the wire (`retryAfterS`, else its own header; 0: none); unreadable: the header. */
function retryAfterOf(f: DrillFault): number | string {
  if (typeof f !== 'object' || f.kind !== 'status') return 0;
  if (f.retryAfterS !== undefined) return f.retryAfterS;
  const header = Object.entries(f.headers ?? {}).find(([name]) => name.toLowerCase() === 'retry-after')?.[1];
  if (header === undefined) return 0;
  return /^\s*\d+\s*$/.test(header) ? Number(header) : header;
}

type ScriptInput = DrillOperation['faults'] & { card: RetrySafetyCard; timeoutMs: number };

/** The faults the proxy plays for each scenario, in order (a function: the same fault every time); none otherwise. */
const FAULT_SCRIPTS: Partial<Record<ScenarioId, (f: ScriptInput) => FaultScript>> = {
  'lost-response': () => ['drop-response'],
  'lost-response-timeout': ({ timeoutMs }) => [{ kind: 'delay', ms: timeoutMs * 5 + 1000 }],
  'lost-request': () => ['reset-before'],
  'late-commit': ({ card }) => [{ kind: 'late-commit', afterMs: lateApplyMs(card) }],
  'permanent-error': ({ permanent }) => [permanent],
  'transient-beyond-limit': (f) => () => f.transient!,
  'rate-limited': ({ rateLimited }) => [rateLimited!],
  // the provider has the work (forwarded, committed); the caller is told "in progress"
  'in-progress': ({ inProgress: f }) => [typeof f === 'object' && f.kind === 'status' ? { ...f, forward: true } : f!],
};

type ResultFields = Omit<
  ScenarioResult,
  'drill' | 'operation' | 'scenario' | 'title' | 'startedAt' | 'finishedAt' | 'receiptFile'
>;

const NOTHING_RAN = { runnerReceipts: [], handoffPackets: [], proxyRequests: [], failedCriteria: [] } as const;

const NEEDED_FAULT: Partial<Record<ScenarioId, 'transient' | 'inProgress'>> = {
  'transient-beyond-limit': 'transient',
  'in-progress': 'inProgress',
};

/** Everything a scenario needs, worked out from the card before anything is sent; or why it cannot run. */
export async function planScenario(ctx: DrillContext, operation: string, scenario: ScenarioId) {
  const o = ctx.options;
  const label = `${o.name} ${operation} ${scenario}`;
  const op: DrillOperation | undefined = o.operations[operation];
  const failed = (failure: string, criteria?: PassCriteria): Omit<ResultFields, 'notes'> => ({
    status: 'failed',
    ...(criteria ? { criteria } : {}),
    failures: [`${label}: ${failure}`],
    ...NOTHING_RAN,
  });
  if (!op) return failed('operation not declared in options.operations');
  let card: RetrySafetyCard;
  try {
    card = await readDrillCard(ctx, operation);
  } catch (err) {
    return failed(`cannot read the card: ${(err as Error).message}`);
  }
  const skip = skipReason(scenario, card);
  if (skip) return { status: 'skipped', skip, failures: [], ...NOTHING_RAN } as const;
  const rateLimited = op.faults.rateLimited ?? DEFAULT_RATE_LIMITED;
  const retryAfter = retryAfterOf(rateLimited);
  const retryAfterS = typeof retryAfter === 'number' ? retryAfter : 0;
  if (typeof retryAfter === 'string' && scenario === 'rate-limited')
    return failed(
      `operations['${operation}'].faults.rateLimited: its Retry-After header ${JSON.stringify(retryAfter)} is not a number of seconds, so the drill cannot tell the wait it must see (use retryAfterS)`,
    );
  const criteria = criteriaFor(scenario, readCard(card, o.policy), { retryAfterS, concurrency: CONCURRENCY });
  const i = ctx.nextIndex++;
  if (scenario === 'rejection-left-object' && !op.rejectedCreates) {
    const why = `the card says a rejected call can leave an object (sideEffect.rejectionMayCreate)`;
    return failed(`operations['${operation}'].rejectedCreates is required: ${why}`, criteria);
  }
  // A provider-shaped fault missing for a scenario the card says applies: a configuration failure, not a skip.
  const needed = NEEDED_FAULT[scenario];
  if (needed && op.faults[needed] === undefined) {
    const why = `the card says this scenario applies (${criteria.why.at(-1)})`;
    return failed(`operations['${operation}'].faults.${needed} is required: ${why}`, criteria);
  }
  return {
    scenario,
    operation,
    op,
    card,
    label,
    criteria,
    // late-commit only needs the client to give up: a short client timeout keeps the whole drill under a minute.
    timeoutMs: scenario === 'late-commit' ? Math.min(LATE_COMMIT_TIMEOUT_MS, ctx.timeoutMs) : ctx.timeoutMs,
    params: scenario === 'rejection-left-object' ? op.rejectedCreates!.params(i) : op.params(i),
    script: FAULT_SCRIPTS[scenario]?.({ ...op.faults, card, timeoutMs: ctx.timeoutMs, rateLimited }) ?? [],
    businessOperationId: `drill-${safeName(operation)}-${i}`,
    leaseMs: o.policy?.leaseMs ?? 30_000,
  };
}

/** Runs one scenario for one operation, writes its receipt file, and returns the result. Never throws for drill failures. */
export async function runScenario(ctx: DrillContext, operation: string, scenario: ScenarioId): Promise<ScenarioResult> {
  const o = ctx.options;
  const startedAt = new Date().toISOString();
  const receiptFile = join(ctx.outDir, `${safeName(scenario)}--${safeName(operation)}.json`);
  const notes: string[] = [];
  const finish = (r: ResultFields): ScenarioResult => {
    const result: ScenarioResult = {
      drill: o.name,
      operation,
      scenario,
      title: SCENARIO_TITLES[scenario],
      startedAt,
      finishedAt: new Date().toISOString(),
      receiptFile,
      ...r,
    };
    writeFileSync(receiptFile, JSON.stringify(result, null, 2) + '\n');
    ctx.results.push(result);
    return result;
  };
  const plan = await planScenario(ctx, operation, scenario);
  if ('status' in plan) return finish({ ...plan, notes });
  // A stall this long can fire a client timeout or end a lease ahead of the I/O that would have beaten it: a run
  // that fails across one may fail for the machine, not the adapter, so it is inconclusive and runs once more.
  const boundMs = Math.min(plan.timeoutMs, plan.leaseMs) / 2;
  let { result, stalledMs } = await runMeasured(ctx, plan, notes);
  if (result.status === 'failed' && stalledMs >= boundMs) {
    notes.push(
      `inconclusive: the process stalled ${stalledMs} ms (client timeout ${plan.timeoutMs} ms) and the run failed (${result.failures.join('; ')}): ran it again`,
    );
    ({ result, stalledMs } = await runMeasured(ctx, plan, notes));
    if (result.status === 'failed' && stalledMs >= boundMs) {
      const why = `${plan.label}: inconclusive: the process stalled ${stalledMs} ms in the second run too; the failures below may be the machine's, not the adapter's`;
      result = { ...result, failures: [why, ...result.failures] };
    }
  }
  return finish(result);
}

/** One run of a planned scenario on a fresh harness, and the longest the process stalled meanwhile. */
async function runMeasured(ctx: DrillContext, plan: DriveInput, notes: string[]) {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const result = await runOnce(ctx, plan, notes);
  delay.disable();
  return { result, stalledMs: Math.round(delay.max / 1e6) };
}

async function runOnce(ctx: DrillContext, plan: DriveInput, notes: string[]): Promise<ResultFields> {
  const { criteria, label, operation } = plan;
  let h: Harness;
  try {
    h = await startHarness(ctx, plan.script, plan.timeoutMs);
  } catch (err) {
    const failures = [`${label}: could not start sandbox/proxy/adapter: ${(err as Error).message}`];
    return { status: 'failed', criteria, failures, ...NOTHING_RAN, notes };
  }
  const failures: string[] = [];
  const d: Drive = { outcomes: [], errors: [], failures, notes, runnerReceipts: [] };
  await driveScenario(h, plan, d);
  await untilQuiet(h.proxy);
  const { observed, proxyRequests } = await observe(h, operation, d);
  const handoffPackets = [...h.packets];
  await h.close().catch((err: Error) => notes.push(`cleanup: ${err.message}`));
  const checked = unmet(plan, observed, h.proxy);
  failures.push(...checked.failures);
  return {
    status: failures.length === 0 ? 'passed' : 'failed',
    criteria,
    observed,
    failures,
    failedCriteria: checked.failedCriteria,
    runnerReceipts: d.runnerReceipts,
    handoffPackets,
    proxyRequests,
    notes,
  };
}

/** Real time without a new request that ends a run: what a detached layer sends a moment later is counted too. */
const QUIET_MS = 100;

/** Waits until no request has arrived at the proxy for QUIET_MS (at most 20 times that). */
async function untilQuiet(proxy: FaultProxy): Promise<void> {
  let seen = -1;
  for (let turns = 0; seen !== proxy.requests.length && turns < 20; turns += 1) {
    seen = proxy.requests.length;
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    // a request sent as a stalled process wakes needs turns, not time, to reach the proxy and the provider
    await loopTurns();
  }
}

/** Each criterion written before the run that the run did not meet, as a sentence, and the names of those criteria
 * (a failure outside them, a request outside the run, names none). */
function unmet(run: DriveInput, observed: ObservedValues, { requests, scriptErrors }: FaultProxy) {
  const { label, scenario, criteria, timeoutMs, script } = run;
  const { providerRecords, outcomes, errors, maxRequestsInOneExecute, waitedMs } = observed;
  const duringExecute = observed.attemptsAtProxy;
  const calls = observed.executeCalls;
  const failures: string[] = [];
  const failedCriteria = new Set<CriterionName>();
  const fail = (criterion: CriterionName | null, sentence: string) => {
    failures.push(`${label}: ${sentence}`);
    if (criterion) failedCriteria.add(criterion);
  };
  if (providerRecords !== criteria.providerRecords)
    fail('providerRecords', `providerRecords expected ${criteria.providerRecords}, observed ${providerRecords}`);
  if (!meets(criteria.attemptsAtProxy, duringExecute))
    fail(
      'attemptsAtProxy',
      `attemptsAtProxy expected ${describeCount(criteria.attemptsAtProxy)}, observed ${duringExecute} (doExecute calls ${calls}, requests ${requests.length})`,
    );
  if (maxRequestsInOneExecute > 1 || (scenario !== 'concurrent-duplicates' && duringExecute > calls)) {
    const many = maxRequestsInOneExecute > 1;
    fail(
      'oneRequestPerAttempt',
      `one retrying layer expected (1 request per doExecute), observed ${many ? maxRequestsInOneExecute : duringExecute} request(s) for ${many ? 'one doExecute call' : `${calls} doExecute call(s)`}: the SDK or adapter retries on its own`,
    );
  }
  const badOutcomes = outcomes.filter((x) => !criteria.outcome.includes(x));
  if (outcomes.length === 0 || badOutcomes.length > 0)
    fail(
      'outcome',
      `outcome expected ${criteria.outcome.join(' or ')}, observed ${outcomes.length ? [...new Set(outcomes)].join(', ') : 'none'}${errors.length ? ` (${errors[0]})` : ''}`,
    );
  const wantHandoff = criteria.handoff === 'with-outcome' ? outcomes.includes('handed-off') : criteria.handoff;
  const { handoffs, handoffReasons } = observed;
  if (wantHandoff && handoffs === 0) fail('handoff', `handoff expected, observed no handoff packet`);
  // A permanent refusal handed off as "maybe applied" passes the counts where nothing can look it up: the reason tells.
  if (scenario === 'permanent-error' && handoffs > 0 && !handoffReasons.includes('rejected'))
    fail('handoff', `handoff reason expected rejected, observed ${handoffReasons.join(', ')}`);
  if (!wantHandoff && handoffs > 0)
    fail('handoff', `no handoff expected, observed ${handoffs} packet(s) (${handoffReasons.join(', ')})`);
  if (criteria.minWaitMs !== undefined && !(waitedMs !== undefined && waitedMs >= criteria.minWaitMs))
    fail(
      'minWaitMs',
      `Retry-After not honoured: expected a wait of at least ${criteria.minWaitMs} ms before attempt 2, observed ${waitedMs ?? 'no second attempt'}`,
    );
  if (scenario === 'lost-response-timeout' && requests[0]?.clientGaveUp === false)
    fail(
      'oneRequestPerAttempt',
      `the client did not time out: the proxy held the response ${timeoutMs * 5 + 1000} ms and dropped it itself; createAdapter must pass timeoutMs (${timeoutMs} ms) to the SDK`,
    );
  const outside = requests.filter((r) => r.label === undefined).length;
  if (outside > 0)
    fail(
      null,
      `${outside} request(s) reached the provider outside any doExecute or doLookup call: something beside the runner sends on its own`,
    );
  // A fault that never met a doExecute request (a 'pass', or a request outside the run) leaves a fault-free run.
  const scripted = typeof script === 'function' || script.length > 0;
  if (scripted && !requests.some((r) => r.fault !== 'pass' && phaseOf(r) === 'execute'))
    fail(
      null,
      `the scenario's fault (${typeof script === 'function' ? 'scripted per call' : JSON.stringify(script[0])}) was never played on a request doExecute sent: the run tested no fault`,
    );
  if (scriptErrors.length > 0) fail(null, `fault script errors: ${scriptErrors.join('; ')}`);
  return { failures, failedCriteria: [...failedCriteria] };
}

/** The operation's card, read from a throwaway adapter that never sends anything. */
async function readDrillCard(ctx: DrillContext, operation: string): Promise<RetrySafetyCard> {
  const probe = await ctx.options.createAdapter({ baseUrl: 'http://127.0.0.1:9', timeoutMs: ctx.timeoutMs });
  const spec = probe.operations[operation];
  await probe.close?.();
  if (!spec)
    throw new AdapterConfigurationError(
      probe.provider,
      `operation '${operation}' is not one of the adapter's operations (${Object.keys(probe.operations).join(', ')})`,
    );
  return spec.card;
}

/** What the provider, the proxy and the tracker saw during the run. */
async function observe(h: Harness, operation: string, d: Drive) {
  const providerRecords = await Promise.resolve(h.sandbox.count(operation)).catch((err: Error) => {
    d.errors.push(`sandbox.count threw: ${err.message}`);
    return -1;
  });
  const proxyRequests = h.proxy.requests.map((r) => ({ ...r, phase: phaseOf(r) }));
  const total = proxyRequests.length;
  const duringExecute = proxyRequests.filter((r) => r.phase === 'execute').length;
  const duringLookup = proxyRequests.filter((r) => r.phase === 'lookup').length;
  const perCall: Record<string, number> = {};
  for (const { label } of proxyRequests) if (label?.startsWith('execute#')) perCall[label] = (perCall[label] ?? 0) + 1;
  const maxRequestsInOneExecute = Math.max(0, ...Object.values(perCall));
  const observed = {
    providerRecords,
    attemptsAtProxy: duringExecute,
    /** Requests at the proxy during `doExecute` calls / `doLookup` calls / outside either. */
    requests: { total, duringExecute, duringLookup, other: total - duringExecute - duringLookup },
    executeCalls: h.tracker.calls.execute,
    lookupCalls: h.tracker.calls.lookup,
    /** The largest number of proxy requests seen inside one `doExecute` call. */
    maxRequestsInOneExecute,
    outcomes: d.outcomes,
    handoffs: h.packets.length,
    handoffReasons: h.packets.map((p) => p.reason),
    /** For `rate-limited`: virtual time between the end of attempt 1 and the start of attempt 2. */
    ...(d.waitedMs !== undefined ? { waitedMs: d.waitedMs } : {}),
    errors: d.errors,
  };
  return { observed, proxyRequests };
}

export type ObservedValues = Awaited<ReturnType<typeof observe>>['observed'];

export function writeSummary(ctx: DrillContext) {
  const rs = ctx.results;
  const count = (status: ScenarioResult['status']) => rs.filter((r) => r.status === status).length;
  const summary = {
    drill: ctx.options.name,
    outDir: ctx.outDir,
    total: rs.length,
    passed: count('passed'),
    failed: count('failed'),
    skipped: count('skipped'),
    skips: rs.flatMap((r) => (r.skip ? [{ operation: r.operation, scenario: r.scenario, ...r.skip }] : [])),
    failures: rs.flatMap(({ operation, scenario, status, failures, failedCriteria }) =>
      status === 'failed' ? [{ operation, scenario, failures, failedCriteria }] : [],
    ),
    results: rs.map(({ operation, scenario, status, receiptFile }) => ({ operation, scenario, status, receiptFile })),
  };
  writeFileSync(join(ctx.outDir, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
  return summary;
}

/** Removes the drill's scratch ledgers (receipts in outDir stay). */
export function disposeDrillContext(ctx: DrillContext): void {
  rmSync(ctx.workDir, { recursive: true, force: true });
}

/** The whole drill without vitest (`retrysafe drill`): every operation × every scenario in turn; `ok`: none failed. */
export async function runDrill(options: DrillOptions) {
  const scenarios = options.scenarios ?? SCENARIOS;
  if (scenarios.length === 0) throw new TypeError('scenarios must name at least one scenario (leave it out for all)');
  for (const s of scenarios)
    if (!SCENARIOS.includes(s)) throw new TypeError(`unknown scenario '${String(s)}'; known: ${SCENARIOS.join(', ')}`);
  const ctx = createDrillContext(options);
  try {
    for (const operation of Object.keys(options.operations))
      for (const scenario of scenarios) await runScenario(ctx, operation, scenario);
  } finally {
    disposeDrillContext(ctx);
  }
  const summary = writeSummary(ctx);
  return { ok: summary.failed === 0, outDir: ctx.outDir, results: ctx.results, summary };
}
