import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AdapterConfigurationError,
  ConflictError,
  type AdapterV1,
  type HandoffPacket,
  type Ledger,
  type Receipt,
  type RetrySafetyCard,
} from '@retrysafe/contract';
import { durationMs } from '@retrysafe/contract/rules';
import { callbackHandoffSink, createMemoryLedger, createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { criteriaFor, readCard, skipReason } from './criteria.js';
import { createDrillClock, realClock, seededRandom, type DrillClock } from './drill-clock.js';
import type {
  ConformanceOptions,
  CountCriterion,
  DrillOperation,
  DrillOptions,
  DrillOutcome,
  DrillReport,
  DrillSandbox,
  DrillSummary,
  ObservedValues,
  PassCriteria,
  ScenarioId,
  ScenarioResult,
} from './drill-types.js';
import { SCENARIOS } from './drill-types.js';
import { startFaultProxy, type Fault, type FaultProxy, type FaultScript, type ProxyRequest } from './fault-proxy.js';
import { outcomeOf, rejectionLeftObject } from './drill-rejection.js';

/**
 * The client timeout a drill hands to createAdapter unless the setup says otherwise. Generous on
 * purpose: on a loaded 2-core machine a 400 ms timeout made lookups time out and "cannot tell";
 * the delay fault holds its response past whatever timeout is used.
 */
export const DEFAULT_DRILL_TIMEOUT_MS = 1500;

export const SCENARIO_TITLES: Readonly<Record<ScenarioId, string>> = {
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
  'rejection-left-object': 'a rejection that left an object, then a corrected request ⇒ still one object, the packet names it',
};

/** The client timeout of the late-commit scenario (the request is held until the client gives up). */
const LATE_COMMIT_TIMEOUT_MS = 400;
const DEFAULT_RATE_LIMITED: Fault = { kind: 'status', status: 429, retryAfterS: 2 };
const CONCURRENCY = 16;

type Phase = 'execute' | 'lookup' | 'other';

/** Wraps the adapter to see every doExecute/doLookup call and attribute proxy requests to them. */
interface Tracker {
  executeCalls: number;
  lookupCalls: number;
  activeExecute: number;
  activeLookup: number;
  /** Virtual-clock times of each doExecute call: [start, end]. */
  executeSpans: { start: number; end?: number }[];
  /** After the provider answered, never return (the worker "dies" before recording the outcome). */
  dieAfterExecute: boolean;
  /** Set when a doExecute call "died" after the provider answered. */
  died: boolean;
}

function instrument(inner: AdapterV1, proxy: FaultProxy, clock: { now(): number }, t: Tracker): AdapterV1 {
  const relabel = () => {
    if (t.activeExecute > 0 && t.activeLookup > 0) proxy.label = 'ambiguous';
    else if (t.activeExecute === 1) proxy.label = `execute#${t.executeCalls}`;
    else if (t.activeExecute > 1) proxy.label = 'execute*';
    else if (t.activeLookup > 0) proxy.label = 'lookup';
    else proxy.label = undefined;
  };
  const wrapped: AdapterV1 = {
    specificationVersion: inner.specificationVersion,
    provider: inner.provider,
    operations: inner.operations,
    deriveProviderKey: (op, id) => inner.deriveProviderKey(op, id),
    async doExecute(op, params, ctx) {
      t.executeCalls += 1;
      t.activeExecute += 1;
      const span: { start: number; end?: number } = { start: clock.now() };
      t.executeSpans.push(span);
      relabel();
      const leave = () => {
        span.end = clock.now();
        t.activeExecute -= 1;
        relabel();
      };
      let outcome;
      try {
        outcome = await inner.doExecute(op, params, ctx);
      } finally {
        leave();
      }
      if (t.dieAfterExecute) {
        // The worker "dies" here: the provider answered, the runner never hears of it.
        t.died = true;
        return await new Promise<never>(() => {});
      }
      return outcome;
    },
    async doLookup(op, ctx) {
      t.lookupCalls += 1;
      t.activeLookup += 1;
      relabel();
      try {
        return await inner.doLookup(op, ctx);
      } finally {
        t.activeLookup -= 1;
        relabel();
      }
    },
  };
  if (inner.close) wrapped.close = () => inner.close!();
  return wrapped;
}

function phaseOf(r: ProxyRequest): Phase {
  if (r.label?.startsWith('execute')) return 'execute';
  if (r.label === 'lookup') return 'lookup';
  return 'other';
}

function meets(c: CountCriterion, n: number): boolean {
  if ('exact' in c) return n === c.exact;
  return n <= c.max && n >= (c.min ?? 0);
}

function describeCount(c: CountCriterion): string {
  return 'exact' in c ? `exactly ${c.exact}` : c.min !== undefined ? `${c.min}–${c.max}` : `at most ${c.max}`;
}

interface Harness {
  sandbox: DrillSandbox;
  proxy: FaultProxy;
  adapter: AdapterV1;
  inner: AdapterV1;
  tracker: Tracker;
  clock: DrillClock;
  packets: HandoffPacket[];
  ledgers: Ledger[];
  ledgerPath: string | null;
  makeLedger(): Ledger;
  makeRunner(ledger: Ledger, clock?: { now(): number; sleep(ms: number): Promise<void> }, owner?: string): ReturnType<typeof createRunner>;
  close(): Promise<void>;
}

/** Shared state of one drill: where receipts go, which index of params is next, the results so far. */
export interface DrillContext {
  readonly options: ConformanceOptions;
  readonly outDir: string;
  readonly workDir: string;
  nextIndex: number;
  readonly results: ScenarioResult[];
}

export function createDrillContext(options: ConformanceOptions): DrillContext {
  if (!options || typeof options !== 'object') throw new TypeError('runConformance/runDrill: options required');
  if (typeof options.name !== 'string' || !/^[A-Za-z0-9._-]+$/.test(options.name)) throw new TypeError('name must be a short identifier (letters, digits, . _ -)');
  if (typeof options.createAdapter !== 'function') throw new TypeError('createAdapter must be a function ({ baseUrl, timeoutMs }) => AdapterV1');
  if (typeof options.startSandbox !== 'function') throw new TypeError('startSandbox must be a function returning { url, count, close }');
  if (!options.operations || Object.keys(options.operations).length === 0) throw new TypeError('operations must declare at least one operation to drill');
  for (const [op, d] of Object.entries(options.operations)) {
    if (typeof d.params !== 'function' || typeof d.changeIntent !== 'function') throw new TypeError(`operations['${op}']: params(i) and changeIntent(params) are required`);
    if (!d.faults || d.faults.permanent === undefined) throw new TypeError(`operations['${op}'].faults.permanent is required (an answer the adapter classifies as rejected)`);
  }
  const outDir = options.outDir ?? mkdtempSync(join(tmpdir(), `retrysafe-drill-${options.name}-`));
  mkdirSync(outDir, { recursive: true });
  const workDir = mkdtempSync(join(tmpdir(), `retrysafe-drill-ledgers-`));
  return { options, outDir, workDir, nextIndex: 0, results: [] };
}

async function startHarness(ctx: DrillContext, faults: FaultScript, timeoutOverrideMs?: number): Promise<Harness> {
  const o = ctx.options;
  const clock = createDrillClock();
  const sandbox = await o.startSandbox({ clock });
  let proxy: FaultProxy | undefined;
  try {
    proxy = await startFaultProxy({ target: sandbox.url, faults, clock, ...(o.recordHeaders ? { recordHeaders: o.recordHeaders } : {}) });
    const inner = await o.createAdapter({ baseUrl: proxy.url, timeoutMs: timeoutOverrideMs ?? o.timeoutMs ?? DEFAULT_DRILL_TIMEOUT_MS });
    const tracker: Tracker = { executeCalls: 0, lookupCalls: 0, activeExecute: 0, activeLookup: 0, executeSpans: [], dieAfterExecute: false, died: false };
    const adapter = instrument(inner, proxy, clock, tracker);
    const packets: HandoffPacket[] = [];
    const ledgers: Ledger[] = [];
    const ledgerPath = (o.ledger ?? 'sqlite') === 'sqlite' ? join(ctx.workDir, `ledger-${ctx.nextIndex}-${Date.now()}.db`) : null;
    let memory: Ledger | null = null;
    const p = proxy;
    const h: Harness = {
      sandbox,
      proxy: p,
      adapter,
      inner,
      tracker,
      clock,
      packets,
      ledgers,
      ledgerPath,
      makeLedger() {
        // SQLite: a new connection to the same file (a fresh process would open it the same way).
        // Memory: the one store, shared (it stands for the durable store).
        if (ledgerPath === null) {
          memory ??= createMemoryLedger();
          if (!ledgers.includes(memory)) ledgers.push(memory);
          return memory;
        }
        const l = createSqliteLedger({ path: ledgerPath });
        ledgers.push(l);
        return l;
      },
      makeRunner(ledger, runClock = clock, owner) {
        return createRunner({
          ledger,
          handoff: callbackHandoffSink((packet: HandoffPacket) => {
            packets.push(packet);
          }),
          ...(o.policy ? { policy: o.policy } : {}),
          clock: runClock,
          random: seededRandom(o.seed ?? 1),
          ...(owner ? { owner } : {}),
        });
      },
      async close() {
        for (const l of ledgers) await l.close().catch(() => {});
        await inner.close?.().catch(() => {});
        await p.close();
        await sandbox.close();
      },
    };
    return h;
  } catch (err) {
    await proxy?.close();
    await sandbox.close();
    throw err;
  }
}


function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, '_');
}

