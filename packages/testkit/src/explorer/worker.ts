/** One worker's steps in the explorer's model: claim, decide, wait, call the provider, observe. */
import {
  asBusinessOperationId,
  type ClaimInput,
  type ClaimResult,
  type HandoffPacket,
  type LookupResult,
  type OperationRecord,
  type Outcome,
  type Receipt,
  type ReceiptKind,
  type StatePatch,
} from '@retrysafe/contract';
import * as T from '@retrysafe/contract/ledger';
import type { Decision, DecisionState } from '@retrysafe/core';
import {
  correctionRule,
  currentRevisionNumber,
  decisionState,
  givesBack,
  handoffReason,
  isInProgress,
  keyGoneBeforeSend,
  needsFreshKey,
  observationPatch,
  oldOwnerMaySend,
  startState,
  takenOverLeaseEnd,
} from '@retrysafe/core/internal';
import {
  type Ctx,
  type Fate,
  liveKey,
  lookupAt,
  type ModelReceipt,
  process,
  type Req,
  STORED_500,
  type WorkerState,
  type World,
} from './model.js';

export type { Ctx } from './model.js';

export type Succ = { readonly w: World; readonly text: string };

export const ID = asBusinessOperationId('explore-op-1');
const random = () => 0.5;

/** A signed duration as `+1h05m03.000s`, `-5m03.000s` or `+3.000s`. */
export function fmt(ms: number): string {
  const a = Math.abs(ms);
  const h = Math.floor(a / 3_600_000);
  const m = Math.floor(a / 60_000) % 60;
  const s = ((a % 60_000) / 1000).toFixed(3);
  const hm = h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : m > 0 ? `${m}m` : '';
  return `${ms < 0 ? '-' : '+'}${hm}${hm ? s.padStart(6, '0') : s}s`;
}

const now = (w: World, i: number) => w.t + w.ws[i]!.offset;
export const setW = (w: World, i: number, patch: Partial<WorkerState>): World => ({
  ...w,
  ws: w.ws.map((x, j) => (j === i ? { ...x, ...patch } : x)),
});
const setOp = (w: World, i: number, patch: Partial<OpState>, pc?: WorkerState['pc']): World =>
  setW(w, i, { op: { ...w.ws[i]!.op!, ...patch }, ...(pc ? { pc } : {}) });
const holds = (w: World, i: number) =>
  w.rec !== null && w.ws[i]!.op !== null && w.rec.fence === w.ws[i]!.op!.fence && w.rec.leaseOwner === w.ws[i]!.name;

/** The runner's own state rules see this worker's clock; no ledger capabilities: workers' clocks judge leases. */
const rules = (n: number) => ({ clock: { now: () => n }, ledger: {} });

/** The receipts a run reads: none unless a correction is modelled (then a revision's rules read the earlier ones). */
const receiptsOf = (ctx: Ctx, w: World) => (ctx.supersedeCheck ? (w.receipts as Receipt[]) : []);

/** What decide() is told, by core's decisionState over the world's record. */
function stateOf(ctx: Ctx, w: World, i: number, observedAt?: number): DecisionState {
  const s = { ...w.ws[i]!.op!, record: w.rec!, receipts: receiptsOf(ctx, w) };
  return decisionState(rules(now(w, i)), ctx.card, s, observedAt);
}

function describeDecision(d: Decision): string {
  if (d.action === 'handoff') return `hand off (${d.reason}): ${d.why}`;
  if (d.action === 'complete') return `complete${d.adopted ? ' (adopt)' : ''}: ${d.why}`;
  return `${d.action}${d.delayMs > 0 ? ` in ${fmt(d.delayMs).slice(1)}` : ' now'}: ${d.why}`;
}

export function describeObs(o: Outcome | LookupResult): string {
  if (o.kind === 'found') return `found (${o.outcome.kind})`;
  if (o.kind === 'unknown') return `unknown (${o.cause}${o.status ? ` ${o.status}` : ''})`;
  return o.kind;
}

