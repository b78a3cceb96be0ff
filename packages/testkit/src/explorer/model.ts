import type { LookupResult, OperationRecord, Outcome, Receipt, RetrySafetyCard } from '@retrysafe/contract';
import { durationMs, isDuration } from '@retrysafe/contract/rules';
import {
  leaseCheckMs,
  decide as realDecide,
  supersedeCheck as realSupersedeCheck,
  resolvePolicy,
} from '@retrysafe/core/internal';
import type { ExploreOptions } from './explore.js';
import type { OpState } from './worker.js';

// Provider, network, clocks and the runner's loop are models; decide(), the runner's state rules (startState,
// decisionState, observationPatch) and the ledger transitions are the real code.

export type DecideFn = typeof realDecide;
export type SupersedeCheckFn = typeof realSupersedeCheck;

/** What the network does with one provider call. */
export const ALL_FATES = [
  'delivered',
  'refused',
  'lost-before',
  'lost-after',
  /** The client times out now; the provider processes it later, or never. */
  'late',
  'duplicated',
  /** A 500 the provider stored under the key (storedResult.includesErrors), with or without the effect. */
  'stored-error-applied',
  'stored-error-not-applied',
] as const;
export type Fate = (typeof ALL_FATES)[number];

export type ProviderModel = ReturnType<typeof providerFromCard>;

/** Where a worker is in the runner's loop; `waiting` until `op.wakeAt` on its own clock. */
export type Pc = 'idle' | 'decided' | 'waiting' | 'calling' | 'observing' | 'done';

/** A worker whose clock runs `offset` ms off the provider's (true) clock; `paused`: GC or a suspended VM. */
export const newWorker = (name: string, role: 'run' | 'recover' | 'correct', offset: number) => ({
  name,
  role,
  offset,
  pc: 'idle' as Pc,
  paused: false,
  op: null as OpState | null,
});
export type WorkerState = ReturnType<typeof newWorker>;
/** Between a claim and its end: the worker holds an operation (it may be paused). */
export const busy = (x: WorkerState) => x.pc !== 'idle' && x.pc !== 'done';

/** The world at true time 0 (the provider's and the ledger's clock, ms) with these workers, before any call. */
export const newWorld = (ws: readonly WorkerState[]) => ({
  t: 0,
  rec: null as OperationRecord | null,
  /** Effects made (must stay ≤ 1), their commit times, the key's entry, requests held in the network, calls. */
  prov: {
    effects: 0,
    /** Objects a rejected request still created; a corrected request's effect made. */
    objects: 0,
    corrected: false,
    commits: [] as readonly number[],
    key: null as {
      readonly at: number;
      readonly stored: 'result' | 'error' | 'rejected';
      readonly name: string | null;
    } | null,
    pending: [] as readonly { readonly sentAt: number; readonly until: number; readonly req: Req }[],
    calls: 0,
  },
  ws,
  /** Provider calls of the revisions a correction superseded (the record counts its own revision's). */
  callsBefore: 0,
  netFaults: 0,
  crashes: 0,
  pauses: 0,
  /** A worker called on a run-out lease (only with runnerChecksLease false). */
  leaseBreach: undefined as string | undefined,
  /** A decision that waits past the run's maxElapsed (a rule that never gives up). */
  overrun: undefined as string | undefined,
  /** The receipts written, as much of each as the runner's give-back reads (core's givesBack). */
  receipts: [] as readonly ModelReceipt[],
});
export type World = ReturnType<typeof newWorld>;
/** Of a receipt, what core's give-back and supersede check read. */
export type ModelReceipt = Pick<Receipt, 'kind' | 'neverSent' | 'rejectReason' | 'created'> &
  Partial<Pick<Receipt, 'outcome' | 'providerKey' | 'decision'>>;
export type ProviderState = World['prov'];

