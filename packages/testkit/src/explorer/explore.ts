import type { RetrySafetyCard } from '@retrysafe/contract';
import * as T from '@retrysafe/contract/ledger';
import type { PolicyOverrides } from '@retrysafe/core';
import { neverSentCalls } from '@retrysafe/core/internal';
import {
  busy,
  contextFor,
  type DecideFn,
  type Fate,
  newWorker,
  newWorld,
  process,
  type SupersedeCheckFn,
  type World,
} from './model.js';
import { type Ctx, describeObs, fmt, ID, type OpState, type Succ, setW, workerSteps } from './worker.js';

export type { DecideFn, Fate, SupersedeCheckFn } from './model.js';

export interface ExploreOptions {
  readonly card: RetrySafetyCard;
  readonly policy?: PolicyOverrides;
  /** Default: core's real `decide`. */
  readonly decide?: DecideFn;
  /** 2 adds a separate recover process to the worker that runs (and recovers after its own crash). */
  readonly workers?: 1 | 2;
  /** How far the second worker's clock runs ahead and behind (default: the policy's clock-skew margin). */
  readonly clockSkewMs?: number;
  readonly fates?: readonly Fate[];
  /** Calls whose fate is not `delivered` (default 2). */
  readonly maxNetworkFaults?: number;
  readonly maxCrashes?: number;
  /** Pauses past the lease (GC, suspended VM); default 0. */
  readonly maxPauses?: number;
  /** False models a runner that does not check its lease before each call. */
  readonly runnerChecksLease?: boolean;
  /** A second client calls once with corrected params under the same intent, at any point after the first call's
   * claim; the provider rejects the first request (`creates`: the rejection leaves an object) or, `none`, applies it. */
  readonly correction?: {
    readonly rejection: 'plain' | 'creates' | 'none';
    /** Default: core's. */
    readonly supersedeCheck?: SupersedeCheckFn;
  };
  /** Default 300 000; the report says truncated. */
  readonly maxStates?: number;
}

export type TraceStep = { readonly t: number; readonly text: string };

type Found = {
  invariant: 'at-most-once' | 'durable-dispatch' | 'lease' | 'honest-terminal' | 'stuck';
  message: string;
};
/** A broken invariant, the shortest path to it, and that path as a readable story. */
export type Violation = Found & { readonly trace: readonly TraceStep[]; readonly story: string };

/** Crash, pause, resume; and the provider applying a held request. */
function worldSteps(ctx: Ctx, w: World): Succ[] {
  const out: Succ[] = [];
  w.ws.forEach((me, i) => {
    const active = busy(me) && !me.paused;
    if (active && w.crashes < ctx.maxCrashes) {
      const restarted = setW(w, i, { pc: 'idle', role: 'recover', op: null, paused: false, name: `${me.name}'` });
      const text = `${me.name} CRASHES (at ${me.pc}); a restarted process will run recover()`;
      out.push({ w: { ...restarted, crashes: w.crashes + 1 }, text });
    }
    if (active && w.pauses < ctx.maxPauses)
      out.push({
        w: { ...setW(w, i, { paused: true }), pauses: w.pauses + 1 },
        text: `${me.name} PAUSES (GC / suspended VM) at ${me.pc}`,
      });
    if (me.paused) out.push({ w: setW(w, i, { paused: false }), text: `${me.name} resumes` });
  });
  w.prov.pending.forEach((pd, k) => {
    // The bound is exclusive: a request held for the whole bound is never applied.
    if (w.t >= pd.until) return;
    const r = process(ctx.pm, w.prov, w.t, pd.sentAt, pd.req);
    const pending = w.prov.pending.filter((_, j) => j !== k);
    const made = r.p.effects > w.prov.effects ? ` — effect #${r.p.effects}` : '';
    const text = `the provider applies the held request sent at ${fmt(pd.sentAt)} (late apply) → ${describeObs(r.answer)}${made}`;
    out.push({ w: { ...w, prov: { ...r.p, pending } }, text });
  });
  return out;
}