function packet(reason: string, rec: OperationRecord): HandoffPacket {
  return { reason, lastKnown: { outcome: rec.lastOutcome }, safeNextActions: [] } as unknown as HandoffPacket;
}

/** A worker's next step(s) from its program counter. Mirrors the runner's loop (packages/core/src/runner/loop.ts). */
export function workerSteps(ctx: Ctx, w: World, i: number): Succ[] {
  const me = w.ws[i]!;
  if (me.paused) return [];
  switch (me.pc) {
    case 'idle': {
      if (me.role === 'run') return [claim(ctx, w, i, true, `${me.name} run(): claims the operation`)];
      // A second call, with corrected params under the same intent, once the first call has claimed it.
      if (me.role === 'correct') return w.rec === null ? [] : [correct(ctx, w, i)];
      // recover(): a candidate is a non-terminal record whose lease is absent or expired on this worker's clock.
      if (w.rec === null || T.isTerminal(w.rec) || T.leaseLive(w.rec, now(w, i))) return [];
      const found = `finds it ${T.stateWords(w.rec.state)} with the lease expired, takes it over`;
      return [claim(ctx, w, i, false, `${me.name} recover(): ${found}`)];
    }
    case 'decided':
      return [decided(w, i)];
    case 'waiting':
      return waiting(ctx, w, i);
    case 'calling':
      return call(ctx, w, i);
    case 'observing':
      return [observe(ctx, w, i)];
  }
  return [];
}

/** The runner acts on its decision: records the end, or waits before the send or lookup. */
function decided(w: World, i: number): Succ {
  const { name: tag, op } = w.ws[i]! as WorkerState & { op: OpState };
  const d = op.decision;
  const n = now(w, i);
  // Given back with the observation's write (runner/loop.ts): its lease is released with it.
  if (d.action === 'handoff' && w.rec?.state === 'not-sent' && w.rec.fence === op.fence)
    return { w: setW(w, i, { pc: 'done' }), text: `${tag}: nothing was ever sent: given back (not-sent)` };
  if (d.action === 'complete' || d.action === 'handoff') {
    if (!holds(w, i)) return refused(w, i);
    const rec = w.rec!;
    const end = (next: OperationRecord, text: string): Succ => ({
      w: setW({ ...w, rec: next }, i, { pc: 'done' }),
      text: `${tag}: ${text}`,
    });
    if (d.action === 'complete') {
      if (rec.state === 'succeeded') return end(rec, 'ledger ← succeeded');
      const patch = { state: 'succeeded', lastOutcome: rec.lastOutcome, result: { ref: 'obj' }, providerRef: 'obj' };
      return end(T.setStateTransition(rec, { ...patch, now: n } as StatePatch), 'ledger ← succeeded');
    }
    const reason = handoffReason(op.recovering, d);
    if (rec.state === 'handed-off' || rec.state === 'succeeded') return end(rec, `already ${T.stateWords(rec.state)}`);
    // A rejection too is a handoff (runner/terminal.ts handOff): the runner never writes the state `rejected`.
    return end(T.handOffTransition(rec, packet(reason, rec), n), `ledger ← handed-off (${reason})`);
  }
  // send / lookup: the runner counts the poll, then waits (renewing its lease).
  const polling = d.action === 'lookup' || isInProgress(op.obs);
  const patch: Partial<OpState> = {
    wakeAt: n + d.delayMs,
    ...(polling ? { windowStartedAt: op.windowStartedAt ?? n, polls: op.polls + 1 } : {}),
  };
  return { w: setOp(w, i, patch, 'waiting'), text: `${tag}: waits ${fmt(d.delayMs).slice(1)} before the ${d.action}` };
}