/** The true provider: the worst case the card allows, with pessimistic stand-ins for unknown facts. */
export function providerFromCard(card: RetrySafetyCard, stand: { unknownLateApplyMs: number; unknownDelayMs: number }) {
  const sem = card.storedResult.semantics.value;
  const travels = card.providerKey.travels.value;
  const folds = (sem === 'replays' || sem === 'rejects-duplicate') && travels !== 'none' && travels !== 'unknown';
  const ret = card.retention.minimum.value;
  const retentionMs = ret === 'unknown' || ret === null ? (folds && ret === 'unknown' ? 0 : null) : durationMs(ret);
  const delay = card.lookup.consistencyDelay.value;
  const late = card.lookup.lateApplyBound?.value;
  const m = card.lookup.method.value;
  return {
    folds: folds && retentionMs !== null,
    idempotent: card.sideEffect.idempotentByNature.value === true,
    /** null: nothing kept. */
    retentionMs,
    consistencyDelayMs: delay === 'unknown' ? stand.unknownDelayMs : delay === null ? 0 : durationMs(delay),
    lateApplyMs: isDuration(late) ? durationMs(late) : stand.unknownLateApplyMs,
    async: card.sideEffect.kind.value === 'async-job',
    /** A same-key duplicate of a request still running is refused or folded (card concurrency); else a second effect. */
    foldsInFlight: ['rejects-in-progress', 'waits-then-replays'].includes(card.concurrency.value),
    // Unknown is the worst case: a 500 may be stored under the key.
    storesErrors: card.storedResult.includesErrors.value !== false && folds,
    lookup: m === 'none' || m === 'unknown' ? ('none' as const) : m === 'resend-same-key' ? m : ('read' as const),
    /** The first request's params are refused (a correction is modelled); `creates`: the refusal leaves an object. */
    rejects: null as null | { readonly creates: boolean },
  };
}

/** A provider 500 stored under the key: a same-key re-send only replays it. */
export const STORED_500: Outcome = {
  kind: 'unknown',
  cause: 'server-error',
  status: 500,
  message: 'provider 500 (stored under the key)',
};

/** A request as the provider sees it: the params it carries (`p`, or a correction's) and its key. */
export type Req = { readonly params: string; readonly key: string | null };
export const FIRST_REQ: Req = { params: 'p', key: 'rs-key' };

export function liveKey(pm: ProviderModel, p: ProviderState, t: number, key = FIRST_REQ.key): ProviderState['key'] {
  if (!pm.folds || p.key === null || pm.retentionMs === null || p.key.name !== key) return null;
  return t < p.key.at + pm.retentionMs ? p.key : null;
}

/** The first effect, as a replay or a lookup shows it. */
const FIRST = { result: { ref: 'obj-1' }, providerRef: 'obj-1' };

/**
 * `heldSince`: when a held request was sent. A key stored since (at that instant too) came while it may already have
 * been running at the provider: only a card whose concurrency folds in-flight duplicates lets that key fold it.
 */
export function process(
  pm: ProviderModel,
  p: ProviderState,
  t: number,
  heldSince?: number,
  req = FIRST_REQ,
): { p: ProviderState; answer: Outcome } {
  const k = liveKey(pm, p, t, req.key);
  if (k !== null && (pm.foldsInFlight || heldSince === undefined || k.at < heldSince))
    return {
      p,
      answer:
        k.stored === 'error' ? STORED_500 : k.stored === 'rejected' ? rejection(pm) : { kind: 'replayed', ...FIRST },
    };
  if (pm.rejects !== null && req.params === FIRST_REQ.params) {
    // A processed rejection: stored under the key only where the card says errors are stored.
    const key = pm.storesErrors ? { at: t, stored: 'rejected' as const, name: req.key } : p.key;
    // Idempotent by nature (an upsert): a refused call leaves at most the one object the operation is about.
    const objects = pm.rejects.creates ? (pm.idempotent ? 1 : p.objects + 1) : p.objects;
    return { p: { ...p, objects, key }, answer: rejection(pm) };
  }
  const effects = pm.idempotent ? 1 : p.effects + 1;
  const next: ProviderState = {
    ...p,
    effects,
    corrected: p.corrected || req.params !== FIRST_REQ.params,
    commits: [...p.commits, t],
    key: pm.folds ? { at: t, stored: 'result', name: req.key } : p.key,
  };
  const ref = `obj-${effects}`;
  if (pm.async) return { p: next, answer: { kind: 'in-progress', statusRef: `status/${ref}`, providerRef: ref } };
  return { p: next, answer: { kind: 'succeeded', result: { ref }, providerRef: ref } };
}