/** The next meaningful true time: a wake-up, a lease end, a bound of the card or policy (±1 ms around it). */
function nextTime(ctx: Ctx, w: World): number | null {
  const pts: number[] = [];
  const around = (x: number) => pts.push(x - 1, x, x + 1);
  for (const me of w.ws) if (me.pc === 'waiting' && !me.paused) pts.push(me.op!.wakeAt - me.offset);
  // A live worker holding the record's fence keeps renewing the lease: its end is then no event.
  const held = w.rec !== null && w.ws.some((x) => busy(x) && !x.paused && x.op!.fence === w.rec!.fence);
  // Each worker judges the ledger's lease on its own clock, and its own lease before a call (checkOwnLease).
  const lease = w.rec?.leaseExpiresAt ?? null;
  for (const x of w.ws) {
    if (lease !== null && !held && x.pc === 'idle') around(lease - x.offset);
    if (x.op !== null && x.paused) around(x.op.leaseEnd - ctx.leaseCheckMs - x.offset);
  }
  for (const pd of w.prov.pending) around(pd.until);
  for (const c of w.prov.commits) around(c + ctx.pm.consistencyDelayMs);
  if (w.prov.key !== null && ctx.pm.retentionMs !== null) around(w.prov.key.at + ctx.pm.retentionMs);
  if (w.rec !== null && !T.isTerminal(w.rec)) {
    const offsets = new Set(w.ws.map((x) => x.offset));
    const anchors = [
      w.rec.firstDispatchedAt,
      ...w.ws.flatMap((x) => (x.op ? [x.op.lastDispatchedAt, x.op.takenOverLeaseEnd] : [])),
      held ? null : w.rec.leaseExpiresAt,
    ].filter((x): x is number => x !== null);
    for (const a of anchors) for (const b of ctx.boundsMs) for (const o of offsets) around(a + b - o);
  }
  const later = pts.filter((x) => x > w.t);
  return later.length === 0 ? null : Math.min(...later);
}

function tick(ctx: Ctx, w: World): Succ | null {
  const t = nextTime(ctx, w);
  if (t === null) return null;
  // Live holders keep the lease alive (the runner's heartbeat), on their own clocks.
  let rec = w.rec;
  const ws = w.ws.map((me) => {
    const live = busy(me) && !me.paused;
    if (!live || rec === null || rec.fence !== me.op!.fence || rec.leaseOwner !== me.name || T.isTerminal(rec))
      return me;
    const at = t + me.offset;
    rec = T.renewTransition(rec, { businessOperationId: ID, fence: me.op!.fence }, ctx.policy.leaseMs, at);
    return { ...me, op: { ...me.op!, leaseEnd: at + ctx.policy.leaseMs } };
  });
  const pending = w.prov.pending.filter((p) => p.until > t);
  return { w: { ...w, t, rec, ws, prov: { ...w.prov, pending } }, text: `time passes to ${fmt(t)}` };
}

function violations(ctx: Ctx, w: World): Found | null {
  if (w.leaseBreach) return { invariant: 'lease', message: w.leaseBreach };
  if (w.prov.effects > 1)
    return { invariant: 'at-most-once', message: `${w.prov.effects} business effects for one operation` };
  // Idempotent by nature, the effect lands on the object a rejection left: one object.
  const { effects, objects } = w.prov;
  if ((ctx.pm.idempotent ? Math.max(effects, objects) : effects + objects) > 1)
    return {
      invariant: 'at-most-once',
      message: 'a second object: a rejected request left one, and an effect was made',
    };
  if (w.rec?.state === 'succeeded' && w.rec.paramsFingerprint !== 'p' && !w.prov.corrected)
    return { invariant: 'honest-terminal', message: 'the correction is done, but the provider never applied it' };
  const calls = w.prov.calls - w.callsBefore;
  if (calls > 0 && (w.rec === null || w.rec.firstDispatchedAt === null || w.rec.attemptCount < calls))
    return {
      invariant: 'durable-dispatch',
      message: `${calls} provider calls but the ledger records ${w.rec?.attemptCount ?? 0} dispatches`,
    };
  // A run the policy bounds (attempts, elapsed) that goes on past them never ends: the state bound would hide it.
  if (w.overrun) return { invariant: 'stuck', message: w.overrun };
  for (const { name, op } of w.ws) {
    if (op !== null && op.runAttempts > ctx.policy.maxAttempts)
      return { invariant: 'stuck', message: `${name} made ${op.runAttempts} calls in one run, past maxAttempts` };
    // decide() never asks again for a send the key's retention refuses after the wait; a rule that does makes the
    // runner's loop decide on and on without acting (with no wait, forever): bounded here, not explored on.
    if (op !== null && op.redecisions > 1)
      return { invariant: 'stuck', message: `${name} decided again ${op.redecisions} times without a call or lookup` };
  }
  if (w.rec?.state === 'succeeded' && w.prov.effects === 0 && !ctx.pm.idempotent)
    return { invariant: 'honest-terminal', message: 'succeeded, but the provider holds no effect' };
  if (w.rec?.state === 'not-sent' && (w.prov.effects > 0 || w.prov.key !== null || w.prov.pending.length > 0))
    return { invariant: 'honest-terminal', message: 'given back as never sent, but a request reached the provider' };
  const rejected = w.rec?.state === 'rejected' || w.rec?.handoff?.reason === 'rejected';
  if (rejected && w.prov.effects > 0)
    return { invariant: 'honest-terminal', message: 'rejected, but the provider holds the effect' };
  return null;
}