/** The wait is over: decide again if the key ran out meanwhile, else write dispatched or look up. */
function waiting(ctx: Ctx, w: World, i: number): Succ[] {
  const { name: tag, op } = w.ws[i]! as WorkerState & { op: OpState };
  const n = now(w, i);
  if (n < op.wakeAt) return [];
  const d = op.decision;
  // The claim wrote dispatched: the runner calls without another ledger write (its own lease checked next).
  if (d.action === 'send' && op.dispatchWritten)
    return [{ w: setOp(w, i, {}, 'calling'), text: `${tag}: (the claim already wrote dispatched)` }];
  if (w.rec === null || op.fence !== w.rec.fence) return [refused(w, i)];
  const waited = { maybeApplied: op.maybeApplied, firstDispatchedAt: w.rec.firstDispatchedAt, now: n };
  if (keyGoneBeforeSend(ctx.card, d, op.obs, waited, ctx.marginMs)) {
    const again = ctx.decide(ctx.card, stateOf(ctx, w, i), op.obs, { policy: ctx.policy, random });
    const text = `${tag}: the wait outlasted the key's retention; decides again → ${describeDecision(again)}`;
    const patch = { decision: again, redecisions: op.redecisions + 1 };
    return [{ w: setOp({ ...w, ...overrun(ctx, w, i, again) }, i, patch, 'decided'), text }];
  }
  const renewed = T.renewTransition(w.rec, { businessOperationId: ID, fence: op.fence }, ctx.policy.leaseMs, n);
  const leaseEnd = n + ctx.policy.leaseMs;
  if (d.action === 'send') {
    const rec = T.dispatchedTransition(renewed, n);
    const text = `${tag}: ledger ← dispatched (attempt ${rec.attemptCount})`;
    return [{ w: setOp({ ...w, rec }, i, { leaseEnd }, 'calling'), text }];
  }
  const rec =
    renewed.state === 'reconciling' || renewed.state === 'in-progress'
      ? renewed
      : T.setStateTransition(renewed, { state: 'reconciling', now: n } as StatePatch);
  const r = lookupAt(ctx.pm, w.prov, w.t, op.req);
  const sent = r.p !== w.prov ? ' (the lookup re-sends with the same key)' : '';
  const made = r.p.effects > w.prov.effects ? ` — the provider makes effect #${r.p.effects}` : '';
  const looked = (next: World, obs: LookupResult, text: string): Succ => ({
    w: setOp({ ...next, rec }, i, { obs, observedAt: n, leaseEnd, redecisions: 0 }, 'observing'),
    text: `${tag}: looks up${text}`,
  });
  const out = [looked({ ...w, prov: r.p }, r.result, `${sent} → ${describeObs(r.result)}${made}`)];
  if (w.netFaults < ctx.maxNetworkFaults) {
    const failed = { kind: 'cannot-tell', reason: 'lookup request failed' } as LookupResult;
    out.push(looked({ ...w, netFaults: w.netFaults + 1 }, failed, ' → the lookup request fails (cannot tell)'));
  }
  return out;
}

function refused(w: World, i: number): Succ {
  const text = `${w.ws[i]!.name}: its fenced write is refused (lease lost): waits for the holder, takes over once its lease lapses`;
  return { w: lostLease(w, i), text };
}

/** A refused fenced write or a run-out lease: the runner waits for the holder, then takes over (waitForOther → claim). */
const lostLease = (w: World, i: number) => setW(w, i, { pc: 'idle', role: 'recover', op: null });

/** Core's startState of a claim: the record stays in the world, and the lease is kept as its fence and end. */
function newOp(
  ctx: Ctx,
  claimed: Extract<ClaimResult, { kind: 'claimed' }>,
  dispatchWritten: boolean,
  n: number,
  earlier: Receipt[],
) {
  const start = { ...claimed, claimedAt: n, dispatchWritten };
  const { record, receipts, lease, ...s } = startState(rules(n), ctx, start, earlier);
  return {
    ...s,
    fence: record.fence,
    /** What its calls carry: the params and key on record when it was claimed. */
    req: { params: record.paramsFingerprint, key: record.providerKey } as Req,
    /** The lease's end as this worker knows it, on its own clock. */
    leaseEnd: lease.expiresAt,
    decision: { action: 'send', delayMs: 0, why: '' } as Decision,
    obs: null as Outcome | LookupResult | null,
    observedAt: n,
    wakeAt: n,
    /** Decided again after a wait, without a call or lookup since (explore.ts: a rule that spins). */
    redecisions: 0,
  };
}
export type OpState = ReturnType<typeof newOp>;

