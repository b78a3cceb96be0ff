import {
  asBusinessOperationId,
  type ClaimInput,
  type HandoffPacket,
  type LookupResult,
  type OperationRecord,
  type Outcome,
  type RetrySafetyCard,
  type StatePatch,
} from '@retrysafe/contract';
import * as T from '@retrysafe/contract/ledger';
import { durationMs, resendSafety } from '@retrysafe/contract/rules';
import { type Decision, type DecisionState, type PolicyOverrides, type RetryPolicy } from '@retrysafe/core';
import { decide as realDecide, resolvePolicy } from '@retrysafe/core/internal';
import {
  ALL_FATES,
  liveKey,
  lookupAt,
  process,
  providerFromCard,
  type DecideFn,
  type Fate,
  type OpState,
  type ProviderModel,
  type ProviderState,
  type WorkerState,
  type World,
} from './model.js';

export interface ExploreOptions {
  readonly card: RetrySafetyCard;
  readonly policy?: PolicyOverrides;
  /** The decision table under test (default: the real `decide` of @retrysafe/core). */
  readonly decide?: DecideFn;
  /** 1: one worker that runs and, once restarted after a crash, recovers. 2: plus a separate recover process. */
  readonly workers?: 1 | 2;
  /** The second worker's clock is this far ahead or behind the provider's (both are explored). Default: the policy's clock-skew margin, else 0. */
  readonly clockSkewMs?: number;
  /** Network fates tried on each provider call (default: all that the card makes meaningful). */
  readonly fates?: readonly Fate[];
  /** At most this many calls get a fate other than `delivered` (default 2). */
  readonly maxNetworkFaults?: number;
  /** Worker crashes (default 1). */
  readonly maxCrashes?: number;
  /** Worker pauses past the lease (GC, suspended VM) (default 0). */
  readonly maxPauses?: number;
  /**
   * The runner checks its own lease immediately before every provider call and stops if it has run out
   * (default true, as the runner does). False models a runner without that check: the lease invariant
   * then catches a call on a run-out lease.
   */
  readonly runnerChecksLease?: boolean;
  /**
   * Stand-in when the card says the late-apply bound is unknown: the model provider may apply a held
   * request this late (default: the policy's clock-skew margin, which is what the re-send rule keeps
   * from retention for an unknown bound; decide never trusts a not-found on such a card at all).
   */
  readonly unknownLateApplyMs?: number;
  /** Stand-in for an unknown consistency delay (default: 2 × lookup window). */
  readonly unknownDelayMs?: number;
  /** Stop after this many states (the report says truncated). Default 300 000. */
  readonly maxStates?: number;
}

export interface TraceStep {
  readonly t: number;
  readonly text: string;
}

export interface Violation {
  readonly invariant: 'at-most-once' | 'durable-dispatch' | 'lease' | 'honest-terminal' | 'stuck';
  readonly message: string;
  readonly trace: readonly TraceStep[];
  /** The trace as a readable story. */
  readonly story: string;
}

export interface ExploreReport {
  readonly operation: string;
  readonly states: number;
  /** Longest shortest path (BFS depth) reached. */
  readonly depth: number;
  readonly truncated: boolean;
  /** First violation found (shortest trace), or null. */
  readonly violation: Violation | null;
  /** How the explored runs ended: 'succeeded', 'handed-off:<reason>', 'rejected'. */
  readonly endings: Readonly<Record<string, number>>;
  /** Some interleaving ends in a handoff: the card cannot promise completion under these faults. */
  readonly handsOff: boolean;
  readonly summary: string;
}

interface Ctx {
  readonly card: RetrySafetyCard;
  readonly policy: RetryPolicy;
  readonly decide: DecideFn;
  readonly pm: ProviderModel;
  readonly fates: readonly Fate[];
  readonly maxNetworkFaults: number;
  readonly maxCrashes: number;
  readonly maxPauses: number;
  readonly marginMs: number;
  readonly checksLease: boolean;
}

interface Succ {
  readonly w: World;
  readonly text: string;
}

const ID = asBusinessOperationId('explore-op-1');
const random = () => 0.5;

function fmt(ms: number): string {
  const sign = ms < 0 ? '-' : '+';
  let a = Math.abs(ms);
  const h = Math.floor(a / 3_600_000);
  a -= h * 3_600_000;
  const m = Math.floor(a / 60_000);
  a -= m * 60_000;
  const s = (a / 1000).toFixed(3);
  return `${sign}${h > 0 ? `${h}h` : ''}${h > 0 || m > 0 ? `${String(m).padStart(h > 0 ? 2 : 1, '0')}m` : ''}${h > 0 || m > 0 ? s.padStart(6, '0') : s}s`;
}