/** A state's key. A worker's run state is long and few are distinct: each is kept once, as a number (bounded by the
 * states), so the keys of all states seen stay short. */
function key(g: Graph, w: World): string {
  const r = w.rec;
  const rec = r && [r.state, r.fence, r.leaseOwner, r.leaseExpiresAt, r.firstDispatchedAt, r.attemptCount];
  const ws = w.ws.map((x) => [x.name, x.role, x.pc, x.paused, x.op && opId(g, x.op)]);
  // Of the receipts, only what core's give-back reads of them: worlds alike in that are one state.
  // A modelled correction reads them all (core's supersede check).
  const receipts = g.correcting ? w.receipts : neverSentCalls(w.receipts);
  const faults = [w.callsBefore, w.netFaults, w.crashes, w.pauses, w.leaseBreach, w.overrun, receipts];
  return JSON.stringify([w.t, rec, r?.lastOutcome, r?.updatedAt, w.prov, ws, faults]);
}

/** Every field of a run state, once (the type checks it): its key is its values alone. JSON prints `undefined` as
 * `null` in a list, so a field that may hold both is refused by the type: two states would share a key. */
const OP_FIELDS: {
  [K in keyof OpState]-?: null extends OpState[K] ? (undefined extends OpState[K] ? never : true) : true;
} = {
  dispatchWritten: true,
  lastDispatchedAt: true,
  maybeApplied: true,
  notBefore: true,
  runAttempts: true,
  windowStartedAt: true,
  polls: true,
  keyRevision: true,
  earlierEffectMayShow: true,
  recovering: true,
  takenOverLeaseEnd: true,
  startedAt: true,
  fence: true,
  leaseEnd: true,
  decision: true,
  obs: true,
  observedAt: true,
  wakeAt: true,
  redecisions: true,
  req: true,
};
const OP_KEYS = Object.keys(OP_FIELDS) as (keyof OpState)[];

function opId(g: Graph, op: OpState): number {
  const text = JSON.stringify(OP_KEYS.map((k) => op[k]));
  const id = g.ops.get(text) ?? g.ops.size;
  g.ops.set(text, id);
  return id;
}

/** The states seen so far, each with the step that reached it first (a BFS tree). */
interface Graph {
  readonly seen: Set<string>;
  readonly correcting: boolean;
  readonly ops: Map<string, number>;
  readonly nodes: {
    w: World | null;
    readonly t: number;
    readonly parent: number;
    readonly label: string;
    readonly depth: number;
  }[];
  readonly endings: Record<string, number>;
  depth: number;
  truncated: boolean;
}

/** The starting worlds: one worker, or a runner and a recover process whose clock is ahead or behind. */
function rootsFor(ctx: Ctx, options: ExploreOptions): World[] {
  const skew = options.clockSkewMs ?? ctx.marginMs;
  const a = newWorker('A', 'run', 0);
  const c = ctx.supersedeCheck ? [newWorker('C', 'correct', 0)] : [];
  if (options.workers === 1) return [newWorld([a, ...c])];
  return [...new Set([skew, -skew])].map((o) => newWorld([a, newWorker(`B(clock ${fmt(o)})`, 'recover', o), ...c]));
}

/** Adds a world not seen before. Each state is checked once, as it is found: the report of its violation, if any. */
function push(ctx: Ctx, g: Graph, w: World, from: number, text: string): ExploreReport | null {
  const k = key(g, w);
  if (g.seen.has(k)) return null;
  g.seen.add(k);
  g.nodes.push({ w, t: w.t, parent: from, label: text, depth: from < 0 ? 0 : g.nodes[from]!.depth + 1 });
  const v = violations(ctx, w);
  return v && fail(ctx.card, g, g.nodes.length - 1, v);
}