const claimInput = (ctx: Ctx, w: World, i: number, more: Partial<ClaimInput>): ClaimInput => ({
  businessOperationId: ID,
  provider: ctx.card.provider,
  operation: ctx.card.operation,
  intentFingerprint: 'i',
  paramsFingerprint: 'p',
  params: {},
  providerKey: ctx.pm.folds || ctx.card.providerKey.travels.value !== 'none' ? ('rs-key' as never) : null,
  owner: w.ws[i]!.name,
  leaseMs: ctx.policy.leaseMs,
  now: now(w, i),
  ...more,
});

function claim(ctx: Ctx, w: World, i: number, dispatch: boolean, text: string): Succ {
  const { result, write } = T.claimTransition(w.rec, claimInput(ctx, w, i, dispatch ? { dispatch: true } : {}));
  if (result.kind !== 'claimed') return { w: setW(w, i, { pc: 'done' }), text: `${text}: ${result.kind}` };
  return claimed(ctx, { ...w, rec: write! }, i, result, dispatch, text);
}

/** The claim's run: core's startState, then its first decision. */
function claimed(
  ctx: Ctx,
  w: World,
  i: number,
  result: Extract<ClaimResult, { kind: 'claimed' }>,
  dispatch: boolean,
  text: string,
): Succ {
  const n = now(w, i);
  const rec = result.record;
  const dispatchWritten = dispatch && !result.takenOver && rec.state === 'dispatched';
  const op = newOp(ctx, result, dispatchWritten, n, [...receiptsOf(ctx, w)]);
  const w1 = setW(w, i, { op, pc: 'decided' });
  const first = ctx.decide(ctx.card, stateOf(ctx, w1, i), null, { policy: ctx.policy, random });
  return {
    w: setOp(w1, i, { decision: first }),
    text: `${text}${dispatchWritten ? ' (created dispatched)' : ''} → ${describeDecision(first)}`,
  };
}

function call(ctx: Ctx, w: World, i: number): Succ[] {
  const { name: tag, op } = w.ws[i]! as WorkerState & { op: OpState };
  const n = now(w, i);
  // The runner checks the lease it knows, on its own clock, immediately before every send
  // (runner/lease.ts checkOwnLease): it does not read the ledger, which another worker may have written since.
  const leaseLive = n < op.leaseEnd;
  if (n >= op.leaseEnd - ctx.leaseCheckMs && ctx.checksLease) {
    // LeaseExpiredError: the run releases its lease (a fenced write) and ends; a later run() or recover() reconciles.
    // Not while an owner it took over from may still send: the lease then lapses.
    const keep = oldOwnerMaySend(op.takenOverLeaseEnd, n, ctx.marginMs);
    const rec = holds(w, i) && !keep ? T.releaseTransition(w.rec!) : w.rec;
    const text = `${tag}: its lease runs out before the call: does not send; ${keep ? 'lets it lapse' : 'releases it'}, a later recover() reconciles`;
    return [{ w: lostLease({ ...w, rec }, i), text }];
  }
  const rec = w.rec!;
  const breach = `${tag} called the provider with its lease run out on its own clock (lease end ${fmt(op.leaseEnd)})`;
  const calls = w.prov.calls + 1;
  return ctx.fates.flatMap((fate) => {
    const fault = fate !== 'delivered';
    const r =
      fault && w.netFaults >= ctx.maxNetworkFaults ? null : network(ctx, fate, { ...w.prov, calls }, w.t, op.req);
    if (!r) return [];
    const [prov, obs, how] = r;
    const patch = {
      obs,
      observedAt: n,
      lastDispatchedAt: Math.max(op.lastDispatchedAt ?? -Infinity, rec.updatedAt, n),
      runAttempts: op.runAttempts + 1,
      redecisions: 0,
    };
    const next = {
      ...w,
      ...(leaseLive ? {} : { leaseBreach: breach }),
      prov,
      netFaults: w.netFaults + (fault ? 1 : 0),
    };
    const made = prov.effects > w.prov.effects ? ` — the provider makes effect #${prov.effects}` : '';
    const text = `${tag}: calls the provider (call ${calls}): ${how}${made}`;
    return [{ w: setOp(next, i, { ...patch, dispatchWritten: false }, 'observing'), text }];
  });
}

