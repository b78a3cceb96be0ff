import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  AdapterConfigurationError,
  CardValidationError,
  ClockSkewError,
  ConflictError,
  InvalidIntentError,
  InvalidStateError,
  LeaseExpiredError,
  LeaseLostError,
  LedgerError,
  OUTCOME_KINDS,
  RetryExhaustedError,
  RetrysafeError,
  SPECIFICATION_VERSION,
  TERMINAL_STATES,
  UnknownOperationError,
  UnsafeResumeError,
  UnsupportedSpecificationVersionError,
  asBusinessOperationId,
  asAttemptId,
  asRunId,
  businessOperationId as deriveBusinessOperationId,
  fingerprint,
  newAttemptId,
  newRunId,
  pickIntent,
  validateCard,
  type AdapterV1,
  type AttemptId,
  type BusinessOperationId,
  type ClaimInput,
  type Fenced,
  type HandoffPacket,
  type HandoffSink,
  type Ledger,
  type LookupResult,
  type OperationRecord,
  type OperationSpec,
  type OperationState,
  type Outcome,
  type ProviderKey,
  type Receipt,
  type ReceiptKind,
  type StatePatch,
  type RetrySafetyCard,
  type RunId,
} from '@retrysafe/contract';
import { systemClock, type Clock } from './clock.js';
import { decide, notFoundIsAuthoritative, resendSafety, type Decision, type DecisionState, type Observation } from './decide.js';
import { RunnerConfigurationError } from './errors/runner-configuration-error.js';
import { buildPacket } from './handoff.js';
import { comparisonFor, currentRevisionNumber, intake, needsFreshKey, nextRevision, revisionKeySource, supersedeCheck, SUPERSEDE_ACTION, assertParams, type Comparison } from './intake/index.js';
import { leaseLive } from './ledger/transitions.js';
import { preclaim } from './preclaim.js';
import { checkReceiptKey, sealReceipt, type ReceiptKey } from './receipts.js';
import { createRedactor, personRef, type RedactOptions, type Redactor } from './redact.js';
import { DEFAULT_LEASE_MS, resolvePolicy, type PolicyOverrides, type RetryPolicy } from './retry-policy.js';
import type { RunFunction } from './typed-run.js';
import { createTelemetry, type EventFields, type TelemetryOptions } from './telemetry.js';

/** A runner event: free text for people, plus the structured fields (attempt, outcome, decision, delay, handoff reason) where they apply. */
export interface LogEntry extends EventFields {
  readonly at: string;
  readonly level: 'info' | 'warn';
  readonly event: string;
  readonly businessOperationId?: string;
  readonly operation?: string;
  /** Already redacted. */
  readonly message: string;
}

export interface RunnerOptions {
  readonly ledger: Ledger;
  /** Where handoff packets go (they are also kept in the ledger). */
  readonly handoff?: HandoffSink;
  /** Unset fields come from the operation's card. */
  readonly policy?: PolicyOverrides;
  readonly redact?: RedactOptions;
  readonly clock?: Clock;
  /** Jitter source in [0, 1). */
  readonly random?: () => number;
  /** Worker identity written with each lease (default `host:pid:random`). */
  readonly owner?: string;
  /** Receives every log line the runner writes (redacted). Default: none. */
  readonly logger?: (entry: LogEntry) => void;
  /** HMAC key for receipt hashes (`hmac-sha256:<id>:…`): without it, someone who can write the ledger can re-seal an edited chain unnoticed. See docs/security.md. */
  readonly receiptKey?: ReceiptKey;
  /** OpenTelemetry providers for spans and metrics (default: the global ones, a no-op without an SDK). */
  readonly telemetry?: TelemetryOptions;
}

export interface RunInput {
  readonly params: unknown;
  /** Caller-chosen id (validated); default: derived from the operation's intent fields. */
  readonly businessOperationId?: string;
  /** The intent that the id stands for; default: the operation's intentFields picked out of params. */
  readonly intent?: Record<string, unknown>;
  /** Default: a new run id. */
  readonly runId?: string;
  /**
   * Where this run's attempt ids come from (default: a new random id per provider call or lookup). A
   * durable-execution engine passes ids made from its own step ids; each call must return a new id
   * (validated like a run id).
   */
  readonly attemptIds?: () => string;
  readonly signal?: AbortSignal;
}

export type RunResult =
  | {
      readonly status: 'done';
      readonly businessOperationId: BusinessOperationId;
      readonly result: unknown;
      readonly providerRef: string | null;
      /** True when the result came from a replay, a lookup, or an earlier run/worker. */
      readonly adopted: boolean;
      /** Provider calls over the operation's whole life. */
      readonly attempts: number;
      readonly receipts: readonly Receipt[];
    }
  | {
      readonly status: 'in-progress';
      readonly businessOperationId: BusinessOperationId;
      readonly statusRef: string | null;
      readonly retryAfterMs: number;
    }
  | {
      readonly status: 'handed-off';
      readonly businessOperationId: BusinessOperationId;
      readonly packet: HandoffPacket;
      readonly attempts: number;
      readonly receipts: readonly Receipt[];
      /** Set when the budget ran out (reason `retry-exhausted`). */
      readonly error?: RetryExhaustedError;
    };

export interface RecoverReport {
  readonly businessOperationId: BusinessOperationId;
  readonly from: OperationState;
  readonly to: OperationState;
  /** `failed`: the record could not be driven nor handed off (see `error`); it stays for the next pass. */
  readonly action: 'completed' | 'adopted' | 'handed-off' | 'in-progress' | 'skipped-busy' | 'skipped-no-adapter' | 'already-terminal' | 'failed';
  readonly result?: RunResult;
  /** Why this record could not be driven: it was handed off with reason `recovery-failed` (or, when even that failed, action `failed`). */
  readonly error?: { readonly name: string; readonly code?: string; readonly message: string; readonly providerMayHaveBeenCalled?: boolean };
}

/**
 * `resume` is refused (UnsafeResumeError) when the packet marks it not safe, unless `force: true` (you checked at the provider).
 * `resend-with` sends a corrected request as a new revision (only when every attempt is known not applied; see docs/concepts.md).
 */
export type Resolution =
  | { readonly action: 'resume'; readonly force?: boolean }
  | { readonly action: 'mark-done'; readonly providerRef: string }
  | { readonly action: 'abandon' }
  | { readonly action: 'resend-with'; readonly params: unknown };

export type ResolveResult =
  | RunResult
  | { readonly status: 'resolved'; readonly businessOperationId: BusinessOperationId; readonly state: 'succeeded' | 'abandoned'; readonly providerRef: string | null };

export interface ResolveOptions {
  readonly adapters?: readonly AdapterV1[];
  readonly by?: string;
  /** The run id written on the resolution's receipts (default: a new one), as in RunInput. */
  readonly runId?: string;
  /** As in RunInput: where the resolution's attempt ids come from. */
  readonly attemptIds?: () => string;
}

export interface Runner {
  /** Typed from the adapter when it is a `TypedAdapter` (see typed-run.ts); untyped adapters as before. */
  run: RunFunction;
  /** Reconciles operations left claimed/dispatched/unknown/in-progress by a worker whose lease expired. */
  recover(options: { readonly adapters: readonly AdapterV1[]; readonly limit?: number }): Promise<RecoverReport[]>;
  /** A person's decision on a handed-off operation. `resume` re-sends with the SAME provider key. */
  resolve(id: string, resolution: Resolution, options?: ResolveOptions): Promise<ResolveResult>;
}