function report(card: RetrySafetyCard, g: Graph, violation: Violation | null) {
  const ends = Object.entries(g.endings)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const found = violation ? `VIOLATION ${violation.invariant}` : 'no violation';
  return {
    operation: card.operation,
    states: g.nodes.length,
    depth: g.depth,
    truncated: g.truncated,
    violation,
    /** 'succeeded', 'handed-off:<reason>' (a rejection: 'handed-off:rejected'): how many runs ended so. */
    endings: g.endings as Readonly<Record<string, number>>,
    /** Some interleaving ends in a handoff: the card cannot promise completion under these faults. */
    handsOff: Object.keys(g.endings).some((k) => k.startsWith('handed-off')),
    summary: `${card.operation}: ${g.nodes.length} states, depth ${g.depth}${g.truncated ? ' (truncated)' : ''}; ${found}; endings: ${ends || 'none'}`,
  };
}

export type ExploreReport = ReturnType<typeof report>;

/** The report of a violation, with its path as a trace and as a story. */
function fail(card: RetrySafetyCard, g: Graph, idx: number, v: Found): ExploreReport {
  const trace: TraceStep[] = [];
  for (let n = g.nodes[idx]!; n.parent >= 0; n = g.nodes[n.parent]!)
    trace.unshift({ t: g.nodes[n.parent]!.t, text: n.label });
  // Consecutive "time passes" steps read as one.
  const shown: TraceStep[] = [];
  for (const s of trace) {
    const prev = shown[shown.length - 1];
    if (prev?.text.startsWith('time passes') && s.text.startsWith('time passes'))
      shown[shown.length - 1] = { t: prev.t, text: s.text };
    else shown.push(s);
  }
  const story = [
    `${card.operation}: ${v.invariant} violated — ${v.message}`,
    ...shown.map((s, k) => `  ${String(k + 1).padStart(2)}. [t${fmt(s.t)}] ${s.text}`),
  ].join('\n');
  return report(card, g, { ...v, trace, story });
}

/** Every next world of `w`; null when the operation has ended (counted in the endings). */
function successors(ctx: Ctx, g: Graph, w: World): Succ[] | null {
  const succ: Succ[] = [];
  for (let i = 0; i < w.ws.length; i++) succ.push(...workerSteps(ctx, w, i));
  succ.push(...worldSteps(ctx, w));
  const terminal = w.rec !== null && T.isTerminal(w.rec);
  // A correction not yet made may still come.
  const calling = w.ws.some((x) => busy(x) || (x.role === 'correct' && x.pc === 'idle'));
  if (terminal && !calling && w.prov.pending.length === 0) {
    const end = w.rec!.state === 'handed-off' ? `handed-off:${w.rec!.handoff?.reason ?? '?'}` : w.rec!.state;
    g.endings[end] = (g.endings[end] ?? 0) + 1;
    return null;
  }
  // Computation and ledger writes take no time: time passes only while no live worker has work now.
  const acting = ['decided', 'observing', 'calling'];
  const computing = w.ws.some(
    (x) => !x.paused && (x.pc === 'waiting' ? w.t + x.offset >= x.op!.wakeAt : acting.includes(x.pc)),
  );
  const tk = computing ? null : tick(ctx, w);
  if (tk) succ.push(tk);
  return succ;
}

/** Breadth-first over every interleaving; the first violation found has the shortest trace. */
export function explore(options: ExploreOptions): ExploreReport {
  const ctx = contextFor(options);
  const card = options.card;
  const maxStates = options.maxStates ?? 300_000;
  const correcting = ctx.supersedeCheck !== null;
  const g: Graph = { seen: new Set(), correcting, ops: new Map(), nodes: [], endings: {}, depth: 0, truncated: false };
  for (const r of rootsFor(ctx, options)) {
    const failed = push(ctx, g, r, -1, 'start');
    if (failed) return failed;
  }
  for (let q = 0; q < g.nodes.length; q++) {
    if (g.nodes.length >= maxStates) {
      g.truncated = true;
      break;
    }
    const node = g.nodes[q]!;
    const w = node.w!;
    // Traces need only the time of a state already expanded: its world is let go.
    node.w = null;
    g.depth = Math.max(g.depth, node.depth);
    const succ = successors(ctx, g, w);
    if (succ === null) continue;
    if (succ.length === 0 && w.rec !== null && !T.isTerminal(w.rec))
      return fail(card, g, q, {
        invariant: 'stuck',
        message: `the operation stays ${T.stateWords(w.rec.state)} and no worker will ever move it`,
      });
    for (const s of succ) {
      const failed = push(ctx, g, s.w, q, s.text);
      if (failed) return failed;
    }
  }
  return report(card, g, null);
}