/**
 * How long after a request arrives the late-commit fault lets the provider apply it: the card's
 * `lookup.lateApplyBound` when it declares one (as late as the card allows), else 10 minutes (a card
 * that cannot say must not let a "not found" prove absence at all).
 */
export function lateApplyMs(card: RetrySafetyCard): number {
  const fact = (card.lookup as unknown as Record<string, unknown>)['lateApplyBound'];
  const value = typeof fact === 'object' && fact !== null && 'value' in fact ? (fact as { value: unknown }).value : fact;
  if (value === null) return 0;
  if (typeof value === 'string' && value !== 'unknown') {
    try {
      return durationMs(value as Parameters<typeof durationMs>[0]);
    } catch {
      // not a duration: treat as unknown
    }
  }
  return 10 * 60_000;
}

/** Runs one scenario for one operation, writes its receipt file, and returns the result. Never throws for drill failures. */
export async function runScenario(ctx: DrillContext, operation: string, scenario: ScenarioId): Promise<ScenarioResult> {
  const o = ctx.options;
  const op: DrillOperation | undefined = o.operations[operation];
  const startedAt = new Date().toISOString();
  const receiptFile = join(ctx.outDir, `${safeName(scenario)}--${safeName(operation)}.json`);
  const title = SCENARIO_TITLES[scenario];
  const notes: string[] = [];
  const failures: string[] = [];
  const label = `${o.name} ${operation} ${scenario}`;
  const finish = (r: Omit<ScenarioResult, 'drill' | 'operation' | 'scenario' | 'title' | 'startedAt' | 'finishedAt' | 'receiptFile'>): ScenarioResult => {
    const result: ScenarioResult = { drill: o.name, operation, scenario, title, startedAt, finishedAt: new Date().toISOString(), receiptFile, ...r };
    writeFileSync(receiptFile, JSON.stringify(result, null, 2) + '\n');
    ctx.results.push(result);
    return result;
  };
  if (!op) return finish({ status: 'failed', failures: [`${label}: operation not declared in options.operations`], runnerReceipts: [], handoffPackets: [], proxyRequests: [], notes });

  // Read the card from a throwaway adapter, before anything runs.
  let card: RetrySafetyCard;
  try {
    const probe = await o.createAdapter({ baseUrl: 'http://127.0.0.1:9', timeoutMs: o.timeoutMs ?? DEFAULT_DRILL_TIMEOUT_MS });
    const spec = probe.operations[operation];
    await probe.close?.();
    if (!spec) throw new AdapterConfigurationError(probe.provider, `operation '${operation}' is not one of the adapter's operations (${Object.keys(probe.operations).join(', ')})`);
    card = spec.card;
  } catch (err) {
    return finish({ status: 'failed', failures: [`${label}: cannot read the card: ${(err as Error).message}`], runnerReceipts: [], handoffPackets: [], proxyRequests: [], notes });
  }

  const skip = skipReason(scenario, card);
  if (skip) return finish({ status: 'skipped', skip, failures: [], runnerReceipts: [], handoffPackets: [], proxyRequests: [], notes });

  const abilities = readCard(card, o.policy);
  const rateLimited = op.faults.rateLimited ?? DEFAULT_RATE_LIMITED;
  const retryAfterS = typeof rateLimited === 'object' && rateLimited.kind === 'status' ? (rateLimited.retryAfterS ?? 0) : 0;
  const criteria: PassCriteria = criteriaFor(scenario, card, abilities, { retryAfterS, concurrency: CONCURRENCY });

  // Missing provider-shaped faults for a scenario the card says applies: a configuration failure, not a skip.
  const needFault = (f: Fault | undefined, field: string): Fault | null => {
    if (f !== undefined) return f;
    failures.push(`${label}: operations['${operation}'].faults.${field} is required: the card says this scenario applies (${criteria.why.at(-1)})`);
    return null;
  };

  const i = ctx.nextIndex++;
  if (scenario === 'rejection-left-object' && !op.rejectedCreates) {
    failures.push(`${label}: operations['${operation}'].rejectedCreates is required: the card says a rejected call can leave an object (sideEffect.rejectionMayCreate)`);
    return finish({ status: 'failed', criteria, failures, runnerReceipts: [], handoffPackets: [], proxyRequests: [], notes });
  }
  const params = scenario === 'rejection-left-object' ? op.rejectedCreates!.params(i) : op.params(i);
  let script: FaultScript = [];
  const timeoutMs = o.timeoutMs ?? DEFAULT_DRILL_TIMEOUT_MS;
  switch (scenario) {
    case 'lost-response':
      script = ['drop-response'];
      break;
    case 'lost-response-timeout':
      script = [{ kind: 'delay', ms: timeoutMs * 5 + 1000 }];
      break;
    case 'lost-request':
      script = ['reset-before'];
      break;
    case 'late-commit':
      // Applied as late as the card allows (lookup.lateApplyBound), or much later when the card cannot say.
      script = [{ kind: 'late-commit', afterMs: lateApplyMs(card) }];
      break;
    case 'permanent-error':
      script = [op.faults.permanent];
      break;
    case 'transient-beyond-limit': {
      const f = needFault(op.faults.transient, 'transient');
      if (f) script = () => f;
      break;
    }
    case 'rate-limited':
      script = [rateLimited];
      break;
    case 'in-progress': {
      const f = needFault(op.faults.inProgress, 'inProgress');
      // the provider has the work (forwarded, committed); the caller is told "in progress"
      if (f) script = [typeof f === 'object' && f.kind === 'status' ? { ...f, forward: true } : f];
      break;
    }
    default:
      script = [];
  }
  if (failures.length > 0) return finish({ status: 'failed', criteria, failures, runnerReceipts: [], handoffPackets: [], proxyRequests: [], notes });

  let h: Harness;
  try {
    // late-commit only needs the client to give up: a short client timeout keeps the whole drill under a minute.
    h = await startHarness(ctx, script, scenario === 'late-commit' ? Math.min(LATE_COMMIT_TIMEOUT_MS, timeoutMs) : undefined);
  } catch (err) {
    return finish({ status: 'failed', criteria, failures: [`${label}: could not start sandbox/proxy/adapter: ${(err as Error).message}`], runnerReceipts: [], handoffPackets: [], proxyRequests: [], notes });
  }

  const outcomes: DrillOutcome[] = [];
  const errors: string[] = [];
  let runnerReceipts: Receipt[] = [];
  let waitedMs: number | undefined;
  let executeCallsBeforeRecovery = 0;
  let requestsBeforeRecovery = 0;
  try {
    const run = async (runner: ReturnType<typeof createRunner>, p: unknown, businessOperationId?: string): Promise<DrillOutcome> => {
      try {
        const r = await runner.run(h.adapter, operation, { params: p, ...(businessOperationId ? { businessOperationId } : {}) });
        return outcomeOf(r);
      } catch (err) {
        if (ConflictError.isInstance(err)) return 'conflict';
        errors.push(`${(err as Error).name}: ${(err as Error).message}`);
        return 'error';
      }
    };

    if (scenario === 'concurrent-duplicates') {
      const ledger = h.makeLedger();
      const runners = Array.from({ length: CONCURRENCY }, (_, k) => h.makeRunner(ledger, realClock, `drill-worker-${k}`));
      const results = await Promise.all(
        runners.map(async (runner) => {
          try {
            return await runner.run(h.adapter, operation, { params });
          } catch (err) {
            errors.push(`${(err as Error).name}: ${(err as Error).message}`);
            return null;
          }
        }),
      );
      for (const r of results) outcomes.push(r ? outcomeOf(r) : 'error');
      const refs = new Set(results.filter((r): r is NonNullable<typeof r> & { status: 'done' } => r?.status === 'done').map((r) => JSON.stringify((r as { providerRef?: unknown }).providerRef ?? null)));
      if (!outcomes.includes('done')) failures.push(`${label}: none of the ${CONCURRENCY} concurrent runs finished (outcomes: ${outcomes.join(', ')})`);
      if (refs.size > 1) failures.push(`${label}: concurrent runs finished with ${refs.size} different provider references: ${[...refs].join(', ')}`);
    } else if (scenario === 'changed-intent') {
      const runner = h.makeRunner(h.makeLedger());
      const id = `drill-${safeName(operation)}-${i}`;
      const first = await run(runner, params, id);
      notes.push(`first run with businessOperationId ${id}: ${first}`);
      if (first !== 'done') failures.push(`${label}: setup run should finish 'done' but was '${first}'`);
      const requestsBefore = h.proxy.requests.length;
      outcomes.push(await run(runner, op.changeIntent(params), id));
      const sent = h.proxy.requests.length - requestsBefore;
      if (sent !== 0) failures.push(`${label}: the conflicting call sent ${sent} request(s) to the provider; expected none`);
    } else if (scenario === 'rejection-left-object') {
      await rejectionLeftObject(h, operation, params, op.rejectedCreates!.corrected(params), { label, outcomes, failures, notes, errors });
    } else if (scenario === 'crash-after-dispatch' || scenario === 'key-past-retention') {
      // Worker A dispatches; the provider commits; A dies before recording the outcome.
      const ledgerA = h.makeLedger();
      const runnerA = h.makeRunner(ledgerA, h.clock, 'drill-worker-A');
      h.tracker.dieAfterExecute = true;
      void runnerA.run(h.adapter, operation, { params }).catch(() => {});
      // wait until the adapter has the provider's answer (A then hangs for ever: it "died")
      for (let waited = 0; !h.tracker.died && waited < 20_000; waited += 5) await new Promise((r) => setTimeout(r, 5));
      if (!h.tracker.died) throw new Error('worker A never reached the provider');
      h.tracker.dieAfterExecute = false;
      executeCallsBeforeRecovery = h.tracker.executeCalls;
      requestsBeforeRecovery = h.proxy.requests.length;
      const leaseMs = o.policy?.leaseMs ?? 30_000;
      if (scenario === 'key-past-retention') {
        const retention = card.retention.minimum.value;
        // unknown retention: a week, well past any retention providers publish
        const retentionMs = retention === 'unknown' || retention === null ? 7 * 86_400_000 : durationMs(retention);
        h.clock.advance(retentionMs + leaseMs + 1000);
        if (h.sandbox.expireKeys) await h.sandbox.expireKeys();
        else notes.push('the sandbox has no expireKeys(): the provider still holds the key, so only the runner\'s clock is past retention');
      } else {
        h.clock.advance(leaseMs + 1000);
      }
      // Worker B: a fresh runner on a fresh ledger connection (SQLite: same file) recovers.
      const runnerB = h.makeRunner(h.makeLedger(), h.clock, 'drill-worker-B');
      try {
        const reports = await runnerB.recover({ adapters: [h.adapter] });
        notes.push(`recover(): ${JSON.stringify(reports.map((r: { from: string; to: string; action: string }) => ({ from: r.from, to: r.to, action: r.action })))}`);
        if (reports.length === 0) outcomes.push('error'), errors.push('recover() found nothing to recover');
        for (const r of reports as { to: string }[]) outcomes.push(r.to === 'succeeded' ? 'done' : r.to === 'handed-off' ? 'handed-off' : r.to === 'in-progress' ? 'in-progress' : 'error');
      } catch (err) {
        errors.push(`recover() threw ${(err as Error).name}: ${(err as Error).message}`);
        outcomes.push('error');
      }
      if (scenario === 'key-past-retention' && card.sideEffect.idempotentByNature.value !== true && h.tracker.executeCalls > executeCallsBeforeRecovery) {
        failures.push(`${label}: recovery resent the request ${h.tracker.executeCalls - executeCallsBeforeRecovery} time(s) on a key past retention.minimum; expected lookup or handoff only`);
      }
    } else {
      const runner = h.makeRunner(h.makeLedger());
      outcomes.push(await run(runner, params));
      if (scenario === 'rate-limited') {
        const [a, b] = h.tracker.executeSpans;
        if (a?.end !== undefined && b) waitedMs = b.start - a.end;
      }
    }

    // A late commit still held is applied now: the provider does apply it in the end.
    if (scenario === 'late-commit') {
      notes.push(`late commit: ${h.proxy.heldLate} request(s) still held when the run ended; applied now`);
      await h.proxy.flushLate();
    }
    // Receipts of every operation the drill's ledger holds.
    const reader = h.ledgers[h.ledgers.length - 1]!;
    const records = await reader.list();
    runnerReceipts = (await Promise.all(records.map((r) => reader.receipts(r.businessOperationId)))).flat();
  } catch (err) {
    errors.push(`drill error: ${(err as Error).stack ?? String(err)}`);
  }

  const providerRecords = await Promise.resolve(h.sandbox.count(operation)).catch((err: Error) => {
    errors.push(`sandbox.count threw: ${err.message}`);
    return -1;
  });
  const proxyRequests = h.proxy.requests.map((r) => ({ ...r, phase: phaseOf(r) }));
  const duringExecute = proxyRequests.filter((r) => r.phase === 'execute').length;
  const duringLookup = proxyRequests.filter((r) => r.phase === 'lookup').length;
  const perExecute = new Map<string, number>();
  for (const r of proxyRequests) if (r.label?.startsWith('execute#')) perExecute.set(r.label, (perExecute.get(r.label) ?? 0) + 1);
  const maxRequestsInOneExecute = Math.max(0, ...perExecute.values());
  const observed: ObservedValues = {
    providerRecords,
    attemptsAtProxy: duringExecute,
    requests: { total: proxyRequests.length, duringExecute, duringLookup, other: proxyRequests.length - duringExecute - duringLookup },
    executeCalls: h.tracker.executeCalls,
    lookupCalls: h.tracker.lookupCalls,
    maxRequestsInOneExecute,
    outcomes,
    handoffs: h.packets.length,
    handoffReasons: h.packets.map((p) => p.reason),
    ...(waitedMs !== undefined ? { waitedMs } : {}),
    errors,
  };
  const handoffPackets = [...h.packets];
  await h.close().catch((err: Error) => notes.push(`cleanup: ${err.message}`));
  if (executeCallsBeforeRecovery) notes.push(`before recovery: ${executeCallsBeforeRecovery} doExecute call(s), ${requestsBeforeRecovery} proxy request(s)`);

  // Assert the criteria written before the run.
  if (providerRecords !== criteria.providerRecords) failures.push(`${label}: providerRecords expected ${criteria.providerRecords}, observed ${providerRecords}`);
  if (!meets(criteria.attemptsAtProxy, duringExecute)) failures.push(`${label}: attemptsAtProxy expected ${describeCount(criteria.attemptsAtProxy)}, observed ${duringExecute} (doExecute calls ${h.tracker.executeCalls}, requests ${proxyRequests.length})`);
  if (maxRequestsInOneExecute > 1 || (scenario !== 'concurrent-duplicates' && duringExecute > h.tracker.executeCalls)) {
    failures.push(`${label}: one retrying layer expected (1 request per doExecute), observed ${maxRequestsInOneExecute > 1 ? maxRequestsInOneExecute : duringExecute} request(s) for ${maxRequestsInOneExecute > 1 ? 'one doExecute call' : `${h.tracker.executeCalls} doExecute call(s)`}: the SDK or adapter retries on its own`);
  }
  const badOutcomes = outcomes.filter((x) => !criteria.outcome.includes(x));
  if (outcomes.length === 0 || badOutcomes.length > 0) failures.push(`${label}: outcome expected ${criteria.outcome.join(' or ')}, observed ${outcomes.length ? [...new Set(outcomes)].join(', ') : 'none'}${errors.length ? ` (${errors[0]})` : ''}`);
  const handedOff = outcomes.includes('handed-off');
  const wantHandoff = criteria.handoff === 'with-outcome' ? handedOff : criteria.handoff;
  if (wantHandoff && h.packets.length === 0) failures.push(`${label}: handoff expected, observed no handoff packet`);
  if (!wantHandoff && h.packets.length > 0) failures.push(`${label}: no handoff expected, observed ${h.packets.length} packet(s) (${h.packets.map((p) => p.reason).join(', ')})`);
  if (criteria.minWaitMs !== undefined && !(waitedMs !== undefined && waitedMs >= criteria.minWaitMs)) {
    failures.push(`${label}: Retry-After not honoured: expected a wait of at least ${criteria.minWaitMs} ms before attempt 2, observed ${waitedMs ?? 'no second attempt'}`);
  }
  if (scenario === 'lost-response-timeout' && proxyRequests[0] && proxyRequests[0].clientGaveUp === false) {
    failures.push(`${label}: the client did not time out: the proxy held the response ${timeoutMs * 5 + 1000} ms and dropped it itself; createAdapter must pass timeoutMs (${timeoutMs} ms) to the SDK`);
  }
  if (h.proxy.scriptErrors.length > 0) failures.push(`${label}: fault script errors: ${h.proxy.scriptErrors.join('; ')}`);

  return finish({
    status: failures.length === 0 ? 'passed' : 'failed',
    criteria,
    observed,
    failures,
    runnerReceipts,
    handoffPackets,
    proxyRequests,
    notes,
  });
}