/** One operation being driven by this worker. */
interface Op {
  readonly adapter: AdapterV1;
  readonly opName: string;
  readonly card: RetrySafetyCard;
  readonly policy: RetryPolicy;
  readonly redactor: Redactor;
  readonly id: BusinessOperationId;
  readonly providerKey: ProviderKey | null;
  readonly runId: RunId;
  readonly params: unknown;
  readonly requestFingerprint: string;
  readonly signal: AbortSignal | undefined;
  /** How params are compared with the stored ones (the card's declaration). */
  readonly comparison: Comparison;
  /** Fingerprints the same params may be stored under (before the declaration normalised them). */
  readonly paramsAliases: readonly string[];
  /** The revision the provider key was derived for (1 unless superseded with a fresh key). */
  readonly keyRevision: number;
  readonly attemptIds: (() => string) | undefined;
  ref: Fenced;
  record: OperationRecord;
  /** Latest dispatch, or an upper bound of it when taken over (see DecisionState.lastDispatchedAt). */
  lastDispatchedAt: number | null;
  /** When this worker's lease runs out, as far as it knows. */
  leaseExpiresAt: number;
  readonly startedAt: number;
  /** Taken over from a worker that died after dispatching: an inconclusive end is a crash-recovery handoff. */
  readonly recovering: boolean;
  /** An earlier attempt may have been applied (see DecisionState.maybeApplied). */
  maybeApplied: boolean;
  /** The provider's last Retry-After as epoch ms (see DecisionState.notBefore). */
  notBefore: number | undefined;
  runAttempts: number;
  windowStartedAt: number | null;
  polls: number;
  lastSeq: number;
  lastHash: string | null;
  /** The operation's receipts as written (earlier ones read at the start, then this worker's own). */
  receipts: Receipt[];
  /**
   * The claim created the operation already `dispatched` for this first send (ClaimInput.dispatch), and
   * the provider has not been called yet: the first send writes nothing more, and until then the
   * decisions see it as the fresh claim it is.
   */
  dispatchWritten: boolean;
  /** This attempt's receipt, to be written in the same transaction as the terminal state that follows it. */
  pendingReceipt: Receipt | null;
}

const validatedCards = new WeakMap<object, true>();

/** The shape the runner relies on, checked before anything else, so a garbage adapter is a typed error and never a TypeError. */
function checkAdapterShape(adapter: AdapterV1): void {
  if (typeof adapter !== 'object' || adapter === null) throw new RunnerConfigurationError('adapter', 'expected an adapter object');
  if (adapter.specificationVersion !== SPECIFICATION_VERSION) throw new UnsupportedSpecificationVersionError(String(adapter.provider), adapter.specificationVersion);
  const provider = typeof adapter.provider === 'string' && adapter.provider.length > 0 ? adapter.provider : null;
  if (provider === null) throw new RunnerConfigurationError('adapter', 'adapter.provider must be a non-empty string');
  if (typeof adapter.operations !== 'object' || adapter.operations === null) throw new AdapterConfigurationError(provider, 'adapter.operations must be an object of operation specs');
  for (const m of ['deriveProviderKey', 'doExecute', 'doLookup'] as const) if (typeof adapter[m] !== 'function') throw new AdapterConfigurationError(provider, `adapter.${m} must be a function`);
}

function checkAdapter(adapter: AdapterV1, operation: string): OperationSpec {
  checkAdapterShape(adapter);
  const spec = Object.prototype.hasOwnProperty.call(adapter.operations, operation) ? adapter.operations[operation] : undefined;
  if (!spec) throw new UnknownOperationError(adapter.provider, operation, Object.keys(adapter.operations));
  if (typeof spec !== 'object' || typeof spec.card !== 'object' || spec.card === null || !Array.isArray(spec.intentFields)) throw new AdapterConfigurationError(adapter.provider, `operation ${operation}: expected { card, intentFields, … }`);
  if (!validatedCards.has(spec.card)) {
    const v = validateCard(spec.card);
    if (!v.ok) throw new CardValidationError(String(spec.card?.operation ?? operation), v.problems);
    validatedCards.set(spec.card, true);
  }
  return spec;
}

function isOutcome(o: unknown): o is Outcome {
  return typeof o === 'object' && o !== null && OUTCOME_KINDS.includes((o as Outcome).kind);
}

function isLookupResult(o: unknown): o is LookupResult {
  if (typeof o !== 'object' || o === null) return false;
  const k = (o as LookupResult).kind;
  if (k === 'found') return isOutcome((o as { outcome: unknown }).outcome) && ['succeeded', 'replayed', 'in-progress', 'rejected'].includes((o as { outcome: Outcome }).outcome.kind);
  return k === 'not-found' || k === 'cannot-tell';
}

const isTerminalState = (s: OperationState) => TERMINAL_STATES.includes(s);

/** Caller-supplied attempt ids (RunInput.attemptIds): the first is drawn and validated before anything is written. */
function callerAttemptIds(fn: (() => string) | undefined): (() => string) | undefined {
  if (fn === undefined) return undefined;
  if (typeof fn !== 'function') throw new RunnerConfigurationError('attemptIds', 'expected a function returning a new attempt id per call');
  let first: string | null = asAttemptId(fn());
  return () => {
    if (first === null) return asAttemptId(fn());
    const id = first;
    first = null;
    return id;
  };
}

/** A provider's field errors as receipts keep them: path and message only, redacted, at most 20. */
function providerFieldErrors(fields: readonly unknown[], redactor: Redactor): { path: string; message: string }[] {
  return fields.slice(0, 20).flatMap((f) => {
    const r = (f ?? {}) as { path?: unknown; message?: unknown };
    return typeof r.path === 'string' ? [{ path: redactor.text(r.path), message: redactor.text(typeof r.message === 'string' ? r.message : 'invalid') }] : [];
  });
}
const errText = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