/** run() with corrected params (runner/claim.ts claimAndDrive): over a row at rest, a new revision where the supersede
 * check allows it (its key as core's needsFreshKey says); else the call ends with nothing sent. */
function correct(ctx: Ctx, w: World, i: number): Succ {
  const tag = `${w.ws[i]!.name} run() with corrected params`;
  const fixed = { paramsFingerprint: 'p2' };
  const { result, write } = T.claimTransition(w.rec, claimInput(ctx, w, i, { ...fixed, dispatch: true }));
  const n = now(w, i);
  const end = (rec: OperationRecord | null, why: string): Succ => ({
    w: setW({ ...w, rec }, i, { pc: 'done' }),
    text: `${tag}: ${why}; nothing sent`,
  });
  const calledAgain = { callsBefore: w.prov.calls };
  if (result.kind === 'claimed' && !result.takenOver) {
    // Given back as never sent: the call opens it again, as a new operation with its own params.
    const opened = setW({ ...w, ...calledAgain, rec: write }, i, { role: 'run' });
    return claimed(ctx, opened, i, result, true, `${tag}: opens it again (not sent)`);
  }
  if (result.kind === 'claimed') {
    // A run stopped mid-flight, taken over with other params: the lease goes back (lapses while its owner may send).
    const keep = oldOwnerMaySend(takenOverLeaseEnd(rules(n), result), n, ctx.marginMs);
    return end(keep ? write : T.releaseTransition(write!), 'takes over a run with other params, gives it back');
  }
  if (result.kind !== 'terminal') return end(w.rec, `the claim finds it ${result.kind}`);
  const rec = result.record;
  const receipts = w.receipts as Receipt[];
  const check = ctx.supersedeCheck!(rec, receipts, correctionRule({ card: ctx.card, policy: ctx.policy }, n));
  if (!check.ok) return end(rec, `refused: ${check.why}`);
  const providerKey = needsFreshKey(ctx.card, receipts) ? ('rs-key-2' as never) : rec.providerKey;
  const supersede = { fence: rec.fence, revision: currentRevisionNumber(receipts) + 1 };
  const again = T.claimTransition(rec, claimInput(ctx, w, i, { ...fixed, providerKey, existing: true, supersede }));
  if (again.result.kind !== 'claimed') return end(rec, `the revision's claim finds it ${again.result.kind}`);
  // The supersede's resolve receipt (claimAgain writes it with the claim).
  const resolve: ModelReceipt = { kind: 'resolve', decision: { action: 'supersede', reason: '' }, providerKey };
  const revised = { ...calledAgain, rec: again.write, receipts: [...w.receipts, resolve] };
  const w1 = setW({ ...w, ...revised }, i, { role: 'run' });
  return claimed(ctx, w1, i, again.result, false, `${tag}: supersedes it as revision ${supersede.revision}`);
}

const TIMEOUT: Outcome = { kind: 'unknown', cause: 'timeout', message: 'timed out' };
const REFUSED: Outcome = { kind: 'not-applied', message: 'connection refused', neverSent: true };