const now = (w: World, i: number) => w.t + w.ws[i]!.offset;
const setW = (w: World, i: number, patch: Partial<WorkerState>): World => ({ ...w, ws: w.ws.map((x, j) => (j === i ? { ...x, ...patch } : x)) });
const setOp = (w: World, i: number, patch: Partial<OpState>, pc?: WorkerState['pc']): World => setW(w, i, { op: { ...w.ws[i]!.op!, ...patch }, ...(pc ? { pc } : {}) });
const holds = (w: World, i: number) => w.rec !== null && w.ws[i]!.op !== null && w.rec.fence === w.ws[i]!.op!.fence && w.rec.leaseOwner === w.ws[i]!.name;

function stateOf(ctx: Ctx, w: World, i: number, observedAt?: number): DecisionState {
  const op = w.ws[i]!.op!;
  const rec = w.rec!;
  return {
    ...(observedAt !== undefined ? { observedAt } : {}),
    ledgerState: op.dispatchWritten ? 'claimed' : rec.state,
    now: now(w, i),
    firstDispatchedAt: op.dispatchWritten ? null : rec.firstDispatchedAt,
    lastDispatchedAt: op.lastDispatchedAt,
    ...(op.takenOverLeaseEnd !== null ? { takenOverLeaseEnd: op.takenOverLeaseEnd } : {}),
    maybeApplied: op.maybeApplied,
    ...(op.notBefore !== undefined ? { notBefore: op.notBefore } : {}),
    runAttempts: op.runAttempts,
    runStartedAt: op.startedAt,
    windowStartedAt: op.windowStartedAt,
    polls: op.polls,
  } as DecisionState;
}

function describeDecision(d: Decision): string {
  if (d.action === 'handoff') return `hand off (${d.reason}): ${d.why}`;
  if (d.action === 'complete') return `complete${d.adopted ? ' (adopt)' : ''}: ${d.why}`;
  return `${d.action}${d.delayMs > 0 ? ` in ${fmt(d.delayMs).slice(1)}` : ' now'}: ${d.why}`;
}

function describeObs(o: Outcome | LookupResult): string {
  if (o.kind === 'found') return `found (${o.outcome.kind})`;
  if (o.kind === 'unknown') return `unknown (${o.cause}${o.status ? ` ${o.status}` : ''})`;
  return o.kind;
}

function isInProgress(obs: Outcome | LookupResult | null): boolean {
  return obs !== null && (obs.kind === 'in-progress' || (obs.kind === 'found' && obs.outcome.kind === 'in-progress'));
}

function reliesOnKey(obs: Outcome | LookupResult | null): boolean {
  if (obs === null) return false;
  const inner = obs.kind === 'found' ? obs.outcome : obs;
  return inner.kind === 'unknown' || inner.kind === 'in-progress' || obs.kind === 'cannot-tell';
}

function safety(ctx: Ctx, first: number | null, at: number) {
  return (resendSafety as (c: RetrySafetyCard, f: number | null, n: number, m?: number) => ReturnType<typeof resendSafety>)(ctx.card, first, at, ctx.marginMs);
}

function packet(reason: string, rec: OperationRecord): HandoffPacket {
  return { reason, lastKnown: { outcome: rec.lastOutcome }, safeNextActions: [] } as unknown as HandoffPacket;
}

