import type { LookupResult, OperationRecord, Outcome, RetrySafetyCard } from '@retrysafe/contract';
import { durationMs } from '@retrysafe/contract/rules';
import { decide as realDecide, resolvePolicy } from '@retrysafe/core/internal';
import type { ExploreOptions } from './explore.js';
import type { OpState } from './worker.js';

// The bounded world the explorer enumerates: provider, network, clocks and the runner's loop are models;
// `decide()` and the ledger's transition rules (@retrysafe/contract/ledger) are the real code.

export type DecideFn = typeof realDecide;

/** What the network does with one provider call. */
export const ALL_FATES = [
  /** The provider processes it and the answer reaches the client. */
  'delivered',
  /** Connection refused: never reached the provider, and the client knows it (not-applied). */
  'refused',
  /** Lost on the way to the provider: never processed; the client times out (unknown). */
  'lost-before',
  /** Processed; the answer is lost; the client times out (unknown). */
  'lost-after',
  /** Held in the network: the client times out now, the provider processes it later (late apply), or never. */
  'late',
  /** Delivered twice: the provider sees two identical requests; the client gets one answer. */
  'duplicated',
  /** The provider began executing, answered 500 and stored that answer under the key (card: storedResult.includesErrors). */
  'stored-error-applied',
  'stored-error-not-applied',
] as const;
export type Fate = (typeof ALL_FATES)[number];

export type ProviderModel = ReturnType<typeof providerFromCard>;

export type Pc =
  /** Not running (a recover process waiting for a candidate, or a run not started). */
  | 'idle'
  /** Decided: about to act on `op.decision` (complete / hand off are written here; send/lookup start waiting). */
  | 'decided'
  /** Waiting until `op.wakeAt` (its own clock). */
  | 'waiting'
  /** `dispatched` is durable; the provider call goes out next. */
  | 'calling'
  /** An answer (or a lookup result) arrived and is about to be decided on. */
  | 'observing'
  | 'done';

/** A worker whose clock runs `offset` ms off the provider's (true) clock; `paused`: GC or a suspended VM. */
export const newWorker = (name: string, role: 'run' | 'recover', offset: number) => ({
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
  /** The provider: effects made (must stay ≤ 1), their true commit times, the key's stored entry (folding
   * providers only), requests held in the network it may still apply, and calls that reached it. */
  prov: {
    effects: 0,
    commits: [] as readonly number[],
    key: null as { readonly at: number; readonly stored: 'result' | 'error' } | null,
    pending: [] as readonly { readonly sentAt: number; readonly until: number }[],
    calls: 0,
  },
  ws,
  netFaults: 0,
  crashes: 0,
  pauses: 0,
  /** Set when a worker called the provider on a run-out lease (only possible with runnerChecksLease false). */
  leaseBreach: undefined as string | undefined,
});
export type World = ReturnType<typeof newWorld>;
export type ProviderState = World['prov'];

/** The true provider: the worst case the card allows. Unknown facts get the explorer's pessimistic stand-ins. */
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
    /** A second same-key request is folded into the first while the key is retained. */
    folds: folds && retentionMs !== null,
    /** Applying it twice is one effect (set-value PATCH, upsert). */
    idempotent: card.sideEffect.idempotentByNature.value === true,
    /** True retention of a key, ms (provider's clock); null = nothing kept. */
    retentionMs,
    consistencyDelayMs: delay === 'unknown' ? stand.unknownDelayMs : delay === null ? 0 : durationMs(delay),
    lateApplyMs: typeof late === 'string' && late !== 'unknown' ? durationMs(late) : stand.unknownLateApplyMs,
    /** The first answer of a processed request is in-progress (202 + status), not the result. */
    async: card.sideEffect.kind.value === 'async-job',
    storesErrors: card.storedResult.includesErrors.value === true && folds,
    lookup: (m === 'none' || m === 'unknown' ? 'none' : m === 'resend-same-key' ? m : 'read') as
      | 'none'
      | 'read'
      | 'resend-same-key',
  };
}

/** A provider 500 stored under the key: a same-key re-send only replays it. */
export const STORED_500: Outcome = {
  kind: 'unknown',
  cause: 'server-error',
  status: 500,
  message: 'provider 500 (stored under the key)',
};

/** The key's entry at time t, if still retained. */
export function liveKey(pm: ProviderModel, p: ProviderState, t: number): ProviderState['key'] {
  if (!pm.folds || p.key === null || pm.retentionMs === null) return null;
  return t < p.key.at + pm.retentionMs ? p.key : null;
}

/** The provider processes one request at true time t. */
export function process(pm: ProviderModel, p: ProviderState, t: number): { p: ProviderState; answer: Outcome } {
  const k = liveKey(pm, p, t);
  if (k !== null) {
    if (k.stored === 'error') return { p, answer: STORED_500 };
    return { p, answer: { kind: 'replayed', result: { ref: 'obj-1' }, providerRef: 'obj-1' } };
  }
  const effects = pm.idempotent ? 1 : p.effects + 1;
  const next: ProviderState = {
    ...p,
    effects,
    commits: [...p.commits, t],
    key: pm.folds ? { at: t, stored: 'result' } : p.key,
  };
  const ref = `obj-${effects}`;
  if (pm.async) return { p: next, answer: { kind: 'in-progress', statusRef: `status/${ref}`, providerRef: ref } };
  return { p: next, answer: { kind: 'succeeded', result: { ref }, providerRef: ref } };
}

/** What the lookup sees at true time t. */
export function lookupAt(pm: ProviderModel, p: ProviderState, t: number): { p: ProviderState; result: LookupResult } {
  if (pm.lookup === 'none') return { p, result: { kind: 'cannot-tell', reason: 'the card offers no lookup' } };
  if (pm.lookup === 'resend-same-key') {
    const r = process(pm, p, t);
    const a = r.answer;
    if (a.kind === 'succeeded' || a.kind === 'replayed' || a.kind === 'in-progress' || a.kind === 'rejected')
      return { p: r.p, result: { kind: 'found', outcome: a } };
    return { p: r.p, result: { kind: 'cannot-tell', reason: 'same-key re-send answered unknown' } };
  }
  const visible = p.commits.find((c) => c + pm.consistencyDelayMs <= t);
  if (visible !== undefined)
    return {
      p,
      result: { kind: 'found', outcome: { kind: 'succeeded', result: { ref: 'obj-1' }, providerRef: 'obj-1' } },
    };
  return { p, result: { kind: 'not-found', reason: 'no record for this operation' } };
}

/** What every step reads: the card, the resolved policy, the provider model, the fates and the fault bounds. */
export function contextFor(options: ExploreOptions) {
  const card = options.card;
  const policy = resolvePolicy(card, options.policy);
  const marginMs = policy.clockSkewMarginMs;
  // Unknown facts get pessimistic stand-ins: a late apply up to the margin, a delay of two lookup windows.
  const pm = providerFromCard(card, {
    unknownLateApplyMs: Math.max(marginMs, 1000),
    unknownDelayMs: 2 * policy.lookupWindowMs,
  });
  // A network that delivers a request twice defeats any client when the provider does not fold
  // same-key requests: it is explored only where the card says the key folds them.
  const fates = (options.fates ?? ALL_FATES).filter(
    (f) =>
      (pm.storesErrors || !f.startsWith('stored-error')) &&
      (f !== 'duplicated' || (pm.folds && (pm.retentionMs ?? 0) > 0) || pm.idempotent),
  );
  return {
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
}