/** One call under one network fate: the provider afterwards, the answer the client sees, in words; null if moot. */
function network(
  ctx: Ctx,
  fate: Fate,
  prov: World['prov'],
  t: number,
  req: Req,
): [World['prov'], Outcome, string] | null {
  const processed = () => process(ctx.pm, prov, t, undefined, req);
  switch (fate) {
    case 'delivered': {
      const r = processed();
      return [r.p, r.answer, `delivered → ${describeObs(r.answer)}`];
    }
    case 'refused':
      return [prov, REFUSED, 'connection refused (never reached the provider)'];
    case 'lost-before':
      return [prov, TIMEOUT, 'lost before the provider → client times out'];
    case 'lost-after': {
      const r = processed();
      return [r.p, TIMEOUT, `the provider answers ${describeObs(r.answer)}, the answer is lost → client times out`];
    }
    case 'late': {
      const pending = [...prov.pending, { sentAt: t, until: t + ctx.pm.lateApplyMs, req }];
      return [{ ...prov, pending }, TIMEOUT, 'held in the network → client times out; the provider may still apply it'];
    }
    case 'duplicated': {
      const r = process(ctx.pm, processed().p, t, undefined, req);
      return [r.p, r.answer, `delivered twice → ${describeObs(r.answer)}`];
    }
    case 'stored-error-applied':
    case 'stored-error-not-applied': {
      if (!ctx.pm.storesErrors || liveKey(ctx.pm, prov, t, req.key) !== null) return null;
      const applied = fate === 'stored-error-applied';
      const p = { ...(applied ? processed().p : prov), key: { at: t, stored: 'error' as const, name: req.key } };
      const how = `the provider answers 500 and stores it under the key${applied ? ' (the effect was made)' : ' (no effect)'}`;
      return [p, STORED_500, how];
    }
  }
}

function observe(ctx: Ctx, w: World, i: number): Succ {
  const { name: tag, op } = w.ws[i]! as WorkerState & { op: OpState };
  const n = now(w, i);
  if (!holds(w, i)) return refused(w, i);
  const obs = op.obs!;
  let notBefore = op.notBefore;
  const retryAfterMs = op.decision.action === 'send' && 'retryAfterMs' in obs ? obs.retryAfterMs : undefined;
  if (typeof retryAfterMs === 'number' && retryAfterMs > 0) notBefore = Math.max(notBefore ?? 0, n + retryAfterMs);
  const w0 = setOp(w, i, { notBefore });
  const observed = stateOf(ctx, w0, i, op.observedAt);
  const d = ctx.decide(ctx.card, observed, obs, { policy: ctx.policy, random });
  const { maybeApplied, patch } = observationPatch(ctx.card, observed, obs);
  // One receipt per observation, kinded as the runner's loop kinds it; core's give-back reads them all.
  const send = op.decision.action === 'send';
  const kind: ReceiptKind = send ? (w.rec!.attemptCount === 1 ? 'dispatch' : 'resend') : 'lookup';
  const neverSent = obs.kind === 'not-applied' && obs.neverSent === true;
  const rejected = obs.kind === 'rejected' ? { rejectReason: obs.reason, created: obs.created } : {};
  const receipt: ModelReceipt = { kind, outcome: obs.kind, providerKey: op.req.key as never, ...rejected };
  const receipts = [...w.receipts, { ...receipt, ...(neverSent && { neverSent }) }];
  const giveBack = givesBack(d, maybeApplied, receipts, w.rec!);
  const rec =
    patch !== null && !T.isTerminal(w.rec!)
      ? T.setStateTransition(w.rec!, { ...patch, ...(giveBack && { state: 'not-sent' as const }), now: n })
      : w.rec!;
  return {
    w: setOp({ ...w0, rec, receipts, ...overrun(ctx, w0, i, d) }, i, { decision: d, maybeApplied }, 'decided'),
    text: `${tag}: decides → ${describeDecision(d)}`,
  };
}

/** A wait the decision asks for that ends past the run's maxElapsed (the runner bounds each wait by it); {} if none. */
function overrun(ctx: Ctx, w: World, i: number, d: Decision): Partial<World> {
  const { name, op } = w.ws[i]!;
  const into = now(w, i) + (d.action === 'send' || d.action === 'lookup' ? d.delayMs : 0) - op!.startedAt;
  if (d.action === 'complete' || d.action === 'handoff' || d.delayMs === 0 || into <= ctx.policy.maxElapsedMs)
    return {};
  return { overrun: `${name} decides to ${d.action} ${into} ms into its run, past maxElapsed` };
}