/** Writes `summary.json` for the results so far and returns it. */
export function writeSummary(ctx: DrillContext): DrillSummary {
  const results = ctx.results;
  const summary: DrillSummary = {
    drill: ctx.options.name,
    outDir: ctx.outDir,
    total: results.length,
    passed: results.filter((r) => r.status === 'passed').length,
    failed: results.filter((r) => r.status === 'failed').length,
    skipped: results.filter((r) => r.status === 'skipped').length,
    skips: results.filter((r) => r.skip).map((r) => ({ operation: r.operation, scenario: r.scenario, cardField: r.skip!.cardField, reason: r.skip!.reason })),
    failures: results.filter((r) => r.status === 'failed').map((r) => ({ operation: r.operation, scenario: r.scenario, failures: r.failures })),
    results: results.map((r) => ({ operation: r.operation, scenario: r.scenario, status: r.status, receiptFile: r.receiptFile })),
  };
  writeFileSync(join(ctx.outDir, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
  return summary;
}

/** Removes the drill's scratch ledgers (receipts in outDir stay). */
export function disposeDrillContext(ctx: DrillContext): void {
  rmSync(ctx.workDir, { recursive: true, force: true });
}

/**
 * Runs the whole drill without vitest (for the CLI's `retrysafe drill`): every declared operation ×
 * every scenario, sequentially. Returns the results; `ok` is false when any scenario failed.
 */
export async function runDrill(options: DrillOptions): Promise<DrillReport> {
  const scenarios = options.scenarios ?? SCENARIOS;
  for (const s of scenarios) if (!SCENARIOS.includes(s)) throw new TypeError(`unknown scenario '${String(s)}'; known: ${SCENARIOS.join(', ')}`);
  const ctx = createDrillContext(options);
  try {
    for (const operation of Object.keys(options.operations)) {
      for (const scenario of scenarios) await runScenario(ctx, operation, scenario);
    }
  } finally {
    disposeDrillContext(ctx);
  }
  const summary = writeSummary(ctx);
  return { ok: summary.failed === 0, outDir: ctx.outDir, results: ctx.results, summary };
}
