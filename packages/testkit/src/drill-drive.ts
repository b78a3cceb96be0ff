/** How each drill scenario drives the runner against the harness, and what it saw while doing so. */
import { ConflictError, type Receipt } from '@retrysafe/contract';
import { durationMs, isDuration } from '@retrysafe/contract/rules';
import { systemClock } from '@retrysafe/core';
import type { planScenario } from './drill.js';
import type { Harness } from './drill-harness.js';
import type { DrillOutcome } from './drill-types.js';

/** What a scenario's run left to check: filled in while it runs. */
export interface Drive {
  readonly outcomes: DrillOutcome[];
  readonly errors: string[];
  readonly failures: string[];
  readonly notes: string[];
  runnerReceipts: Receipt[];
  waitedMs?: number;
}

export const CONCURRENCY = 16;

/** A scenario's plan: the operation, its card and params, and who runs it. */
export type DriveInput = Exclude<Awaited<ReturnType<typeof planScenario>>, { status: string }>;

/** Runs the scenario, then reads the receipts of every operation the drill's ledger holds. Never throws. */
export async function driveScenario(h: Harness, input: DriveInput, d: Drive): Promise<void> {
  const { scenario, operation, params, label } = input;
  try {
    if (scenario === 'concurrent-duplicates') {
      await runConcurrent(h, input, d);
    } else if (scenario === 'changed-intent') {
      const runner = h.makeRunner(h.makeLedger());
      const id = input.businessOperationId;
      const run = (p: unknown) =>
        settle(d, () => runner.run(h.adapter, operation, { params: p, businessOperationId: id }));
      const first = (await run(params)).outcome;
      d.notes.push(`first run with businessOperationId ${id}: ${first}`);
      if (first !== 'done') d.failures.push(`${label}: setup run should finish 'done' but was '${first}'`);
      const requestsBefore = h.proxy.requests.length;
      const second = await run(input.op.changeIntent(params));
      d.outcomes.push(second.outcome);
      // A params conflict means the changed field is no part of the intent: two intents would share one id.
      if ('field' in second && second.field !== 'intent')
        d.failures.push(
          `${label}: the conflict is on ${second.field}, not on the intent: the field changeIntent changes is not among the adapter's intent fields, so two different intents share one business-operation id`,
        );
      // An intake read (doResolveIntent) asks who the target is; nothing of the operation is sent.
      const sent = h.proxy.requests.slice(requestsBefore).filter((r) => r.label !== 'intake').length;
      if (sent !== 0)
        d.failures.push(`${label}: the conflicting call sent ${sent} request(s) to the provider; expected none`);
    } else if (scenario === 'rejection-left-object') {
      await rejectionLeftObject(h, input, d);
    } else if (scenario === 'crash-after-dispatch' || scenario === 'key-past-retention') {
      await crashAndRecover(h, input, d);
    } else {
      const runner = h.makeRunner(h.makeLedger());
      d.outcomes.push((await settle(d, () => runner.run(h.adapter, operation, { params }))).outcome);
      if (scenario === 'rate-limited') {
        const [a, b] = h.tracker.executeSpans;
        if (a?.end !== undefined && b) d.waitedMs = b.start - a.end;
      }
    }

    // A late commit still held is applied now: the provider does apply it in the end.
    if (scenario === 'late-commit') {
      d.notes.push(`late commit: ${h.proxy.heldLate} request(s) still held when the run ended; applied now`);
      await h.proxy.flushLate();
    }
    const reader = h.ledgers[h.ledgers.length - 1]!;
    const records = await reader.list();
    d.runnerReceipts = (await Promise.all(records.map((r) => reader.receipts(r.businessOperationId)))).flat();
  } catch (err) {
    d.errors.push(`drill error: ${(err as Error).stack ?? String(err)}`);
    // A run the drill could not finish (e.g. its own ledger unreadable at the closing read) checked nothing: it fails.
    const { name, message } = err as Error;
    d.failures.push(`${label}: the drill could not finish: ${name}: ${message}`);
  }
}

/** A call's outcome as the drill counts it; a throw other than a conflict is kept in `d.errors`, after `what`. */
async function settle<R extends { status: string }>(d: Drive, call: () => Promise<R>, what = '') {
  try {
    const r = await call();
    return { outcome: outcomeOf(r.status), r };
  } catch (err) {
    const { name, message } = err as Error;
    if (ConflictError.isInstance(err)) return { outcome: 'conflict' as const, message, field: err.field };
    d.errors.push(`${what}${name}: ${message}`);
    return { outcome: 'error' as const, message };
  }
}

