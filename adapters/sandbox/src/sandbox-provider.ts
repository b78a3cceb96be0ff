import { fingerprint } from '@retrysafe/contract';
import { createCounts, createFaultQueue, createSandboxClock } from '@retrysafe/sandbox-kit';

/**
 * How the sandbox provider treats re-sends. Each field maps onto one field of the retry safety card
 * that `createSandboxAdapter` computes, so the card the runner reads is exactly what the sandbox does.
 */
export interface SandboxBehaviour {
  /** Same key again (params matching) ⇒ the stored result comes back, marked replayed. False ⇒ every request is a new record. */
  readonly replays: boolean;
  /** How long a key and its stored result are kept. After that the key is pruned and a re-send creates a NEW record. Null ⇒ the sandbox publishes no retention (the card says null, so the runner never relies on the key); keys are then kept for ever. */
  readonly retentionMs: number | null;
  /** Same key, other params: `mismatch-error` ⇒ 422; `replay-anyway` ⇒ the stored result; `none` ⇒ processed as a new record. */
  readonly parameterMatching: 'mismatch-error' | 'replay-anyway' | 'none';
  /** Same key while the first is still processing: 409 in progress, wait then replay, or a duplicate record. */
  readonly concurrency: 'rejects-in-progress' | 'waits-then-replays' | 'duplicates';
  /** `get-by-key`: records can be found by their key (for ever, also past retention). `none`: no lookup. */
  readonly lookup: 'get-by-key' | 'none';
  /** A new record becomes visible to lookups this long after it was created (consistency delay). */
  readonly lookupDelayMs?: number;
  /**
   * Card fact only (the sandbox itself applies a request whenever it reaches it): the bound the card
   * declares as lookup.lateApplyBound, for a setup where requests are never held longer. Unset: unknown.
   */
  readonly lateApplyMs?: number;
  /** A new record stays `processing` this long (202 + status). 0 (default) ⇒ done at once (201). */
  readonly processingMs?: number;
  /** Epoch ms source; defaults to Date.now. Share the runner's virtual clock in tests. */
  readonly clock?: () => number;
  /** How the provider waits (for `waits-then-replays`); defaults to a timer. Share the virtual clock's sleep in tests. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** A scripted failure for the next call(s); see `SandboxProvider.failNext`. */
export type SandboxFault =
  /** Refused before anything was stored (a rate limiter in front of the idempotency layer): 429 + Retry-After. */
  | { readonly kind: 'not-applied'; readonly retryAfterMs?: number }
  /** Validation error: 400. Nothing stored. */
  | {
      readonly kind: 'rejected';
      readonly message?: string /** Field errors the provider names (path, message). */;
      readonly fields?: readonly { path: string; message: string }[];
    }
  /** The record IS created and the key stored, but the caller gets a 500 (in process: an unknown outcome). The "lost response". */
  | { readonly kind: 'unknown-after-commit' }
  /** Nothing is created, but the caller gets a 503 it cannot tell from a commit. */
  | { readonly kind: 'unknown-before-commit' }
  /**
   * Late commit: the caller gets a 503 at once (it timed out), and the provider applies the request
   * `afterMs` later on its clock — before any call or lookup it answers from then on (or at `settle()`).
   */
  | { readonly kind: 'late-commit'; readonly afterMs: number };

export interface SandboxRecord {
  readonly id: string;
  readonly key: string | null;
  readonly paramsFingerprint: string;
  readonly createdAt: number;
  readonly completesAt: number;
  readonly status: 'processing' | 'done';
}

export type SandboxResponse =
  | { readonly type: 'created'; readonly record: SandboxRecord }
  | { readonly type: 'replayed'; readonly record: SandboxRecord }
  /** Created (or already known) and still processing: 202 with a status reference. */
  | { readonly type: 'accepted'; readonly record: SandboxRecord; readonly retryAfterMs: number }
  | { readonly type: 'in-progress'; readonly retryAfterMs: number }
  | { readonly type: 'mismatch'; readonly message: string }
  | {
      readonly type: 'rejected';
      readonly message: string;
      readonly fields?: readonly { path: string; message: string }[];
    }
  | { readonly type: 'throttled'; readonly retryAfterMs: number }
  | { readonly type: 'server-error'; readonly status: 500 | 503; readonly committed: boolean };

/** What a lookup by key answers (see `SandboxProvider.answerLookup`). */
export type SandboxLookupResponse =
  | { readonly type: 'found'; readonly record: SandboxRecord }
  | { readonly type: 'not-found' }
  /** Two or more records under the key (a re-send after it expired, or with other params under `parameterMatching: 'none'`). */
  | { readonly type: 'several'; readonly records: readonly SandboxRecord[] }
  /** Scripted with `failNextLookup`: the lookup itself failed (503 + Retry-After); it says nothing about the record. */
  | { readonly type: 'unavailable'; readonly retryAfterMs: number };

export interface SandboxExecuteRequest {
  readonly key: string | null;
  readonly params: unknown;
}

export interface SandboxProvider {
  readonly behaviour: Readonly<SandboxBehaviour>;
  /** Processes one create request as the behaviour says. */
  execute(request: SandboxExecuteRequest): Promise<SandboxResponse>;
  /** The records created under this key that lookups can see yet (consistency delay), oldest first. Works past retention. */
  lookup(key: string): SandboxRecord[];
  /** A lookup as the API answers it: like `lookup`, but scripted lookup failures come first. */
  answerLookup(key: string): SandboxLookupResponse;
  /** The next `times` lookups fail (503 + Retry-After) without looking. */
  failNextLookup(times?: number, retryAfterMs?: number): void;
  /** Records held: the number the duplicate drill asserts on. */
  count(): number;
  records(): SandboxRecord[];
  /** Create requests received (including refused and failed ones). */
  calls(): number;
  lookups(): number;
  /** The next `times` create requests fail with `fault` (queued after already scripted faults). */
  failNext(fault: SandboxFault, times?: number): void;
  /** Applies every late commit still pending (the provider does apply them in the end). */
  settle(): Promise<void>;
  /** Moves the sandbox's own time forward (prunes keys past retention, finishes processing); `ms` must be a finite number ≥ 0 (RangeError otherwise: the clock never goes back). */
  advance(ms: number): void;
  now(): number;
}

interface StoredKey {
  readonly recordId: string;
  readonly paramsFingerprint: string;
  readonly storedAt: number;
}

function checkBehaviour(b: SandboxBehaviour): void {
  const bad = (msg: string) => {
    throw new TypeError(`sandbox behaviour: ${msg}`);
  };
  if (typeof b !== 'object' || b === null) bad('expected an object');
  if (typeof b.replays !== 'boolean') bad('replays must be true or false');
  if (b.retentionMs !== null && !(Number.isFinite(b.retentionMs) && b.retentionMs > 0))
    bad('retentionMs must be a positive number or null');
  if (!['mismatch-error', 'replay-anyway', 'none'].includes(b.parameterMatching))
    bad('parameterMatching must be mismatch-error, replay-anyway or none');
  if (!['rejects-in-progress', 'waits-then-replays', 'duplicates'].includes(b.concurrency))
    bad('concurrency must be rejects-in-progress, waits-then-replays or duplicates');
  if (!['get-by-key', 'none'].includes(b.lookup)) bad('lookup must be get-by-key or none');
  for (const k of ['lookupDelayMs', 'processingMs'] as const) {
    const v = b[k];
    if (v !== undefined && !(Number.isFinite(v) && v >= 0)) bad(`${k} must be a number ≥ 0`);
  }
}

/** The records and the idempotency store: what one request does to them, and what a lookup by key sees. */
function createStore(b: Readonly<SandboxBehaviour>, now: () => number, sleep: (ms: number) => Promise<void>) {
  const processingMs = b.processingMs ?? 0;
  const lookupDelayMs = b.lookupDelayMs ?? 0;
  const records: SandboxRecord[] = [];
  const byId = new Map<string, SandboxRecord>();
  const keys = new Map<string, StoredKey>();
  /** Every record created under a key, for lookups (kept for ever, unlike the idempotency store). */
  const byKey = new Map<string, string[]>();

  const view = (r: SandboxRecord): SandboxRecord => ({ ...r, status: now() >= r.completesAt ? 'done' : 'processing' });

  function create(key: string | null, paramsFingerprint: string, t: number): SandboxRecord {
    const rec: SandboxRecord = {
      id: `rec_${String(records.length + 1).padStart(4, '0')}`,
      key,
      paramsFingerprint,
      createdAt: t,
      completesAt: t + processingMs,
      status: processingMs > 0 ? 'processing' : 'done',
    };
    records.push(rec);
    byId.set(rec.id, rec);
    if (key !== null) {
      if (b.replays) keys.set(key, { recordId: rec.id, paramsFingerprint, storedAt: t });
      byKey.set(key, [...(byKey.get(key) ?? []), rec.id]);
    }
    return rec;
  }

  function fresh(rec: SandboxRecord): SandboxResponse {
    const v = view(rec);
    return v.status === 'processing'
      ? { type: 'accepted', record: v, retryAfterMs: v.completesAt - now() }
      : { type: 'created', record: v };
  }

  /** The request's effect and answer at `at` (a promise only while waiting for an in-flight first request). */
  function apply(req: SandboxExecuteRequest, at: number): SandboxResponse | Promise<SandboxResponse> {
    const fp = fingerprint(req.params ?? null);
    const key = req.key;
    let stored = key === null ? undefined : keys.get(key);
    if (stored && b.retentionMs !== null && at - stored.storedAt >= b.retentionMs) {
      keys.delete(key!);
      stored = undefined;
    }
    if (!stored) return fresh(create(key, fp, at));
    const first = view(byId.get(stored.recordId)!);
    const mismatch = stored.paramsFingerprint !== fp;
    if (mismatch && b.parameterMatching === 'mismatch-error')
      return { type: 'mismatch', message: 'idempotency key reused with different parameters' };
    if (mismatch && b.parameterMatching === 'none') return fresh(create(key, fp, at));
    if (first.status !== 'processing') return { type: 'replayed', record: first };
    if (b.concurrency === 'rejects-in-progress')
      return { type: 'in-progress', retryAfterMs: first.completesAt - now() };
    if (b.concurrency === 'duplicates') return fresh(create(key, fp, at));
    return sleep(Math.max(0, first.completesAt - now())).then(
      (): SandboxResponse => ({ type: 'replayed', record: view(first) }),
    );
  }

  /** The records created under `key` that lookups can see (consistency delay). */
  function find(key: string): SandboxRecord[] {
    const recs = (byKey.get(key) ?? []).map((id) => byId.get(id)!);
    return recs.filter((rec) => now() >= rec.createdAt + lookupDelayMs).map(view);
  }

  return { apply, find, count: () => records.length, records: () => records.map(view) };
}

/** An in-memory provider that behaves as `behaviour` says and counts the records it holds. */
export function createSandboxProvider(behaviour: SandboxBehaviour): SandboxProvider {
  checkBehaviour(behaviour);
  const b = Object.freeze({ ...behaviour });
  const clock = createSandboxClock(b.clock, 'sandbox provider');
  const now = clock.now;
  const store = createStore(b, now, b.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms))));
  const faults = createFaultQueue<SandboxFault>('sandbox provider');
  /** Scripted lookup failures, each its Retry-After in ms. */
  const lookupFaults = createFaultQueue<number>('sandbox provider');
  const counts = createCounts<'execute' | 'lookup'>();

  const late: { readonly dueAt: number; readonly req: SandboxExecuteRequest }[] = [];
  /** Late commits whose time has come are applied before anything else is answered, each at its own time. */
  function applyLate(all: boolean): void {
    // Only the state effect matters here (nobody is waiting for this answer).
    while (late.length > 0 && (all || late[0]!.dueAt <= now())) {
      const { req, dueAt } = late.shift()!;
      void store.apply(req, Math.min(dueAt, now()));
    }
  }

  async function execute(req: SandboxExecuteRequest): Promise<SandboxResponse> {
    applyLate(false);
    counts.bump('execute');
    const fault = faults.take();
    if (fault?.kind === 'not-applied') return { type: 'throttled', retryAfterMs: fault.retryAfterMs ?? 1000 };
    if (fault?.kind === 'rejected')
      return {
        type: 'rejected',
        message: fault.message ?? 'validation failed',
        ...(fault.fields ? { fields: fault.fields } : {}),
      };
    if (fault?.kind === 'unknown-before-commit') return { type: 'server-error', status: 503, committed: false };
    if (fault?.kind === 'late-commit') {
      late.push({ dueAt: now() + Math.max(0, fault.afterMs), req });
      late.sort((x, y) => x.dueAt - y.dueAt);
      return { type: 'server-error', status: 503, committed: false };
    }
    const response = await store.apply(req, now());
    if (fault?.kind === 'unknown-after-commit') return { type: 'server-error', status: 500, committed: true };
    return response;
  }

  function lookup(key: string): SandboxRecord[] {
    applyLate(false);
    counts.bump('lookup');
    return store.find(key);
  }

  return {
    behaviour: b,
    execute,
    lookup,
    answerLookup(key) {
      const failure = lookupFaults.take();
      if (failure !== undefined) {
        counts.bump('lookup');
        return { type: 'unavailable', retryAfterMs: failure };
      }
      // Never the first of several: adopting it would hide a duplicate already made.
      const [rec, ...more] = lookup(key);
      if (more.length > 0) return { type: 'several', records: [rec!, ...more] };
      return rec ? { type: 'found', record: rec } : { type: 'not-found' };
    },
    failNextLookup: (times = 1, retryAfterMs = 1000) => lookupFaults.add(retryAfterMs, times),
    settle: async () => applyLate(true),
    count: store.count,
    records: store.records,
    calls: () => counts.get('execute'),
    lookups: () => counts.get('lookup'),
    failNext: (fault, times = 1) => faults.add(fault, times),
    advance: clock.advance,
    now,
  };
}
