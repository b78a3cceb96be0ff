/**
 * What every room of the runner shares: the worker's ledger, clock and identity, the options it was
 * created with, and its one log function; and the shape of one operation being driven (Op).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { AdapterV1, BusinessOperationId, Fenced, HandoffSink, Ledger, OperationRecord, OperationSpec, ProviderKey, Receipt, RetrySafetyCard, RunId } from '@retrysafe/contract';
import { systemClock, type Clock } from '../clock.js';
import { RunnerConfigurationError } from '../errors/runner-configuration-error.js';
import type { Comparison } from '../intake/index.js';
import { checkReceiptKey } from '../receipts.js';
import { createRedactor, type Redactor } from '../redact.js';
import type { RetryPolicy } from '../retry-policy.js';
import { createTelemetry, type EventFields, type RunScope, type Telemetry } from '../telemetry.js';
import type { LogEntry, RunnerOptions } from './types.js';
import { createHeartbeat, type Heartbeat } from './heartbeat.js';

/** One runner event. `message` may be a function: it is called only when a logger is set (no text built for nobody). */
export type Log = (level: LogEntry['level'], event: string, message: string | (() => string), op?: Pick<Op, 'id' | 'card' | 'redactor'> & { readonly scope?: RunScope | undefined }, fields?: EventFields) => void;

export interface RunnerContext {
  readonly options: RunnerOptions;
  readonly ledger: Ledger;
  readonly clock: Clock;
  readonly random: () => number;
  readonly owner: string;
  readonly sink: HandoffSink | undefined;
  /** Optional ledger features (LedgerCapabilities): with both, a clean run is two durable writes. */
  readonly claimDispatches: boolean;
  readonly receiptWithState: boolean;
  readonly baseRedactor: Redactor;
  /** Each operation spec's redactor before values (see intake.ts). */
  readonly redactors: WeakMap<OperationSpec, Redactor>;
  readonly tele: Telemetry;
  readonly log: Log;
  /** The leases of this worker's calls in flight, kept by one timer (lease.ts). */
  readonly heartbeat: Heartbeat<Op>;
}

/** One operation being driven by this worker. */
export interface Op {
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
  /** The telemetry scope of the run() driving it (none for recover and resolve). */
  readonly scope: RunScope | undefined;
}

/** What an operation is before it is claimed: everything of Op that does not come from the ledger. */
export type OpBase = Pick<Op, 'adapter' | 'opName' | 'card' | 'policy' | 'redactor' | 'id' | 'providerKey' | 'runId' | 'params' | 'requestFingerprint' | 'signal' | 'comparison' | 'attemptIds' | 'scope'>;

/** The day (epoch-ms / 86 400 000) whose `YYYY-MM-DDT` iso() has at hand, and that text: one entry, for the day it runs in. */
let isoDay = Number.NaN;
let isoDate = '';
/** The last time iso() wrote, and its text. */
let lastIsoTime = Number.NaN;
let lastIso = '';
const DAY_MS = 86_400_000;
/** 10000-01-01T00:00:00.000Z: from there on the year has more than four digits. */
const YEAR_10000 = 253_402_300_800_000;
/**
 * Two digits of an hour, minute or second (0–59), looked up: no branch whose first use, when the clock's
 * seconds, minutes or hours first drop below 10 after the code was optimised, deoptimises iso() and seal().
 */
const TWO_DIGITS: readonly string[] = Array.from({ length: 60 }, (_, n) => (n < 10 ? `0${n}` : `${n}`));
const pad2 = (n: number) => TWO_DIGITS[n]!;

/**
 * `new Date(t).toISOString()`, byte for byte. Receipts carry two per attempt, and V8 writes each
 * through a formatted print; here the date part is taken from the engine once per day and the time of
 * day is written by hand. Anything but a whole epoch-ms of years 1970–9999 is the engine's (its
 * RangeError for an invalid time included).
 */
export function iso(t: number): string {
  // An attempt that starts and ends in the same millisecond (most in-process and fast calls): its text again.
  if (t === lastIsoTime) return lastIso;
  if (!Number.isInteger(t) || t < 0 || t >= YEAR_10000) return new Date(t).toISOString();
  const day = Math.floor(t / DAY_MS);
  if (day !== isoDay) {
    isoDate = new Date(t).toISOString().slice(0, 11);
    isoDay = day;
  }
  let rest = t - day * DAY_MS;
  const ms = rest % 1000;
  rest = (rest - ms) / 1000;
  const s = rest % 60;
  rest = (rest - s) / 60;
  const m = rest % 60;
  const h = (rest - m) / 60;
  // Joined, not added: one flat string (24 characters added up make a rope, which every later read of a
  // character, the body codec's and canonical JSON's, walks or flattens first).
  lastIso = [isoDate, pad2(h), ':', pad2(m), ':', pad2(s), '.', ms < 10 ? '00' : ms < 100 ? '0' : '', ms, 'Z'].join('');
  lastIsoTime = t;
  return lastIso;
}

export function createContext(options: RunnerOptions): RunnerContext {
  if (typeof options !== 'object' || options === null || !options.ledger) throw new RunnerConfigurationError('ledger', 'createRunner needs { ledger }');
  const ledger = options.ledger;
  const clock = options.clock ?? systemClock;
  const baseRedactor = createRedactor(options.redact ?? {});
  if (options.receiptKey !== undefined) checkReceiptKey(options.receiptKey, (why) => new RunnerConfigurationError('receiptKey', why));
  const tele = createTelemetry(options.telemetry, () => clock.now());
  const log: Log = (level, event, message, op, fields) => {
    try {
      tele.event(event, level, fields, op?.card.operation, op?.scope);
    } catch {
      // Telemetry must not change what happens to the operation either.
    }
    if (!options.logger) return;
    const text = (op?.redactor ?? baseRedactor).text(typeof message === 'function' ? message() : message);
    try {
      options.logger({ at: iso(clock.now()), level, event, ...(op ? { businessOperationId: op.id, operation: op.card.operation } : {}), ...fields, message: text });
    } catch {
      // A failing logger must not change what happens to the operation.
    }
  };
  return {
    options,
    ledger,
    clock,
    // A renewal's lease runs from before it was asked, never from its answer; a lost lease shows up at the next fenced write.
    heartbeat: createHeartbeat<Op>((op) => {
      const at = clock.now();
      ledger
        .renewLease(op.ref, op.policy.leaseMs, at)
        .then(() => void (op.leaseExpiresAt = at + op.policy.leaseMs))
        .catch(() => undefined);
    }),
    random: options.random ?? Math.random,
    owner: options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    sink: options.handoff,
    claimDispatches: ledger.capabilities?.claimDispatch === true,
    receiptWithState: ledger.capabilities?.receiptWithState === true,
    baseRedactor,
    redactors: new WeakMap(),
    tele,
    log,
  };
}

/** A literal built here and filled in before it is handed over (optional fields only when present). */
export type Mutable<T> = { -readonly [K in keyof T]: T[K] };