const rejection = (pm: ProviderModel): Outcome => ({
  kind: 'rejected',
  reason: 'validation',
  message: 'invalid params',
  ...(pm.rejects?.creates && { created: 'obj-r1' }),
});

export function lookupAt(
  pm: ProviderModel,
  p: ProviderState,
  t: number,
  req = FIRST_REQ,
): { p: ProviderState; result: LookupResult } {
  if (pm.lookup === 'none') return { p, result: { kind: 'cannot-tell', reason: 'the card offers no lookup' } };
  if (pm.lookup === 'resend-same-key') {
    const r = process(pm, p, t, undefined, req);
    const a = r.answer;
    if (a.kind === 'succeeded' || a.kind === 'replayed' || a.kind === 'in-progress' || a.kind === 'rejected')
      return { p: r.p, result: { kind: 'found', outcome: a } };
    return { p: r.p, result: { kind: 'cannot-tell', reason: 'same-key re-send answered unknown' } };
  }
  if (p.commits.some((c) => c + pm.consistencyDelayMs <= t))
    return { p, result: { kind: 'found', outcome: { kind: 'succeeded', ...FIRST } } };
  return { p, result: { kind: 'not-found', reason: 'no record for this operation' } };
}

/** A misspelt fate or a bound that is no count would explore less and still say "no violation": refused. */
function checkOptions(o: ExploreOptions): void {
  for (const f of o.fates ?? [])
    if (!ALL_FATES.includes(f)) throw new TypeError(`unknown fate '${String(f)}'; known: ${ALL_FATES.join(', ')}`);
  const bounds = { maxNetworkFaults: 0, maxCrashes: 0, maxPauses: 0, maxStates: 1 } as const;
  for (const [name, min] of Object.entries(bounds)) {
    const v = o[name as keyof typeof bounds];
    if (v !== undefined && !(Number.isInteger(v) && v >= min))
      throw new TypeError(`${name} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  }
  if (o.workers !== undefined && o.workers !== 1 && o.workers !== 2)
    throw new TypeError(`workers must be 1 or 2, got ${JSON.stringify(o.workers)}`);
}

export function contextFor(options: ExploreOptions) {
  checkOptions(options);
  const card = options.card;
  const policy = resolvePolicy(card, options.policy);
  const marginMs = policy.clockSkewMarginMs;
  const ret = card.retention.minimum.value;
  const retentionMs = typeof ret === 'string' && ret !== 'unknown' ? [durationMs(ret), durationMs(ret) - marginMs] : [];
  const rejection = options.correction?.rejection;
  const pm = {
    ...providerFromCard(card, {
      unknownLateApplyMs: Math.max(marginMs, 1000),
      unknownDelayMs: 2 * policy.lookupWindowMs,
    }),
    rejects: rejection && rejection !== 'none' ? { creates: rejection === 'creates' } : null,
  };
  // A duplicating network defeats any client unless the provider folds same-key requests.
  const fates = (options.fates ?? ALL_FATES).filter(
    (f) =>
      (pm.storesErrors || !f.startsWith('stored-error')) &&
      (f !== 'duplicated' || (pm.folds && (pm.retentionMs ?? 0) > 0) || pm.idempotent),
  );
  return {
    card,
    policy,
    decide: options.decide ?? realDecide,
    /** A corrected request's check (core's supersedeCheck); null: no correction is modelled. */
    supersedeCheck: options.correction ? (options.correction.supersedeCheck ?? realSupersedeCheck) : null,
    pm,
    fates,
    maxNetworkFaults: options.maxNetworkFaults ?? 2,
    maxCrashes: options.maxCrashes ?? 1,
    maxPauses: options.maxPauses ?? 0,
    marginMs,
    /** How long before its lease end the runner stops sending (runner/lease.ts checkOwnLease). */
    leaseCheckMs: leaseCheckMs(policy.leaseMs),
    checksLease: options.runnerChecksLease ?? true,
    /** How long after a send or a lease end the card's and policy's bounds fall (explore.ts nextTime). */
    boundsMs: [pm.consistencyDelayMs + pm.lateApplyMs, pm.lateApplyMs, pm.consistencyDelayMs, ...retentionMs],
  };
}

export type Ctx = ReturnType<typeof contextFor>;