/** The runner (docs/concepts.md): claim, dispatch once, reconcile, retry within bounds, or hand off. */
export function createRunner(options: RunnerOptions): Runner {
  if (typeof options !== 'object' || options === null || !options.ledger) throw new RunnerConfigurationError('ledger', 'createRunner needs { ledger }');
  const ledger = options.ledger;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  const owner = options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const sink = options.handoff;
  // Optional ledger features (LedgerCapabilities): with both, a clean run is two durable writes.
  const claimDispatches = ledger.capabilities?.claimDispatch === true;
  const receiptWithState = ledger.capabilities?.receiptWithState === true;
  const baseRedactor = createRedactor(options.redact ?? {});
  if (options.receiptKey !== undefined) checkReceiptKey(options.receiptKey, (why) => new RunnerConfigurationError('receiptKey', why));
  const iso = (t: number) => new Date(t).toISOString();

  const tele = createTelemetry(options.telemetry, () => clock.now());
  const log = (level: LogEntry['level'], event: string, message: string, op?: Pick<Op, 'id' | 'card' | 'redactor'>, fields?: EventFields) => {
    try {
      tele.event(event, level, fields, op?.card.operation);
    } catch {
      // Telemetry must not change what happens to the operation either.
    }
    if (!options.logger) return;
    const text = (op?.redactor ?? baseRedactor).text(message);
    try {
      options.logger({ at: iso(clock.now()), level, event, ...(op ? { businessOperationId: op.id, operation: op.card.operation } : {}), ...fields, message: text });
    } catch {
      // A failing logger must not change what happens to the operation.
    }
  };

  // ---------------------------------------------------------------- run
  async function run(adapter: AdapterV1, operation: string, input: RunInput): Promise<RunResult> {
    const spec = checkAdapter(adapter, operation);
    if (typeof input !== 'object' || input === null) throw new InvalidIntentError('', 'run input must be an object with params');
    const card = spec.card;
    // Everything that can refuse the operation, before anything is claimed: the payload limits every ledger
    // can store and the redacted copy (preclaim.ts), then the schema, the intent's normalisation and the id (intake/).
    const { requestFingerprint, redactor } = preclaim(input.params ?? null, input.intent ?? null, () =>
      createRedactor(options.redact ?? {}, spec.sensitiveFields ?? []).withValuesFrom(input.params),
    );
    const { id, intentFingerprint, paramsFingerprint, paramsAliases, comparison } = await intake(ledger, spec, input);
    const providerKey = adapter.deriveProviderKey(operation, id);
    const runId = input.runId !== undefined ? asRunId(input.runId) : newRunId();
    const policy = resolvePolicy(card, options.policy);
    const claimInput: ClaimInput = {
      businessOperationId: id,
      provider: adapter.provider,
      operation: card.operation,
      intentFingerprint,
      paramsFingerprint,
      params: input.params ?? null,
      providerKey,
      owner,
      leaseMs: policy.leaseMs,
      now: clock.now(),
    };
    const base = { adapter, opName: operation, card, policy, redactor, id, providerKey, runId, params: input.params ?? null, requestFingerprint, signal: input.signal, comparison, paramsAliases, attemptIds: callerAttemptIds(input.attemptIds) };
    return tele.run({ operation: card.operation, provider: adapter.provider, businessOperationId: id }, () => claimAndDrive(base, claimInput, paramsFingerprint));
  }

  type OpBase = Pick<Op, 'adapter' | 'opName' | 'card' | 'policy' | 'redactor' | 'id' | 'providerKey' | 'runId' | 'params' | 'requestFingerprint' | 'signal' | 'comparison' | 'paramsAliases' | 'attemptIds'>;

  /** Other params than stored, where the declaration compares them: a conflict naming the differing paths (never the values). */
  function paramsConflict(base: Pick<OpBase, 'id' | 'comparison' | 'redactor' | 'params'>, record: OperationRecord, detail: string): ConflictError {
    const paths = base.comparison.differences(record.params, base.params).map((p) => base.redactor.text(p));
    return new ConflictError(record.businessOperationId, 'params', detail, paths);
  }

  async function claimAndDrive(base: OpBase, claimInput: ClaimInput, paramsFingerprint: string): Promise<RunResult> {
    // A new operation's first decision is always "send now" (decide: claimed, nothing observed), so the
    // claim may create it already `dispatched`. An existing one is claimed as before and decided from its state.
    const dispatch = claimDispatches && !base.signal?.aborted;
    const claimed = { ...claimInput, now: clock.now() };
    const claim = await ledger.claim({ ...claimed, ...(dispatch ? { dispatch: true } : {}) }).catch((err: unknown) => {
      if (ClockSkewError.isInstance(err)) log('warn', 'clock-skew', `claim refused: ${err.message}`, base);
      throw err;
    });
    // Stored before the declaration normalised these params: the same params, under their old fingerprint.
    if (claim.record.paramsFingerprint !== paramsFingerprint && base.paramsAliases.includes(claim.record.paramsFingerprint)) paramsFingerprint = claim.record.paramsFingerprint;
    switch (claim.kind) {
      case 'conflict':
        log('warn', 'conflict', `same id, different ${claim.field}: nothing sent`, { ...base });
        throw new ConflictError(base.id, claim.field, `stored ${claim.field === 'intent' ? claim.record.intentFingerprint : claim.record.operation}`);
      case 'terminal':
        if (claim.record.paramsFingerprint !== paramsFingerprint) {
          // A corrected request for an operation none of whose attempts was applied: a new revision.
          const receipts = await ledger.receipts(claim.record.businessOperationId);
          if (supersedeCheck(claim.record, receipts).ok) return supersede(base, claimInput, claim.record, receipts, 'a corrected request');
        }
        return fromTerminal(claim.record, paramsFingerprint, base);
      case 'busy':
        if (claim.record.paramsFingerprint !== paramsFingerprint) throw paramsConflict(base, claim.record, 'another worker is performing this operation with other params');
        log('info', 'busy', `another worker (${claim.record.leaseOwner}) holds the operation: waiting for its result`, base);
        return waitForOther(base, claimInput, paramsFingerprint);
      case 'claimed': {
        const record = claim.record;
        const ref: Fenced = { businessOperationId: record.businessOperationId, fence: record.fence };
        if (record.paramsFingerprint !== paramsFingerprint) {
          await ledger.release(ref).catch(() => undefined);
          throw paramsConflict(base, record, 'a re-send with the same key and other params would be a different request');
        }
        if (claim.takenOver) log('info', 'takeover', `took over from state ${record.state} (fence ${record.fence})`, base);
        // The key that may already be at the provider is the one recorded: keep using it.
        const dispatchWritten = dispatch && !claim.takenOver && record.state === 'dispatched';
        return execute({ ...base, providerKey: record.providerKey }, record, ref, paramsFingerprint, claimed, claim.takenOver, dispatchWritten);
      }
    }
  }

  async function execute(
    base: OpBase,
    record: OperationRecord,
    ref: Fenced,
    paramsFingerprint: string,
    claimInput: ClaimInput,
    takenOver: boolean,
    dispatchWritten = false,
  ): Promise<RunResult> {
    // A brand-new claim has no receipts yet: skip the read.
    const prior = dispatchWritten || (record.fence === 1 && record.attemptCount === 0 && !takenOver) ? [] : await ledger.receipts(base.id);
    const last = prior[prior.length - 1];
    const op: Op = {
      ...base,
      keyRevision: needsFreshKey(base.card) ? currentRevisionNumber(prior) : 1,
      ref,
      record,
      // This worker's own view of its lease, measured on its own clock from before it asked: never later than the
      // ledger's (which may judge on its own clock, e.g. PostgreSQL's), whatever the offset between the two clocks.
      leaseExpiresAt: Math.min(record.leaseExpiresAt ?? 0, claimInput.now + base.policy.leaseMs),
      // Taken over: the dead owner could send until its lease ended (never after: checkOwnLease), and this
      // claim's write (record.updatedAt) happened once that lease had run out, so it bounds the dead owner's
      // last dispatch from above — its lease end, not its last heartbeat. Otherwise: the last write.
      lastDispatchedAt: dispatchWritten || record.firstDispatchedAt === null ? null : Math.max(record.firstDispatchedAt, record.updatedAt),
      startedAt: clock.now(),
      recovering: takenOver && (['dispatched', 'unknown', 'reconciling', 'in-progress'] as OperationState[]).includes(record.state),
      maybeApplied: !dispatchWritten && (['dispatched', 'unknown', 'reconciling', 'in-progress'] as OperationState[]).includes(record.state),
      notBefore: undefined,
      runAttempts: 0,
      windowStartedAt: null,
      polls: 0,
      lastSeq: last?.seq ?? 0,
      lastHash: last?.hash ?? null,
      receipts: [...prior],
      dispatchWritten,
      pendingReceipt: null,
    };
    try {
      const first = decide(op.card, stateOf(op), null, { policy: op.policy, random });
      return await drive(op, first);
    } catch (err) {
      if (LeaseLostError.isInstance(err)) {
        log('warn', 'lease-lost', 'another worker took the operation over: stopping, waiting for its result', op);
        return waitForOther(base, claimInput, paramsFingerprint);
      }
      await ledger.release(op.ref).catch(() => undefined);
      throw mayHaveCalled(err, op.runAttempts > 0, op);
    }
  }

  /** A LedgerError that ends a call says whether that call had already sent the request (LedgerError.providerMayHaveBeenCalled). */
  function mayHaveCalled(err: unknown, called: boolean, op: Op): unknown {
    // A ledger driver's own error (SQLite's, a cut JSON text) is a LedgerError too, saying what this call did.
    const e = err as { name?: unknown; code?: unknown } | null;
    if (!RetrysafeError.isInstance(err) && (e?.name === 'SqliteError' || (typeof e?.code === 'string' && e.code.startsWith('SQLITE_')) || err instanceof SyntaxError)) {
      if (called) log('warn', 'ledger-failed-after-dispatch', `the ledger failed after the request was sent (the provider may have applied it): ${errText(err)}`, op);
      return new LedgerError(`the ledger failed: ${errText(err)}${called ? ' — after this call had sent the request: the provider may have applied it; run the same id again or recover() once the ledger works (both look up first)' : ''}`, { cause: err, providerMayHaveBeenCalled: called });
    }
    if (!LedgerError.isInstance(err) || !called || err.providerMayHaveBeenCalled) return err;
    log('warn', 'ledger-failed-after-dispatch', `the ledger failed after the request was sent (the provider may have applied it): ${errText(err)}`, op);
    return new LedgerError(`${err.message} — after this call had sent the request: the provider may have applied it; run the same id again or recover() once the ledger works (both look up first)`, { cause: err, providerMayHaveBeenCalled: true });
  }

  function stateOf(op: Op, observedAt?: number): DecisionState {
    return {
      ...(observedAt !== undefined ? { observedAt } : {}),
      // Dispatched by the claim but not sent yet: still the fresh claim it was (see Op.dispatchWritten).
      ledgerState: op.dispatchWritten ? 'claimed' : op.record.state,
      now: clock.now(),
      firstDispatchedAt: op.dispatchWritten ? null : op.record.firstDispatchedAt,
      lastDispatchedAt: op.lastDispatchedAt,
      maybeApplied: op.maybeApplied,
      ...(op.notBefore !== undefined ? { notBefore: op.notBefore } : {}),
      runAttempts: op.runAttempts,
      runStartedAt: op.startedAt,
      windowStartedAt: op.windowStartedAt,
      polls: op.polls,
    };
  }

  // ---------------------------------------------------------------- the loop
  async function drive(op: Op, first: Decision): Promise<RunResult> {
    let decision = first;
    let obs: Observation = null;
    for (;;) {
      log('info', 'decision', `${decision.action}${'delayMs' in decision ? ` in ${decision.delayMs} ms` : ''}: ${decision.why}`, op, { decision: decision.action, ...('delayMs' in decision ? { delayMs: decision.delayMs } : {}) });
      if (decision.action === 'complete') return complete(op, obs, decision.adopted);
      if (decision.action === 'handoff') return handOff(op, decision);

      if (op.signal?.aborted) {
        log('warn', 'aborted', `the caller aborted; state ${op.record.state} is kept for a later run or recover()`, op);
        await ledger.release(op.ref).catch(() => undefined);
        throw op.signal.reason ?? new Error('aborted');
      }
      const polling = decision.action === 'lookup' || isInProgress(obs);
      if (polling) {
        op.windowStartedAt ??= clock.now();
        op.polls++;
      }
      await wait(op, decision.delayMs);
      if (decision.action === 'send' && (reliesOnKey(obs) || op.maybeApplied) && !resendSafety(op.card, op.record.firstDispatchedAt, clock.now(), op.policy.clockSkewMarginMs).safe) {
        // The wait outlasted the key's retention: decide again from the same observation, now without the key.
        decision = decide(op.card, stateOf(op), obs, { policy: op.policy, random });
        continue;
      }
      const startedAt = clock.now();
      const attemptId = op.attemptIds ? (op.attemptIds() as AttemptId) : newAttemptId();
      let kind: ReceiptKind;
      if (decision.action === 'send') {
        obs = await send(op, attemptId);
        kind = op.record.attemptCount === 1 ? 'dispatch' : 'resend';
      } else {
        kind = isInProgress(obs) ? 'poll' : 'lookup';
        obs = await lookup(op, attemptId);
      }
      const finishedAt = clock.now();
      if (decision.action === 'send' && obs !== null && 'retryAfterMs' in obs && typeof obs.retryAfterMs === 'number' && obs.retryAfterMs > 0) {
        op.notBefore = Math.max(op.notBefore ?? 0, finishedAt + obs.retryAfterMs);
      }
      const observedState = stateOf(op, startedAt);
      decision = decide(op.card, observedState, obs, { policy: op.policy, random });
      const patch = statePatch(op, obs, observedState);
      const sealed = seal(op, { kind, attemptId, startedAt, finishedAt, obs, decision });
      if (patch !== null) await writeState(op, patch, sealed);
      else if (receiptWithState && (decision.action === 'complete' || decision.action === 'handoff')) op.pendingReceipt = sealed; // written with the terminal state, next
      else await appendReceipt(op, sealed);
    }
  }

  /** After these, a send is only allowed because the card says the same key folds it into the first. */
  function reliesOnKey(obs: Observation): boolean {
    if (obs === null) return false;
    const inner = obs.kind === 'found' ? obs.outcome : obs;
    return inner.kind === 'unknown' || inner.kind === 'in-progress' || obs.kind === 'cannot-tell';
  }

  function isInProgress(obs: Observation): boolean {
    return obs !== null && (obs.kind === 'in-progress' || (obs.kind === 'found' && obs.outcome.kind === 'in-progress'));
  }

  /** Extends the lease when less than half of it is left (one write saved per call on the happy path). */
  async function renew(op: Op): Promise<void> {
    const now = clock.now();
    if (op.leaseExpiresAt - now > op.policy.leaseMs / 2) return;
    await ledger.renewLease(op.ref, op.policy.leaseMs, now);
    op.leaseExpiresAt = now + op.policy.leaseMs;
  }

  /**
   * Keeps the lease alive while a provider call or lookup is in flight (a real timer, every quarter of the
   * lease), so a slow call never lets a second worker take the operation over and send it again.
   */
  async function withHeartbeat<T>(op: Op, fn: () => Promise<T>): Promise<T> {
    const every = Math.max(100, Math.floor(op.policy.leaseMs / 4));
    const timer = setInterval(() => {
      const at = clock.now(); // the lease runs from before the renewal was asked, never from its answer
      ledger
        .renewLease(op.ref, op.policy.leaseMs, at)
        .then(() => void (op.leaseExpiresAt = at + op.policy.leaseMs))
        .catch(() => undefined); // a lost lease shows up at the next fenced write
    }, every);
    timer.unref?.();
    try {
      return await fn();
    } finally {
      clearInterval(timer);
    }
  }

  /** Sleeps in slices shorter than the lease, renewing it, so a long backoff never loses the claim. */
  async function wait(op: Op, ms: number): Promise<void> {
    let remaining = Math.max(0, ms);
    const slice = Math.max(1, Math.floor(op.policy.leaseMs / 3));
    while (remaining > 0) {
      const step = Math.min(remaining, slice);
      await clock.sleep(step);
      remaining -= step;
      await renew(op);
    }
  }

  async function send(op: Op, attemptId: AttemptId): Promise<Outcome> {
    if (op.dispatchWritten) {
      // The claim itself durably created the operation as `dispatched` (fresh lease, attempt 1).
      op.dispatchWritten = false;
    } else {
      await renew(op);
      // Durably `dispatched` BEFORE the provider is called: a crash from here on is found and reconciled.
      op.record = await ledger.markDispatched(op.ref, clock.now());
    }
    checkOwnLease(op);
    // The late-apply window runs from the moment the request goes out, not from the write before it.
    op.lastDispatchedAt = Math.max(op.record.updatedAt, clock.now());
    op.runAttempts++;
    log('info', 'dispatch', `provider call ${op.record.attemptCount} (run attempt ${op.runAttempts}) with key ${op.providerKey ?? '(none)'}`, op, { attempt: op.record.attemptCount });
    let outcome: Outcome;
    try {
      const o = await withHeartbeat(op, () => op.adapter.doExecute(op.opName, op.params, {
        businessOperationId: op.id,
        providerKey: op.providerKey,
        ...(op.keyRevision > 1 ? { keyRevision: op.keyRevision } : {}),
        runId: op.runId,
        attemptId,
        attempt: op.record.attemptCount,
        statusRef: op.record.statusRef,
        ...(op.signal ? { signal: op.signal } : {}),
      }));
      outcome = isOutcome(o) ? o : { kind: 'unknown', cause: 'other', message: 'adapter returned something that is not an outcome' };
    } catch (err) {
      outcome = { kind: 'unknown', cause: 'other', message: `adapter threw instead of classifying: ${errText(err)}` };
    }
    log('info', 'outcome', `${outcome.kind}${outcome.status !== undefined ? ` (${outcome.status})` : ''}${'message' in outcome && outcome.message ? `: ${outcome.message}` : ''}`, op, { attempt: op.record.attemptCount, outcome: outcome.kind, ...(outcome.status !== undefined ? { status: outcome.status } : {}) });
    return outcome;
  }

  /**
   * Immediately before every provider call: never send once this worker's own lease has run out (or has
   * less than a tenth of it left). A takeover treats the dead owner's lease end as the latest moment it
   * could have sent; that bound holds only if no worker sends past its lease. A pause between this check
   * and the bytes leaving (GC, suspended VM) is not covered: see docs/runbook.md, "Paused workers".
   */
  function checkOwnLease(op: Op): void {
    const now = clock.now();
    const margin = Math.min(2000, Math.floor(op.policy.leaseMs / 10));
    if (now < op.leaseExpiresAt - margin) return;
    log('warn', 'lease-expired-before-send', `own lease ends at ${iso(op.leaseExpiresAt)}, now ${iso(now)}: not sending`, op);
    throw new LeaseExpiredError(op.id, op.leaseExpiresAt, now);
  }

  async function lookup(op: Op, attemptId: AttemptId): Promise<LookupResult> {
    await renew(op);
    if (op.record.state !== 'reconciling' && op.record.state !== 'in-progress') {
      op.record = await ledger.setState(op.ref, { state: 'reconciling', now: clock.now() });
    }
    let result: LookupResult;
    try {
      const r = await withHeartbeat(op, () => op.adapter.doLookup(op.opName, {
        businessOperationId: op.id,
        providerKey: op.providerKey,
        ...(op.keyRevision > 1 ? { keyRevision: op.keyRevision } : {}),
        params: op.params,
        runId: op.runId,
        attemptId,
        statusRef: op.record.statusRef,
        firstDispatchedAt: op.record.firstDispatchedAt,
        lastDispatchedAt: op.lastDispatchedAt,
        now: clock.now(),
        keyReusable: resendSafety(op.card, op.record.firstDispatchedAt, clock.now(), op.policy.clockSkewMarginMs).safe,
        ...(op.signal ? { signal: op.signal } : {}),
      }));
      result = isLookupResult(r) ? r : { kind: 'cannot-tell', reason: 'adapter returned something that is not a lookup result' };
    } catch (err) {
      result = { kind: 'cannot-tell', reason: `lookup failed: ${errText(err)}` };
    }
    log('info', 'lookup', `${result.kind}${result.kind === 'found' ? ` (${result.outcome.kind})` : ` (${result.reason})`}`, op, { outcome: result.kind });
    return result;
  }

  /**
   * What the observation means for the operation's state, as the patch to write (null: nothing to write
   * now; terminal writes happen in complete/handOff). Updates what the runner knows (maybeApplied).
   */
  function statePatch(op: Op, obs: Exclude<Observation, null>, observedState: DecisionState): Omit<StatePatch, 'receipt'> | null {
    const now = clock.now();
    const inner = obs.kind === 'found' ? obs.outcome : obs;
    if (inner.kind === 'unknown' || inner.kind === 'in-progress') op.maybeApplied = true;
    // Only an authoritative "not found" clears it: one asked inside the lookup's consistency delay of
    // the last dispatch proves nothing, so the operation stays `unknown` (a recovery must look again,
    // never send as if nothing had been applied).
    if (inner.kind === 'not-found' && notFoundIsAuthoritative(op.card, observedState, op.policy.clockSkewMarginMs)) op.maybeApplied = false;
    switch (inner.kind) {
      case 'in-progress':
        return {
          state: 'in-progress',
          lastOutcome: obs.kind === 'found' ? 'found' : 'in-progress',
          now,
          ...(inner.statusRef !== undefined ? { statusRef: inner.statusRef } : {}),
          ...(inner.providerRef !== undefined ? { providerRef: inner.providerRef } : {}),
        };
      case 'unknown':
        return { state: 'unknown', lastOutcome: 'unknown', now };
      case 'not-applied':
      case 'not-found':
        // Nothing applied so far: like a fresh claim, a recovery may simply send it. But if an earlier
        // attempt may have been applied, the operation stays unknown, so a recovery reconciles first.
        return { state: op.maybeApplied ? 'unknown' : 'claimed', lastOutcome: inner.kind, now };
      case 'cannot-tell':
        return { state: op.record.state === 'in-progress' ? 'in-progress' : 'reconciling', lastOutcome: 'cannot-tell', now };
      default:
        return null; // succeeded / replayed / rejected: complete() or handOff() writes the terminal state next
    }
  }

  /** A state and the receipt of the attempt that led to it: one transaction when the ledger can, else state then receipt. */
  async function writeState(op: Op, patch: Omit<StatePatch, 'receipt'>, sealed: Receipt | null): Promise<void> {
    if (sealed !== null && receiptWithState) {
      op.record = await ledger.setState(op.ref, { ...patch, receipt: sealed });
      recorded(op, sealed);
      return;
    }
    op.record = await ledger.setState(op.ref, patch);
    if (sealed !== null) await appendReceipt(op, sealed);
  }

  async function appendReceipt(op: Op, sealed: Receipt): Promise<void> {
    await ledger.appendReceipt(op.ref, sealed);
    recorded(op, sealed);
  }

  /** Bookkeeping once a receipt is durably written: the next one chains from it. */
  function recorded(op: Op, sealed: Receipt): void {
    op.lastSeq = sealed.seq;
    op.lastHash = sealed.hash;
    op.receipts.push(sealed);
  }

  /** The attempt's receipt, sealed into the operation's hash chain (written by the caller). */
  function seal(
    op: Op,
    r: { kind: ReceiptKind; attemptId: string; startedAt: number; finishedAt: number; obs: Observation; decision: Decision | { action: string; why: string } },
  ): Receipt {
    const inner = r.obs === null ? null : r.obs.kind === 'found' ? r.obs.outcome : r.obs;
    const refs = (inner ?? {}) as { status?: number; code?: string; providerRef?: string; requestId?: string; message?: string; reason?: string; fields?: unknown };
    const message = refs.message ?? (r.obs && r.obs.kind !== 'found' && 'reason' in r.obs && typeof r.obs.reason === 'string' ? r.obs.reason : undefined);
    const reason = r.decision.action === 'handoff' && 'reason' in r.decision ? `${r.decision.reason}: ${r.decision.why}` : r.decision.why;
    const sealed = sealReceipt({
      businessOperationId: op.id,
      seq: op.lastSeq + 1,
      runId: op.runId,
      attemptId: r.attemptId as Receipt['attemptId'],
      provider: op.adapter.provider,
      operation: op.card.operation,
      kind: r.kind,
      startedAt: iso(r.startedAt),
      finishedAt: iso(r.finishedAt),
      outcome: r.obs === null ? null : r.obs.kind,
      decision: { action: r.decision.action, reason: op.redactor.text(reason), ...('delayMs' in r.decision && typeof r.decision.delayMs === 'number' ? { delayMs: r.decision.delayMs } : {}) },
      providerKey: op.providerKey,
      ...(typeof refs.status === 'number' ? { status: refs.status } : {}),
      ...(typeof refs.code === 'string' ? { code: op.redactor.text(refs.code) } : {}),
      ...(typeof refs.providerRef === 'string' ? { providerRef: op.redactor.text(refs.providerRef) } : {}),
      ...(typeof refs.requestId === 'string' ? { requestId: op.redactor.text(refs.requestId) } : {}),
      ...(typeof message === 'string' ? { message: op.redactor.text(message) } : {}),
      ...(inner?.kind === 'rejected' ? { rejectReason: inner.reason } : {}),
      ...(Array.isArray(refs.fields) && refs.fields.length ? { fields: providerFieldErrors(refs.fields, op.redactor) } : {}),
      requestFingerprint: op.requestFingerprint,
      prevHash: op.lastHash,
    }, options.receiptKey);
    return sealed;
  }

  async function complete(op: Op, obs: Observation, adopted: boolean): Promise<RunResult> {
    const src = obs === null ? null : obs.kind === 'found' ? obs.outcome : obs;
    let result: unknown = op.record.result;
    let providerRef: string | null = op.record.providerRef;
    if (src && (src.kind === 'succeeded' || src.kind === 'replayed')) {
      result = src.result ?? null;
      providerRef = src.providerRef ?? providerRef;
    }
    const pending = op.pendingReceipt;
    op.pendingReceipt = null;
    if (op.record.state !== 'succeeded') {
      // The attempt's receipt (if pending) lands in the same transaction as the result it led to.
      await writeState(op, { state: 'succeeded', lastOutcome: obs === null ? op.record.lastOutcome : obs.kind, result, providerRef, now: clock.now() }, pending);
    } else if (pending !== null) {
      await appendReceipt(op, pending);
    }
    log('info', 'done', `succeeded${adopted ? ' (adopted)' : ''} after ${op.record.attemptCount} provider call(s)${providerRef ? `, ref ${providerRef}` : ''}`, op, { attempt: op.record.attemptCount, adopted });
    return { status: 'done', businessOperationId: op.id, result, providerRef, adopted, attempts: op.record.attemptCount, receipts: [...op.receipts] };
  }

  async function handOff(op: Op, decided: Extract<Decision, { action: 'handoff' }>): Promise<RunResult> {
    const now = clock.now();
    const decision =
      op.recovering && decided.reason === 'unknown-no-safe-resend'
        ? { ...decided, reason: 'crash-recovery-inconclusive' as const, why: `a worker stopped after dispatching; ${decided.why}` }
        : decided;
    const pending = op.pendingReceipt;
    op.pendingReceipt = null;
    // The attempt's receipt (if pending) is part of the packet and lands in the handoff's transaction.
    const receipts = pending !== null ? [...op.receipts, pending] : [...op.receipts];
    const error = decision.reason === 'retry-exhausted' ? new RetryExhaustedError(op.redactor.text(decision.why), receipts.filter((r) => r.kind === 'dispatch' || r.kind === 'resend').map((r) => r.attemptId)) : undefined;
    const explanation = op.redactor.text(error ? error.message : decision.why);
    const safety = resendSafety(op.card, op.record.firstDispatchedAt, now, op.policy.clockSkewMarginMs);
    // A key that holds a stored error only replays it: a resume cannot succeed until the key expires.
    const lastSend = [...receipts].reverse().find((r) => r.kind === 'dispatch' || r.kind === 'resend');
    const replaysError = op.card.storedResult.includesErrors.value === true && lastSend?.outcome === 'unknown' && typeof lastSend.status === 'number' && lastSend.status >= 500;
    const packet = buildPacket({ record: op.record, reason: decision.reason, explanation, receipts, resendSafe: safety.safe && !replaysError, ...(replaysError && safety.safe ? { resumeNote: `a resume re-sends with the same key, which holds the provider's stored ${lastSend.status}: it would only replay that error until the key expires (${String(op.card.retention.minimum.value)} after the first dispatch)` } : {}), now });
    op.record = pending !== null ? await ledger.handOff(op.ref, packet, now, pending) : await ledger.handOff(op.ref, packet, now);
    if (pending !== null) recorded(op, pending);
    log('warn', 'handoff', `${decision.reason}: ${explanation}`, op, { handoffReason: decision.reason, attempt: op.record.attemptCount });
    if (sink) {
      try {
        await sink.send(packet);
      } catch (err) {
        log('warn', 'handoff-sink-failed', `the packet is in the ledger; the sink failed: ${errText(err)}`, op);
      }
    }
    return { status: 'handed-off', businessOperationId: op.id, packet, attempts: op.record.attemptCount, receipts, ...(error ? { error } : {}) };
  }

  // ---------------------------------------------------------------- other workers
  async function fromTerminal(record: OperationRecord, paramsFingerprint: string | null, base: Pick<Op, 'id' | 'card' | 'redactor' | 'comparison' | 'params'>): Promise<RunResult> {
    // Other params under the same intent are a conflict even once it succeeded: adopting would tell the
    // caller that *their* request (say, another amount for the same order) was performed.
    if (paramsFingerprint !== null && record.paramsFingerprint !== paramsFingerprint) {
      const why = record.state === 'succeeded' ? 'it succeeded' : supersedeCheck(record, await ledger.receipts(record.businessOperationId));
      const detail = typeof why === 'string' || why.ok ? `the operation is ${record.state} with other params` : `the operation is ${record.state} with other params and cannot be superseded: ${why.why}`;
      throw paramsConflict(base, record, detail);
    }
    if (record.state === 'succeeded') {
      log('info', 'adopt', 'already succeeded: adopting the stored result, nothing sent', base);
      return {
        status: 'done',
        businessOperationId: record.businessOperationId,
        result: record.result,
        providerRef: record.providerRef,
        adopted: true,
        attempts: record.attemptCount,
        receipts: await ledger.receipts(record.businessOperationId),
      };
    }
    if (!record.handoff) throw new InvalidStateError(record.businessOperationId, record.state, 'terminal without a handoff packet');
    return { status: 'handed-off', businessOperationId: record.businessOperationId, packet: record.handoff, attempts: record.attemptCount, receipts: await ledger.receipts(record.businessOperationId) };
  }

  async function waitForOther(base: OpBase, claimInput: ClaimInput, paramsFingerprint: string): Promise<RunResult> {
    const policy = base.policy;
    const deadline = clock.now() + policy.waitForOtherMs;
    let delay = Math.min(20, policy.baseMs || 20);
    for (;;) {
      const rec = await ledger.get(base.id);
      if (!rec) throw new InvalidStateError(base.id, 'absent', 'the operation disappeared from the ledger');
      if (isTerminalState(rec.state)) return fromTerminal(rec, paramsFingerprint, base);
      const now = clock.now();
      if (!leaseLive(rec, now)) return claimAndDrive(base, claimInput, paramsFingerprint);
      if (now >= deadline) {
        log('info', 'in-progress', `another worker still holds it after ${policy.waitForOtherMs} ms`, base);
        return { status: 'in-progress', businessOperationId: base.id, statusRef: rec.statusRef, retryAfterMs: Math.max(0, (rec.leaseExpiresAt ?? now) - now) };
      }
      await clock.sleep(Math.max(1, Math.min(delay, deadline - now)));
      delay = Math.min(delay * 2, 500);
    }
  }

  // ---------------------------------------------------------------- revisions
  /**
   * Re-opens an operation whose every attempt is known not applied (supersedeCheck) with the corrected
   * request in `base`/`claimInput`: a new revision in the same ledger row, with a `supersede` receipt,
   * and a provider key of its own unless the card says the provider stores no errors.
   */
  async function supersede(base: OpBase, claimInput: ClaimInput, record: OperationRecord, receipts: readonly Receipt[], by: string): Promise<RunResult> {
    const revision = nextRevision(receipts);
    const freshKey = needsFreshKey(base.card);
    const providerKey = freshKey ? base.adapter.deriveProviderKey(base.opName, revisionKeySource(record.businessOperationId, revision)) : record.providerKey;
    const input: ClaimInput = { ...claimInput, providerKey, now: clock.now(), supersede: { fence: record.fence, revision } };
    const claim = await ledger.claim(input);
    if (claim.kind !== 'claimed') {
      // Someone else changed it between the check and the claim: answer from what is there now.
      if (claim.kind === 'terminal') return fromTerminal(claim.record, claimInput.paramsFingerprint, base);
      throw paramsConflict(base, claim.record, `the operation changed while a new revision was being written (${claim.record.state})`);
    }
    const ref: Fenced = { businessOperationId: record.businessOperationId, fence: claim.record.fence };
    const paths = base.comparison.differences(record.params, base.params);
    const last = receipts[receipts.length - 1];
    const now = clock.now();
    const why = `revision ${revision} (${by}) replaces revision ${revision - 1}, whose every attempt was known not applied; changed: ${paths.join(', ') || '(none)'}; ${freshKey ? 'new provider key (the provider may have stored the rejection under the old one)' : 'same provider key (the provider stores no errors)'}`;
    const receipt = sealReceipt({
      businessOperationId: record.businessOperationId,
      seq: (last?.seq ?? 0) + 1,
      runId: base.runId,
      attemptId: newAttemptId(),
      provider: record.provider,
      operation: record.operation,
      kind: 'resolve',
      startedAt: iso(now),
      finishedAt: iso(now),
      outcome: null,
      decision: { action: SUPERSEDE_ACTION, reason: base.redactor.text(why) },
      providerKey,
      requestFingerprint: fingerprint(base.redactor.params(base.params)),
      prevHash: last?.hash ?? null,
    });
    await ledger.appendReceipt(ref, receipt);
    log('info', 'supersede', why, base);
    return execute({ ...base, providerKey }, claim.record, ref, claimInput.paramsFingerprint, { ...claimInput, providerKey }, false);
  }

  /** A person's `resend-with`: the corrected params, same intent, as a new revision (never while an attempt may have been applied). */
  async function resendWith(record: OperationRecord, params: unknown, adapters: readonly AdapterV1[], by: string): Promise<RunResult> {
    const found = findAdapter(adapters, record);
    if (!found) throw new RunnerConfigurationError('resolve', `resend-with needs the adapter for ${record.operation} in { adapters }`);
    const spec = checkAdapter(found.adapter, found.opName);
    // The corrected params pass the same pre-claim checks as a new call (limits, redaction), then the schema.
    const checked = preclaim(params, null, () => createRedactor(options.redact ?? {}, spec.sensitiveFields ?? []).withValuesFrom(params).withValuesFrom(record.params));
    assertParams(spec, params);
    const { base: fromRecord, claimInput } = baseFromRecord(found.adapter, found.opName, record, newRunId());
    const base: OpBase = { ...fromRecord, params, redactor: checked.redactor, requestFingerprint: checked.requestFingerprint };
    const next = await intake(ledger, spec, { params, businessOperationId: record.businessOperationId });
    if (next.intentFingerprint !== record.intentFingerprint) throw new ConflictError(record.businessOperationId, 'intent', 'the corrected params name another intent: run them as a new operation instead');
    if (next.paramsFingerprint === record.paramsFingerprint) throw new InvalidStateError(record.businessOperationId, record.state, 'resend-with needs params that differ from the stored ones (use resume to re-send the same request)');
    const receipts = await ledger.receipts(record.businessOperationId);
    const check = supersedeCheck(record, receipts);
    if (!check.ok) throw paramsConflict(base, record, `a new revision is not allowed: ${check.why}`);
    return supersede(base, { ...claimInput, params, paramsFingerprint: next.paramsFingerprint }, record, receipts, `resend-with by ${by}`);
  }

  // ---------------------------------------------------------------- recover / resolve
  function findAdapter(adapters: readonly AdapterV1[], record: OperationRecord): { adapter: AdapterV1; opName: string } | null {
    for (const adapter of adapters) {
      if (adapter.provider !== record.provider) continue;
      for (const [opName, spec] of Object.entries(adapter.operations)) if ((spec as OperationSpec | null)?.card?.operation === record.operation) return { adapter, opName };
    }
    return null;
  }

  /** A claim of a stored operation by this worker, as it is stored (recover, resolve, a failed record's handoff). */
  function claimOf(record: OperationRecord, leaseMs: number): ClaimInput {
    return {
      businessOperationId: record.businessOperationId,
      provider: record.provider,
      operation: record.operation,
      intentFingerprint: record.intentFingerprint,
      paramsFingerprint: record.paramsFingerprint,
      params: record.params,
      providerKey: record.providerKey,
      owner,
      leaseMs,
      now: clock.now(),
    };
  }

  function baseFromRecord(adapter: AdapterV1, opName: string, record: OperationRecord, runId: RunId, attemptIds?: () => string): { base: OpBase; claimInput: ClaimInput } {
    const spec = checkAdapter(adapter, opName);
    const policy = resolvePolicy(spec.card, options.policy);
    const { redactor, requestFingerprint } = preclaim(record.params, null, () => createRedactor(options.redact ?? {}, spec.sensitiveFields ?? []).withValuesFrom(record.params));
    const base: OpBase = {
      adapter,
      opName,
      card: spec.card,
      policy,
      redactor,
      id: record.businessOperationId,
      providerKey: record.providerKey,
      runId,
      params: record.params,
      requestFingerprint,
      signal: undefined,
      comparison: comparisonFor(spec.card),
      paramsAliases: [],
      attemptIds,
    };
    return { base, claimInput: claimOf(record, policy.leaseMs) };
  }

  async function recover(opts: { readonly adapters: readonly AdapterV1[]; readonly limit?: number }): Promise<RecoverReport[]> {
    if (!opts || !Array.isArray(opts.adapters)) throw new RunnerConfigurationError('recover', 'recover({ adapters: [...] }) needs the adapters of the operations to reconcile');
    for (const a of opts.adapters) checkAdapterShape(a);
    const reports: RecoverReport[] = [];
    const runId = newRunId();
    for (const record of await ledger.recoverCandidates(clock.now(), opts.limit)) {
      // Each record on its own: one that cannot be driven is handed off, and the healthy ones behind it proceed.
      try {
        await recoverOne(record, opts.adapters, runId, reports);
      } catch (err) {
        reports.push(await recoveryFailed(record, err));
      }
    }
    return reports;
  }

  async function recoverOne(record: OperationRecord, adapters: readonly AdapterV1[], runId: RunId, reports: RecoverReport[]): Promise<void> {
    {
      const found = findAdapter(adapters, record);
      if (!found) {
        log('warn', 'recover-skip', `no adapter given for ${record.operation}`);
        reports.push({ businessOperationId: record.businessOperationId, from: record.state, to: record.state, action: 'skipped-no-adapter' });
        return;
      }
      const { base, claimInput } = baseFromRecord(found.adapter, found.opName, record, runId);
      const claim = await ledger.claim(claimInput);
      if (claim.kind === 'busy' || claim.kind === 'conflict') {
        reports.push({ businessOperationId: record.businessOperationId, from: record.state, to: claim.record.state, action: 'skipped-busy' });
        return;
      }
      if (claim.kind === 'terminal') {
        reports.push({ businessOperationId: record.businessOperationId, from: record.state, to: claim.record.state, action: 'already-terminal' });
        return;
      }
      log('info', 'recover', `reconciling from ${claim.record.state}`, base);
      const result = await execute(base, claim.record, { businessOperationId: record.businessOperationId, fence: claim.record.fence }, record.paramsFingerprint, claimInput, claim.takenOver);
      const after = await ledger.get(record.businessOperationId);
      const action: RecoverReport['action'] = result.status === 'done' ? (result.adopted ? 'adopted' : 'completed') : result.status;
      reports.push({ businessOperationId: record.businessOperationId, from: record.state, to: after?.state ?? record.state, action, result });
    }
  }

  /** Hands off a record recover() could not drive, with reason `recovery-failed` and the error; reports it either way. */
  async function recoveryFailed(record: OperationRecord, err: unknown): Promise<RecoverReport> {
    let redactor = baseRedactor;
    try {
      redactor = baseRedactor.withValuesFrom(record.params);
    } catch {
      // the params themselves may be what cannot be handled: the base patterns still apply
    }
    const error = {
      name: err instanceof Error ? err.name : 'Error',
      ...(RetrysafeError.isInstance(err) ? { code: err.code } : {}),
      message: redactor.text(err instanceof Error ? err.message : String(err)),
      ...(LedgerError.isInstance(err) ? { providerMayHaveBeenCalled: err.providerMayHaveBeenCalled } : {}),
    };
    const id = record.businessOperationId;
    const ctx = { id, card: { operation: record.operation } as RetrySafetyCard, redactor };
    log('warn', 'recover-failed', `could not drive it: ${error.name}: ${error.message}`, ctx);
    try {
      const claim = await ledger.claim(claimOf(record, options.policy?.leaseMs ?? DEFAULT_LEASE_MS));
      if (claim.kind !== 'claimed') return { businessOperationId: id, from: record.state, to: claim.record.state, action: claim.kind === 'terminal' ? 'already-terminal' : 'skipped-busy', error };
      const now = clock.now();
      const packet = buildPacket({
        record: claim.record,
        reason: 'recovery-failed',
        explanation: `recover() could not drive this operation (${error.name}${error.code ? ` ${error.code}` : ''}: ${error.message}); nothing more was sent. It may have been dispatched before: check the provider, then resolve it.`,
        receipts: await ledger.receipts(id).catch(() => []),
        resendSafe: false,
        now,
      });
      const after = await ledger.handOff({ businessOperationId: id, fence: claim.record.fence }, packet, now);
      if (sink) await Promise.resolve(sink.send(packet)).catch((e: unknown) => log('warn', 'handoff-sink-failed', `the packet is in the ledger; the sink failed: ${errText(e)}`, ctx));
      return { businessOperationId: id, from: record.state, to: after.state, action: 'handed-off', error };
    } catch (again) {
      log('warn', 'recover-failed', `could not hand it off either (${errText(again)}); it stays for the next pass`, ctx);
      return { businessOperationId: id, from: record.state, to: record.state, action: 'failed', error };
    }
  }

  async function resolve(rawId: string, resolution: Resolution, opts: ResolveOptions = {}): Promise<ResolveResult> {
    const id = asBusinessOperationId(rawId);
    const record = await ledger.get(id);
    if (!record) throw new InvalidStateError(id, 'absent', 'no such operation in the ledger');
    if (resolution?.action === 'resend-with') return resendWith(record, resolution.params, opts.adapters ?? [], opts.by ?? owner);
    if (record.state !== 'handed-off') throw new InvalidStateError(id, record.state, `only a handed-off operation can be resolved (${resolution?.action})`);
    const by = opts.by ?? owner;
    const runId = opts.runId !== undefined ? asRunId(opts.runId) : newRunId();
    const attemptIds = callerAttemptIds(opts.attemptIds);
    const nextAttemptId = () => (attemptIds ? (attemptIds() as AttemptId) : newAttemptId());
    if (resolution?.action === 'resume') {
      const resumeAction = record.handoff?.safeNextActions.find((a) => a.action === 'resume');
      if (resumeAction && !resumeAction.safe && resolution.force !== true) {
        log('warn', 'resume-refused', `resume refused: the packet marks it not safe (${resumeAction.why})`);
        throw new UnsafeResumeError(id, resumeAction.why);
      }
      for (const a of opts.adapters ?? []) checkAdapterShape(a);
      const found = findAdapter(opts.adapters ?? [], record);
      if (!found) throw new RunnerConfigurationError('resolve', `resume needs the adapter for ${record.operation} in { adapters }`);
      const { base, claimInput } = baseFromRecord(found.adapter, found.opName, record, runId, attemptIds);
      const claim = await ledger.claim({ ...claimInput, resume: true });
      if (claim.kind === 'busy') return { status: 'in-progress', businessOperationId: id, statusRef: claim.record.statusRef, retryAfterMs: Math.max(0, (claim.record.leaseExpiresAt ?? 0) - clock.now()) };
      if (claim.kind !== 'claimed') return fromTerminal(claim.record, null, base);
      log('info', 'resume', `a person resumed it (${personRef(by)})${resolution.force === true && resumeAction && !resumeAction.safe ? ', forced past an unsafe packet' : ''}: re-sending with the same key`, base);
      const ref = { businessOperationId: id, fence: claim.record.fence };
      const prior = await ledger.receipts(id);
      const last = prior[prior.length - 1];
      const now = clock.now();
      const resumeReceipt = sealReceipt({
        businessOperationId: id,
        seq: (last?.seq ?? 0) + 1,
        runId: base.runId,
        attemptId: nextAttemptId(),
        provider: record.provider,
        operation: record.operation,
        kind: 'resolve',
        startedAt: iso(now),
        finishedAt: iso(now),
        outcome: null,
        decision: { action: 'resume', reason: base.redactor.text(`a person (${by}) chose resume: same provider key, fresh budget`) },
        providerKey: record.providerKey,
        requestFingerprint: base.requestFingerprint,
        prevHash: last?.hash ?? null,
      }, options.receiptKey);
      await ledger.appendReceipt(ref, resumeReceipt);
      return execute(base, claim.record, ref, record.paramsFingerprint, claimInput, false);
    }
    if (resolution?.action !== 'mark-done' && resolution?.action !== 'abandon') throw new InvalidStateError(id, record.state, `unknown resolution ${JSON.stringify((resolution as { action?: unknown })?.action)}`);
    const providerRef = resolution.action === 'mark-done' ? resolution.providerRef : undefined;
    const now = clock.now();
    const after = await ledger.resolve(id, { action: resolution.action, ...(providerRef !== undefined ? { providerRef } : {}), by }, now);
    const prior = await ledger.receipts(id);
    const last = prior[prior.length - 1];
    const redactor = baseRedactor.withValuesFrom(record.params);
    await ledger.appendReceipt(
      { businessOperationId: id, fence: after.fence },
      sealReceipt({
        businessOperationId: id,
        seq: (last?.seq ?? 0) + 1,
        runId,
        attemptId: nextAttemptId(),
        provider: record.provider,
        operation: record.operation,
        kind: 'resolve',
        startedAt: iso(now),
        finishedAt: iso(now),
        outcome: null,
        decision: { action: resolution.action, reason: redactor.text(`resolved by a person (${personRef(by)})`) },
        providerKey: record.providerKey,
        ...(providerRef !== undefined ? { providerRef: redactor.text(providerRef) } : {}),
        requestFingerprint: last?.requestFingerprint ?? fingerprint(redactor.params(record.params)),
        prevHash: last?.hash ?? null,
      }, options.receiptKey),
    );
    log('info', 'resolve', `${resolution.action} by ${personRef(by)}`);
    return { status: 'resolved', businessOperationId: id, state: after.state as 'succeeded' | 'abandoned', providerRef: after.providerRef };
  }

  return { run: run as RunFunction, recover, resolve };
}
