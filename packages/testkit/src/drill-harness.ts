import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AdapterV1, HandoffPacket, Ledger } from '@retrysafe/contract';
import { type Clock, callbackHandoffSink, createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createDrillClock, seededRandom } from './drill-clock.js';
import type { ConformanceOptions, ScenarioResult } from './drill-types.js';
import { type FaultProxy, type FaultScript, startFaultProxy } from './fault-proxy.js';
import { wrapAdapter } from './wrap-adapter.js';

/** The client timeout handed to createAdapter by default: generous, so lookups on a loaded machine still answer. */
export const DEFAULT_DRILL_TIMEOUT_MS = 1500;

type Phase = 'execute' | 'lookup' | 'intake';

/** Counts and labels the adapter's doExecute/doLookup calls, so every proxy request is attributed to the call that made
 * it; a request an adapter sends to resolve an intent before the claim (doResolveIntent) is labelled `intake`. */
function instrument(inner: AdapterV1, proxy: FaultProxy, clock: { now(): number }, active: Record<Phase, number>) {
  const t = {
    calls: { execute: 0, lookup: 0, intake: 0 },
    active,
    executeSpans: [] as { start: number; end?: number }[],
    /** After the provider answered, never return (the worker "dies" before recording the outcome). */
    dieAfterExecute: false,
    died: false,
  };
  const relabel = () => {
    const { execute, lookup, intake } = t.active;
    if (Number(execute > 0) + Number(lookup > 0) + Number(intake > 0) > 1) proxy.label = 'ambiguous';
    else if (execute === 1) proxy.label = `execute#${t.calls.execute}`;
    else if (execute > 1) proxy.label = 'execute*';
    else proxy.label = lookup > 0 ? 'lookup' : intake > 0 ? 'intake' : undefined;
  };
  const during = async <R>(kind: Phase, call: () => Promise<R>): Promise<R> => {
    const span: { start: number; end?: number } = { start: clock.now() };
    if (kind === 'execute') t.executeSpans.push(span);
    t.calls[kind] += 1;
    t.active[kind] += 1;
    relabel();
    try {
      return await call();
    } finally {
      span.end = clock.now();
      t.active[kind] -= 1;
      relabel();
    }
  };
  const wrapped = wrapAdapter(inner, {
    async doExecute(op, params, ctx) {
      const outcome = await during('execute', () => inner.doExecute(op, params, ctx));
      if (!t.dieAfterExecute) return outcome;
      t.died = true; // the provider answered; the runner never hears of it
      return await new Promise<never>(() => {});
    },
    doLookup: (op, ctx) => during('lookup', () => inner.doLookup(op, ctx)),
  });
  const resolve = inner.doResolveIntent?.bind(inner);
  const adapter: AdapterV1 = resolve
    ? { ...wrapped, doResolveIntent: (op, intent, signal) => during('intake', () => resolve(op, intent, signal)) }
    : wrapped;
  return { adapter, tracker: t };
}

/** The scenario's faults for the requests of doExecute and doLookup: an intake request passes and is not counted, so
 * the script's first fault still meets the first attempt. */
function skippingIntake(faults: FaultScript, active: Record<Phase, number>): FaultScript {
  let calls = 0;
  return (_call, request) => {
    if (active.intake > 0 && active.execute === 0 && active.lookup === 0) return 'pass';
    calls += 1;
    return typeof faults === 'function' ? faults(calls, request) : (faults[calls - 1] ?? 'pass');
  };
}

export type Harness = Awaited<ReturnType<typeof startHarness>>;

/** Shared state of one drill: where receipts go, which index of params is next, the results so far. */
export function createDrillContext(options: ConformanceOptions) {
  if (!/^[A-Za-z0-9._-]+$/.test(options.name))
    throw new TypeError('name must be a short identifier (letters, digits, . _ -)');
  if (Object.keys(options.operations).length === 0)
    throw new TypeError('operations must declare at least one operation to drill');
  const outDir = options.outDir ?? mkdtempSync(join(tmpdir(), `retrysafe-drill-${options.name}-`));
  mkdirSync(outDir, { recursive: true });
  const workDir = mkdtempSync(join(tmpdir(), `retrysafe-drill-ledgers-`));
  const timeoutMs = options.timeoutMs ?? DEFAULT_DRILL_TIMEOUT_MS;
  return { options, timeoutMs, outDir, workDir, nextIndex: 0, results: [] as ScenarioResult[] };
}

export type DrillContext = ReturnType<typeof createDrillContext>;

export async function startHarness(ctx: DrillContext, faults: FaultScript, timeoutOverrideMs?: number) {
  const o = ctx.options;
  const clock = createDrillClock();
  const active = { execute: 0, lookup: 0, intake: 0 };
  const sandbox = await o.startSandbox({ clock });
  let proxy: FaultProxy | undefined;
  let inner: AdapterV1;
  try {
    proxy = await startFaultProxy({
      target: sandbox.url,
      faults: skippingIntake(faults, active),
      clock,
      recordHeaders: o.recordHeaders,
    });
    inner = await o.createAdapter({ baseUrl: proxy.url, timeoutMs: timeoutOverrideMs ?? ctx.timeoutMs });
  } catch (err) {
    await proxy?.close();
    await sandbox.close();
    throw err;
  }
  const p = proxy;
  const packets: HandoffPacket[] = [];
  const ledgers: Ledger[] = [];
  const ledgerPath = join(ctx.workDir, `ledger-${ctx.nextIndex}-${Date.now()}.db`);
  return {
    sandbox,
    proxy: p,
    ...instrument(inner, p, clock, active),
    clock,
    packets,
    ledgers,
    makeLedger(): Ledger {
      // A new connection to the same SQLite file (a fresh process would open it the same way).
      const l = createSqliteLedger({ path: ledgerPath });
      ledgers.push(l);
      return l;
    },
    makeRunner(ledger: Ledger, runClock: Clock = clock, owner?: string) {
      return createRunner({
        ledger,
        handoff: callbackHandoffSink((packet: HandoffPacket) => void packets.push(packet)),
        policy: o.policy,
        clock: runClock,
        random: seededRandom(o.seed ?? 1),
        owner,
      });
    },
    async close() {
      for (const l of ledgers) await l.close().catch(() => {});
      await inner.close?.().catch(() => {});
      await p.close();
      await sandbox.close();
    },
  };
}