/** A worker's next step(s) from its program counter. Mirrors the runner's loop (packages/core/src/runner/loop.ts). */
function workerSteps(ctx: Ctx, w: World, i: number): Succ[] {
  const me = w.ws[i]!;
  if (me.paused || me.pc === 'done' || me.pc === 'crashed') return [];
  const tag = `${me.name}`;
  const n = now(w, i);
  switch (me.pc) {
    case 'idle': {
      if (me.role === 'run') return [claim(ctx, w, i, true, `${tag} run(): claims the operation`)];
      // recover(): a candidate is a non-terminal record whose lease is absent or expired (ledger clock).
      if (w.rec === null || T.isTerminal(w.rec) || T.leaseLive(w.rec, w.t)) return [];
      return [claim(ctx, w, i, false, `${tag} recover(): finds it ${w.rec.state} with the lease expired, takes it over`)];
    }
    case 'decided': {
      const op = me.op!;
      const d = op.decision;
      if (d.action === 'complete') {
        if (!holds(w, i)) return [{ w: lostLease(w, i), text: `${tag}: its fenced write is refused (lease lost): waits for the holder, takes over once its lease lapses` }];
        const rec = w.rec!.state === 'succeeded' ? w.rec! : T.setStateTransition(w.rec!, { state: 'succeeded', lastOutcome: w.rec!.lastOutcome, result: { ref: 'obj' }, providerRef: 'obj', now: n } as StatePatch);
        return [{ w: setW({ ...w, rec }, i, { pc: 'done', ended: 'succeeded' }), text: `${tag}: ledger ← succeeded` }];
      }
      if (d.action === 'handoff') {
        if (!holds(w, i)) return [{ w: lostLease(w, i), text: `${tag}: its fenced write is refused (lease lost): waits for the holder, takes over once its lease lapses` }];
        const reason = op.recovering && d.reason === 'unknown-no-safe-resend' ? 'crash-recovery-inconclusive' : d.reason;
        if (w.rec!.state === 'handed-off' || w.rec!.state === 'succeeded') return [{ w: setW(w, i, { pc: 'done', ended: w.rec!.state }), text: `${tag}: already ${w.rec!.state}` }];
        if (reason === 'rejected' && w.rec!.state !== 'rejected') {
          const rec = T.setStateTransition(w.rec!, { state: 'rejected', now: n } as StatePatch);
          return [{ w: setW({ ...w, rec }, i, { pc: 'done', ended: 'rejected' }), text: `${tag}: ledger ← rejected` }];
        }
        const rec = T.handOffTransition(w.rec!, packet(reason, w.rec!), n);
        return [{ w: setW({ ...w, rec }, i, { pc: 'done', ended: `handed-off:${reason}` }), text: `${tag}: ledger ← handed-off (${reason})` }];
      }
      // send / lookup: the runner counts the poll, then waits (renewing its lease).
      const polling = d.action === 'lookup' || isInProgress(op.obs);
      const patch: Partial<OpState> = { wakeAt: n + d.delayMs, ...(polling ? { windowStartedAt: op.windowStartedAt ?? n, polls: op.polls + 1 } : {}) };
      return [{ w: setOp(w, i, patch, 'waiting'), text: `${tag}: waits ${fmt(d.delayMs).slice(1)} before the ${d.action}` }];
    }
    case 'waiting': {
      const op = me.op!;
      if (n < op.wakeAt) return [];
      if (w.rec === null || op.fence !== w.rec.fence) return [{ w: lostLease(w, i), text: `${tag}: its fenced write is refused (lease lost): waits for the holder, takes over once its lease lapses` }];
      const d = op.decision;
      if (d.action === 'send' && (reliesOnKey(op.obs) || op.maybeApplied) && !safety(ctx, w.rec.firstDispatchedAt, n).safe) {
        const again = ctx.decide(ctx.card, stateOf(ctx, w, i), op.obs, { policy: ctx.policy, random });
        return [{ w: setOp(w, i, { decision: again }, 'decided'), text: `${tag}: the wait outlasted the key's retention; decides again → ${describeDecision(again)}` }];
      }
      if (d.action === 'send') {
        if (op.dispatchWritten) return [{ w: setOp(w, i, {}, 'calling'), text: `${tag}: (the claim already wrote dispatched)` }];
        const rec = T.dispatchedTransition(T.renewTransition(w.rec, { businessOperationId: ID, fence: op.fence }, ctx.policy.leaseMs, w.t), n);
        return [{ w: setOp({ ...w, rec }, i, {}, 'calling'), text: `${tag}: ledger ← dispatched (attempt ${rec.attemptCount})` }];
      }
      // lookup
      let rec = T.renewTransition(w.rec, { businessOperationId: ID, fence: op.fence }, ctx.policy.leaseMs, w.t);
      if (rec.state !== 'reconciling' && rec.state !== 'in-progress') rec = T.setStateTransition(rec, { state: 'reconciling', now: n } as StatePatch);
      const r = lookupAt(ctx.pm, w.prov, w.t);
      const sent = r.p !== w.prov ? ' (the lookup re-sends with the same key)' : '';
      return [
        { w: setOp({ ...w, rec, prov: r.p }, i, { obs: r.result, observedAt: n }, 'observing'), text: `${tag}: looks up${sent} → ${describeObs(r.result)}${r.p.effects > w.prov.effects ? ` — the provider makes effect #${r.p.effects}` : ''}` },
        ...(w.netFaults < ctx.maxNetworkFaults
          ? [{ w: { ...setOp({ ...w, rec }, i, { obs: { kind: 'cannot-tell', reason: 'lookup request failed' } as LookupResult, observedAt: n }, 'observing'), netFaults: w.netFaults + 1 }, text: `${tag}: looks up → the lookup request fails (cannot tell)` }]
          : []),
      ];
    }
    case 'calling':
      return call(ctx, w, i);
    case 'observing':
      return [observe(ctx, w, i)];
  }
  return [];
}

/** A refused fenced write or a run-out lease: the runner waits for the holder, and takes the operation over once its lease lapses (waitForOther → claim). */
function lostLease(w: World, i: number): World {
  return setW(w, i, { pc: 'idle', role: 'recover', op: null });
}

function claim(ctx: Ctx, w: World, i: number, dispatch: boolean, text: string): Succ {
  const me = w.ws[i]!;
  const input: ClaimInput = {
    businessOperationId: ID,
    provider: ctx.card.provider,
    operation: ctx.card.operation,
    intentFingerprint: 'i',
    paramsFingerprint: 'p',
    params: {},
    providerKey: ctx.pm.folds || ctx.card.providerKey.travels.value !== 'none' ? ('rs-key' as never) : null,
    owner: me.name,
    leaseMs: ctx.policy.leaseMs,
    now: w.t,
    ...(dispatch ? { dispatch: true } : {}),
  };
  const before = w.rec;
  const { result, write } = T.claimTransition(before, input);
  if (result.kind !== 'claimed') return { w: setW(w, i, { pc: 'done', ended: result.kind }), text: `${text}: ${result.kind}` };
  const rec = write!;
  const dispatchWritten = dispatch && !result.takenOver && rec.state === 'dispatched';
  const n = now(w, i);
  const inFlight = ['dispatched', 'unknown', 'reconciling', 'in-progress'].includes(rec.state);
  const op: OpState = {
    fence: rec.fence,
    maybeApplied: !dispatchWritten && inFlight,
    runAttempts: 0,
    polls: 0,
    windowStartedAt: null,
    startedAt: n,
    lastDispatchedAt: dispatchWritten || rec.firstDispatchedAt === null ? null : Math.max(rec.firstDispatchedAt, rec.updatedAt),
    // The dead owner could have sent until its lease ran out (it checks its lease before each call).
    takenOverLeaseEnd: result.takenOver && before !== null && before.leaseExpiresAt !== null && rec.firstDispatchedAt !== null ? before.leaseExpiresAt : null,
    notBefore: undefined,
    recovering: result.takenOver && inFlight,
    dispatchWritten,
    decision: { action: 'send', delayMs: 0, why: '' },
    obs: null,
    observedAt: n,
    wakeAt: n,
    storedError: false,
  };
  const w1 = setW({ ...w, rec }, i, { op, pc: 'decided' });
  const first = ctx.decide(ctx.card, stateOf(ctx, w1, i), null, { policy: ctx.policy, random });
  return { w: setOp(w1, i, { decision: first }), text: `${text}${rec.state === 'dispatched' && dispatchWritten ? ' (created dispatched)' : ''} → ${describeDecision(first)}` };
}

function call(ctx: Ctx, w: World, i: number): Succ[] {
  const me = w.ws[i]!;
  const op = me.op!;
  const tag = me.name;
  const n = now(w, i);
  // The runner checks its own lease immediately before every provider call.
  const leaseLive = holds(w, i) && w.rec!.leaseExpiresAt! > w.t;
  if (!leaseLive && ctx.checksLease) return [{ w: lostLease(w, i), text: `${tag}: its lease ran out before the call: does not send; waits, and takes over once the lease lapses` }];
  const rec = w.rec!;
  const base = { ...w, prov: { ...w.prov, calls: w.prov.calls + 1 }, ...(leaseLive ? {} : { leaseBreach: `${tag} called the provider with its lease run out (fence ${op.fence}, ledger fence ${rec.fence})` }) };
  const after = (prov: ProviderState, answer: Outcome, how: string, fault: boolean): Succ => {
    const w1 = setOp({ ...base, prov, netFaults: w.netFaults + (fault ? 1 : 0) }, i, {
      obs: answer,
      observedAt: n,
      lastDispatchedAt: Math.max(rec.updatedAt, n),
      runAttempts: op.runAttempts + 1,
      dispatchWritten: false,
      storedError: answer.kind === 'unknown' && answer.cause === 'server-error' && ctx.pm.storesErrors,
      notBefore: op.notBefore,
    }, 'observing');
    const made = prov.effects > w.prov.effects ? ` — the provider makes effect #${prov.effects}` : '';
    return { w: w1, text: `${tag}: calls the provider (call ${w.prov.calls + 1}): ${how}${made}` };
  };
  const out: Succ[] = [];
  const timeout: Outcome = { kind: 'unknown', cause: 'timeout', message: 'timed out' };
  for (const fate of ctx.fates) {
    const fault = fate !== 'delivered';
    if (fault && w.netFaults >= ctx.maxNetworkFaults) continue;
    switch (fate) {
      case 'delivered': {
        const r = process(ctx.pm, base.prov, w.t);
        out.push(after(r.p, r.answer, `delivered → ${describeObs(r.answer)}`, false));
        break;
      }
      case 'refused':
        out.push(after(base.prov, { kind: 'not-applied', message: 'connection refused' }, 'connection refused (never reached the provider)', true));
        break;
      case 'lost-before':
        out.push(after(base.prov, timeout, 'lost before the provider → client times out', true));
        break;
      case 'lost-after': {
        const r = process(ctx.pm, base.prov, w.t);
        out.push(after(r.p, timeout, `the provider answers ${describeObs(r.answer)}, the answer is lost → client times out`, true));
        break;
      }
      case 'late':
        out.push(after({ ...base.prov, pending: [...base.prov.pending, { sentAt: w.t, until: w.t + ctx.pm.lateApplyMs }] }, timeout, 'held in the network → client times out; the provider may still apply it', true));
        break;
      case 'duplicated': {
        const r1 = process(ctx.pm, base.prov, w.t);
        const r2 = process(ctx.pm, r1.p, w.t);
        out.push(after(r2.p, r2.answer, `delivered twice → ${describeObs(r2.answer)}`, true));
        break;
      }
      case 'stored-error-applied':
      case 'stored-error-not-applied': {
        if (!ctx.pm.storesErrors || liveKey(ctx.pm, base.prov, w.t) !== null) break;
        let p = base.prov;
        if (fate === 'stored-error-applied') p = process(ctx.pm, p, w.t).p;
        p = { ...p, key: { at: w.t, stored: 'error' } };
        out.push(after(p, { kind: 'unknown', cause: 'server-error', status: 500, message: 'provider 500 (stored under the key)' }, `the provider answers 500 and stores it under the key${fate === 'stored-error-applied' ? ' (the effect was made)' : ' (no effect)'}`, true));
        break;
      }
    }
  }
  return out;
}

function observe(ctx: Ctx, w: World, i: number): Succ {
  const me = w.ws[i]!;
  const op = me.op!;
  const tag = me.name;
  const n = now(w, i);
  if (!holds(w, i)) return { w: lostLease(w, i), text: `${tag}: its fenced write is refused (lease lost): waits for the holder, takes over once its lease lapses` };
  const obs = op.obs!;
  let notBefore = op.notBefore;
  if (op.decision.action === 'send' && 'retryAfterMs' in obs && typeof obs.retryAfterMs === 'number' && obs.retryAfterMs > 0) notBefore = Math.max(notBefore ?? 0, n + obs.retryAfterMs);
  const w0 = setOp(w, i, { notBefore });
  const observed = stateOf(ctx, w0, i, op.observedAt);
  const d = ctx.decide(ctx.card, observed, obs, { policy: ctx.policy, random });
  // The runner's statePatch: what the observation means for the record.
  const inner = obs.kind === 'found' ? obs.outcome : obs;
  let maybeApplied = op.maybeApplied;
  if (inner.kind === 'unknown' || inner.kind === 'in-progress') maybeApplied = true;
  if (inner.kind === 'not-found' && notFoundAuthoritative(ctx, d)) maybeApplied = false;
  let state: StatePatch['state'] | null = null;
  if (inner.kind === 'in-progress') state = 'in-progress';
  else if (inner.kind === 'unknown') state = 'unknown';
  else if (inner.kind === 'not-applied' || inner.kind === 'not-found') state = maybeApplied ? 'unknown' : 'claimed';
  else if (inner.kind === 'cannot-tell') state = w.rec!.state === 'in-progress' ? 'in-progress' : 'reconciling';
  const rec = state !== null && !T.isTerminal(w.rec!) ? T.setStateTransition(w.rec!, { state, lastOutcome: inner.kind, now: n } as StatePatch) : w.rec!;
  return { w: setOp({ ...w0, rec }, i, { decision: d, maybeApplied }, 'decided'), text: `${tag}: decides → ${describeDecision(d)}` };
}

/** Whether decide treated the not-found as authoritative: it then moves on as if nothing were applied. */
function notFoundAuthoritative(_ctx: Ctx, d: Decision): boolean {
  return d.action === 'send' || (d.action === 'handoff' && d.reason === 'retry-exhausted');
}

/** Faults that are not the network's: crash, pause, resume; and the provider applying a held request. */
function worldSteps(ctx: Ctx, w: World): Succ[] {
  const out: Succ[] = [];
  w.ws.forEach((me, i) => {
    const active = me.pc !== 'idle' && me.pc !== 'done' && me.pc !== 'crashed';
    if (active && !me.paused && w.crashes < ctx.maxCrashes) {
      // The process dies; a restarted process runs recover() with the same clock.
      out.push({ w: { ...setW(w, i, { pc: 'idle', role: 'recover', op: null, paused: false, name: `${me.name}'` }), crashes: w.crashes + 1 }, text: `${me.name} CRASHES (at ${me.pc}); a restarted process will run recover()` });
    }
    if (active && !me.paused && w.pauses < ctx.maxPauses) out.push({ w: { ...setW(w, i, { paused: true }), pauses: w.pauses + 1 }, text: `${me.name} PAUSES (GC / suspended VM) at ${me.pc}` });
    if (me.paused) out.push({ w: setW(w, i, { paused: false }), text: `${me.name} resumes` });
  });
  w.prov.pending.forEach((pd, k) => {
    // The bound is exclusive: a request held for the whole bound is never applied.
    if (w.t >= pd.until) return;
    const r = process(ctx.pm, w.prov, w.t);
    const pending = w.prov.pending.filter((_, j) => j !== k);
    out.push({ w: { ...w, prov: { ...r.p, pending } }, text: `the provider applies the held request sent at ${fmt(pd.sentAt)} (late apply) → ${describeObs(r.answer)}${r.p.effects > w.prov.effects ? ` — effect #${r.p.effects}` : ''}` });
  });
  return out;
}

/** The next meaningful true time: a wake-up, a lease end, a bound of the card or policy (just before, at, just after). */
function nextTime(ctx: Ctx, w: World): number | null {
  const pts: number[] = [];
  const around = (x: number) => pts.push(x - 1, x, x + 1);
  w.ws.forEach((me) => {
    if (me.pc === 'waiting' && !me.paused) pts.push(me.op!.wakeAt - me.offset);
  });
  if (w.rec !== null && w.rec.leaseExpiresAt !== null && !w.ws.some((x) => !x.paused && x.op !== null && x.pc !== 'done' && x.pc !== 'idle' && x.op.fence === w.rec!.fence)) around(w.rec.leaseExpiresAt);
  for (const pd of w.prov.pending) around(pd.until);
  for (const c of w.prov.commits) around(c + ctx.pm.consistencyDelayMs);
  if (w.prov.key !== null && ctx.pm.retentionMs !== null) around(w.prov.key.at + ctx.pm.retentionMs);
  if (w.rec !== null && !T.isTerminal(w.rec)) {
    const first = w.rec.firstDispatchedAt;
    const offsets = new Set(w.ws.map((x) => x.offset));
    // Anchors are events, not bookkeeping: the first dispatch, each worker's last dispatch, a dead owner's lease end.
    const held = w.ws.some((x) => !x.paused && x.op !== null && x.op.fence === w.rec!.fence && x.pc !== 'done' && x.pc !== 'idle');
    const anchors = [first, ...w.ws.flatMap((x) => (x.op ? [x.op.lastDispatchedAt, x.op.takenOverLeaseEnd] : [])), held ? null : w.rec.leaseExpiresAt].filter((x): x is number => x !== null);
    const ret = ctx.card.retention.minimum.value;
    const bounds = [ctx.pm.consistencyDelayMs + ctx.pm.lateApplyMs, ctx.pm.lateApplyMs, ctx.pm.consistencyDelayMs];
    if (typeof ret === 'string' && ret !== 'unknown') bounds.push(durationMs(ret), durationMs(ret) - ctx.marginMs);
    for (const a of anchors) for (const b of bounds) for (const o of offsets) around(a + b - o);
  }
  const later = pts.filter((x) => x > w.t);
  return later.length === 0 ? null : Math.min(...later);
}

function tick(ctx: Ctx, w: World): Succ | null {
  const t = nextTime(ctx, w);
  if (t === null) return null;
  // Live, unpaused workers that hold the lease keep it alive (the runner's heartbeat and sliced waits).
  let rec = w.rec;
  w.ws.forEach((me, i) => {
    if (rec !== null && !me.paused && me.op !== null && me.pc !== 'done' && me.pc !== 'crashed' && me.pc !== 'idle' && rec.fence === me.op.fence && rec.leaseOwner === me.name && !T.isTerminal(rec))
      rec = T.renewTransition(rec, { businessOperationId: ID, fence: me.op.fence }, ctx.policy.leaseMs, t);
    void i;
  });
  // Held requests past their bound are never applied.
  const pending = w.prov.pending.filter((p) => p.until > t);
  return { w: { ...w, t, rec, prov: { ...w.prov, pending } }, text: `time passes to ${fmt(t)}` };
}

function violations(ctx: Ctx, w: World): { invariant: Violation['invariant']; message: string } | null {
  if (w.leaseBreach) return { invariant: 'lease', message: w.leaseBreach };
  if (w.prov.effects > 1) return { invariant: 'at-most-once', message: `${w.prov.effects} business effects for one operation` };
  if (w.prov.calls > 0 && (w.rec === null || w.rec.firstDispatchedAt === null || w.rec.attemptCount < w.prov.calls))
    return { invariant: 'durable-dispatch', message: `${w.prov.calls} provider calls but the ledger records ${w.rec?.attemptCount ?? 0} dispatches` };
  if (w.rec !== null) {
    if (w.rec.state === 'succeeded' && w.prov.effects === 0 && !ctx.pm.idempotent) return { invariant: 'honest-terminal', message: 'succeeded, but the provider holds no effect' };
    if (w.rec.state === 'rejected' && w.prov.effects > 0) return { invariant: 'honest-terminal', message: 'rejected, but the provider holds the effect' };
  }
  return null;
}

function key(w: World): string {
  const r = w.rec;
  const rk = r === null ? null : [r.state, r.fence, r.leaseOwner, r.leaseExpiresAt, r.firstDispatchedAt, r.attemptCount, r.lastOutcome, r.updatedAt];
  return JSON.stringify([w.t, rk, w.prov, w.ws.map((x) => [x.name, x.role, x.pc, x.paused, x.op]), w.netFaults, w.crashes, w.pauses, w.leaseBreach ?? null]);
}

/** Breadth-first over every interleaving; the first violation found has the shortest trace. */
export function explore(options: ExploreOptions): ExploreReport {
  const card = options.card;
  const policy = resolvePolicy(card, options.policy);
  const marginMs = (policy as { clockSkewMarginMs?: number }).clockSkewMarginMs ?? 0;
  const pm = providerFromCard(card, {
    unknownLateApplyMs: options.unknownLateApplyMs ?? Math.max(marginMs, 1000),
    unknownDelayMs: options.unknownDelayMs ?? 2 * policy.lookupWindowMs,
  });
  // A network that delivers a request twice defeats any client when the provider does not fold
  // same-key requests: it is explored only where the card says the key folds them.
  const fates = (options.fates ?? ALL_FATES).filter((f) => (pm.storesErrors || !f.startsWith('stored-error')) && (f !== 'duplicated' || (pm.folds && (pm.retentionMs ?? 0) > 0) || pm.idempotent));
  const ctx: Ctx = {
    card,
    policy,
    decide: options.decide ?? realDecide,
    pm,
    fates,
    maxNetworkFaults: options.maxNetworkFaults ?? 2,
    maxCrashes: options.maxCrashes ?? 1,
    maxPauses: options.maxPauses ?? 0,
    marginMs,
    checksLease: options.runnerChecksLease ?? true,
  };
  const skew = options.clockSkewMs ?? marginMs;
  const workers = options.workers ?? 2;
  const prov: ProviderState = { effects: 0, commits: [], key: null, pending: [], calls: 0 };
  const mk = (name: string, role: WorkerState['role'], offset: number): WorkerState => ({ name, role, offset, pc: 'idle', paused: false, op: null, ended: null });
  const roots: World[] = [];
  const offsets = workers === 2 ? [...new Set([skew, -skew])] : [0];
  for (const o of offsets) roots.push({ t: 0, rec: null, prov, ws: workers === 2 ? [mk('A', 'run', 0), mk(`B(clock ${fmt(o)})`, 'recover', o)] : [mk('A', 'run', 0)], netFaults: 0, crashes: 0, pauses: 0 });

  const maxStates = options.maxStates ?? 300_000;
  const seen = new Map<string, number>();
  const worlds: World[] = [];
  const parent: number[] = [];
  const label: string[] = [];
  const depthOf: number[] = [];
  const endings: Record<string, number> = {};
  let depth = 0;
  let truncated = false;
  const push = (w: World, from: number, text: string): number | null => {
    const k = key(w);
    if (seen.has(k)) return null;
    const idx = worlds.length;
    seen.set(k, idx);
    worlds.push(w);
    parent.push(from);
    label.push(text);
    depthOf.push(from < 0 ? 0 : depthOf[from]! + 1);
    return idx;
  };
  const traceOf = (idx: number, last?: string): TraceStep[] => {
    const steps: TraceStep[] = [];
    for (let k = idx; k >= 0; k = parent[k]!) if (parent[k]! >= 0) steps.unshift({ t: worlds[parent[k]!]!.t, text: label[k]! });
    if (last) steps.push({ t: worlds[idx]!.t, text: last });
    return steps;
  };
  const fail = (idx: number, v: { invariant: Violation['invariant']; message: string }, last?: string): ExploreReport => {
    const trace = traceOf(idx, last);
    // Consecutive "time passes" steps read as one.
    const shown: TraceStep[] = [];
    for (const s of trace) {
      const prev = shown[shown.length - 1];
      if (prev && prev.text.startsWith('time passes') && s.text.startsWith('time passes')) shown[shown.length - 1] = { t: prev.t, text: s.text };
      else shown.push(s);
    }
    const story = [`${card.operation}: ${v.invariant} violated — ${v.message}`, ...shown.map((s, k) => `  ${String(k + 1).padStart(2)}. [t${fmt(s.t)}] ${s.text}`)].join('\n');
    return report({ invariant: v.invariant, message: v.message, trace, story });
  };
  const report = (violation: Violation | null): ExploreReport => {
    const handsOff = Object.keys(endings).some((k) => k.startsWith('handed-off'));
    const ends = Object.entries(endings).map(([k, v]) => `${k} ${v}`).join(', ');
    return {
      operation: card.operation,
      states: worlds.length,
      depth,
      truncated,
      violation,
      endings,
      handsOff,
      summary: `${card.operation}: ${worlds.length} states, depth ${depth}${truncated ? ' (truncated)' : ''}; ${violation ? `VIOLATION ${violation.invariant}` : 'no violation'}; endings: ${ends || 'none'}`,
    };
  };

  for (const r of roots) push(r, -1, 'start');
  for (let q = 0; q < worlds.length; q++) {
    if (worlds.length >= maxStates) {
      truncated = true;
      break;
    }
    const w = worlds[q]!;
    depth = Math.max(depth, depthOf[q]!);
    const v = violations(ctx, w);
    if (v) return fail(q, v);
    const succ: Succ[] = [];
    w.ws.forEach((_, i) => succ.push(...workerSteps(ctx, w, i)));
    succ.push(...worldSteps(ctx, w));
    const terminal = w.rec !== null && T.isTerminal(w.rec);
    const busy = w.ws.some((x) => x.pc !== 'idle' && x.pc !== 'done' && x.pc !== 'crashed');
    if (terminal && !busy && w.prov.pending.length === 0) {
      const end = w.rec!.state === 'handed-off' ? `handed-off:${w.rec!.handoff?.reason ?? '?'}` : w.rec!.state;
      endings[end] = (endings[end] ?? 0) + 1;
      continue; // done: nothing else can happen to this operation
    }
    // Local computation and ledger writes take no time: time passes only while every live worker waits,
    // is idle or paused (a slow worker is modelled by a pause; a crash can still happen at every step).
    const computing = w.ws.some((x) => !x.paused && (x.pc === 'decided' || x.pc === 'observing' || x.pc === 'calling' || (x.pc === 'waiting' && w.t + x.offset >= x.op!.wakeAt)));
    const tk = computing ? null : tick(ctx, w);
    if (tk) succ.push(tk);
    if (succ.length === 0) {
      if (w.rec !== null && !T.isTerminal(w.rec)) return fail(q, { invariant: 'stuck', message: `the operation stays ${w.rec.state} and no worker will ever move it` });
      continue;
    }
    for (const s of succ) {
      const idx = push(s.w, q, s.text);
      if (idx === null) continue;
      const v2 = violations(ctx, s.w);
      if (v2) return fail(idx, v2);
    }
  }
  return report(null);
}