async function runConcurrent(h: Harness, input: DriveInput, d: Drive): Promise<void> {
  const { operation, params, label } = input;
  const ledger = h.makeLedger();
  // The real clock: racing callers on one shared virtual clock would expire each other's leases early.
  const runners = Array.from({ length: CONCURRENCY }, (_, k) => h.makeRunner(ledger, systemClock, `drill-worker-${k}`));
  const settled = await Promise.all(
    runners.map((runner) => settle(d, () => runner.run(h.adapter, operation, { params }))),
  );
  for (const { outcome } of settled) d.outcomes.push(outcome);
  const refs = new Set(settled.flatMap(({ r }) => (r?.status === 'done' ? [JSON.stringify(r.providerRef)] : [])));
  if (!d.outcomes.includes('done'))
    d.failures.push(
      `${label}: none of the ${CONCURRENCY} concurrent runs finished (outcomes: ${d.outcomes.join(', ')})`,
    );
  if (refs.size > 1)
    d.failures.push(
      `${label}: concurrent runs finished with ${refs.size} different provider references: ${[...refs].join(', ')}`,
    );
}

/** Worker A dispatches; the provider commits; A dies before recording the outcome; worker B recovers. */
async function crashAndRecover(h: Harness, input: DriveInput, d: Drive): Promise<void> {
  const { scenario, operation, params, card, label, leaseMs } = input;
  const runnerA = h.makeRunner(h.makeLedger(), h.clock, 'drill-worker-A');
  h.tracker.dieAfterExecute = true;
  void runnerA.run(h.adapter, operation, { params }).catch(() => {});
  // wait until the adapter has the provider's answer (A then hangs for ever: it "died")
  for (let waited = 0; !h.tracker.died && waited < 20_000; waited += 5) await new Promise((r) => setTimeout(r, 5));
  if (!h.tracker.died) throw new Error('worker A never reached the provider');
  h.tracker.dieAfterExecute = false;
  const callsBefore = h.tracker.calls.execute;
  d.notes.push(`before recovery: ${callsBefore} doExecute call(s), ${h.proxy.requests.length} proxy request(s)`);
  const pastRetention = scenario === 'key-past-retention';
  const retention = card.retention.minimum.value;
  // past the lease, and for key-past-retention past retention too (unknown: a week, past any a provider publishes)
  const retentionMs = !pastRetention ? 0 : isDuration(retention) ? durationMs(retention) : 7 * 86_400_000;
  h.clock.advance(retentionMs + leaseMs + 1000);
  if (pastRetention && h.sandbox.expireKeys) await h.sandbox.expireKeys();
  else if (pastRetention)
    d.notes.push(
      "the sandbox has no expireKeys(): the provider still holds the key, so only the runner's clock is past retention",
    );
  // Worker B: a fresh runner on a fresh ledger connection (SQLite: same file) recovers.
  const runnerB = h.makeRunner(h.makeLedger(), h.clock, 'drill-worker-B');
  try {
    const reports = await runnerB.recover({ adapters: [h.adapter] });
    d.notes.push(`recover(): ${JSON.stringify(reports.map(({ from, to, action }) => ({ from, to, action })))}`);
    if (reports.length === 0) d.outcomes.push('error'), d.errors.push('recover() found nothing to recover');
    for (const { to } of reports) d.outcomes.push(outcomeOf(to === 'succeeded' ? 'done' : to));
  } catch (err) {
    d.errors.push(`recover() threw ${(err as Error).name}: ${(err as Error).message}`);
    d.outcomes.push('error');
  }
  const resent = h.tracker.calls.execute - callsBefore;
  if (pastRetention && card.sideEffect.idempotentByNature.value !== true && resent > 0)
    d.failures.push(
      `${label}: recovery resent the request ${resent} time(s) on a key past retention.minimum; expected lookup or handoff only`,
    );
}

const outcomeOf = (status: string | null): DrillOutcome =>
  status === 'done' || status === 'handed-off' || status === 'in-progress' ? status : 'error';

/** A rejected call that left an object: the packet must name it; a corrected call and `resend-with` send nothing. */
async function rejectionLeftObject(h: Harness, input: DriveInput, d: Drive): Promise<void> {
  const { operation, params, label } = input;
  const corrected = input.op.rejectedCreates!.corrected(params);
  const runner = h.makeRunner(h.makeLedger());
  const { outcome, r: first } = await settle(d, () => runner.run(h.adapter, operation, { params }));
  d.outcomes.push(outcome);
  if (!first) return;
  const created = h.packets.at(-1)?.lastKnown.created;
  if (created === undefined)
    d.failures.push(`${label}: the handoff packet does not name the object the rejected call left (lastKnown.created)`);
  else d.notes.push(`the rejected call left ${created}`);
  const resendWith = { action: 'resend-with', params: corrected } as const;
  const attempts: [string, () => Promise<{ status: string }>][] = [
    ['a corrected call', () => runner.run(h.adapter, operation, { params: corrected })],
    ['resend-with', () => runner.resolve(first.businessOperationId, resendWith, { adapters: [h.adapter] })],
  ];
  for (const [what, call] of attempts) {
    const { outcome, r, message } = await settle(d, call, `${what}: `);
    d.outcomes.push(outcome);
    if (outcome !== 'error') d.notes.push(`${what}: ${r?.status ?? `refused (${message})`}`);
  }
}
