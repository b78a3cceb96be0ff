import { LedgerError } from './errors.js';
import type { HandoffPacket } from './handoff.js';
import type { BusinessOperationId, ProviderKey } from './ids.js';
import type { Receipt } from './receipt.js';

/**
 * claimed → dispatched → succeeded | rejected | unknown | in-progress → reconciling → … | handed-off.
 * `abandoned` is set only by a person. `succeeded`, `rejected`, `handed-off`, `abandoned` are terminal
 * for the runner (a person may resume a handed-off operation).
 */
const OPERATION_STATES = [
  'claimed',
  'dispatched',
  'unknown',
  'in-progress',
  'reconciling',
  'succeeded',
  'rejected',
  'handed-off',
  'abandoned',
] as const;
export type OperationState = (typeof OPERATION_STATES)[number];

export const TERMINAL_STATES: readonly OperationState[] = ['succeeded', 'rejected', 'handed-off', 'abandoned'];
/** States in which a crashed worker may have left an effect at the provider: every one not terminal. */
export const RECOVERABLE_STATES: readonly OperationState[] = OPERATION_STATES.filter(
  (state) => !TERMINAL_STATES.includes(state),
);

export interface OperationRecord {
  readonly businessOperationId: BusinessOperationId;
  readonly provider: string;
  /** Fully qualified, e.g. `stripe.paymentIntents.create`. */
  readonly operation: string;
  readonly intentFingerprint: string;
  readonly paramsFingerprint: string;
  /** The request params, kept so a resume or a crash recovery can re-send the same request with the same key. Never copied into receipts or packets. */
  readonly params: unknown;
  readonly providerKey: ProviderKey | null;
  readonly state: OperationState;
  /** Fencing token: increases by one on every claim; every write must carry the current one. */
  readonly fence: number;
  readonly leaseOwner: string | null;
  /** Epoch ms; null when no lease is held. */
  readonly leaseExpiresAt: number | null;
  /** Epoch ms. */
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Epoch ms of the first `dispatched` write: the provider key's age is measured from here. */
  readonly firstDispatchedAt: number | null;
  /** Provider calls made (dispatches and resends; lookups are not counted). */
  readonly attemptCount: number;
  readonly lastOutcome: Receipt['outcome'];
  /** JSON result of the provider, kept so later callers adopt it. */
  readonly result: unknown;
  readonly providerRef: string | null;
  /** Status reference from an in-progress outcome (e.g. status URL). */
  readonly statusRef: string | null;
  readonly handoff: HandoffPacket | null;
  /** How a person resolved it, if they did. */
  readonly resolution: {
    readonly action: 'resume' | 'mark-done' | 'abandon' | 'supersede';
    readonly providerRef?: string;
    readonly at: number;
    readonly by?: string;
    readonly revision?: number;
  } | null;
  /** The receipt chain's head hash and length, written with each receipt so a deleted or re-sealed tail is seen. */
  readonly receiptChain: { readonly head: string | null; readonly length: number };
}

export interface ClaimInput
  extends Pick<
    OperationRecord,
    | 'businessOperationId'
    | 'provider'
    | 'operation'
    | 'intentFingerprint'
    | 'paramsFingerprint'
    | 'params'
    | 'providerKey'
  > {
  /** Worker identity (e.g. `host:pid:uuid`). */
  readonly owner: string;
  readonly leaseMs: number;
  readonly now: number;
  /** Allow re-claiming a `handed-off` operation (a person chose "resume"). */
  readonly resume?: boolean;
  /**
   * The caller calls the provider right after: a NEW operation is created as `dispatched` in the claim's own
   * write (an existing one is claimed as without it). Only with `capabilities.claimDispatch`.
   */
  readonly dispatch?: boolean;
  /**
   * Re-open a `rejected` or `handed-off` operation as `claimed` with this input's params and key and no
   * attempts (a new revision), only while the stored fence still equals `fence`. The caller decides it is allowed.
   */
  readonly supersede?: { readonly fence: number; readonly revision: number };
}

export type ClaimResult =
  /** This caller now holds the lease. `record.state` tells whether it is new (`claimed`) or taken over from a dead worker (`dispatched`, `unknown`, …). */
  | { readonly kind: 'claimed'; readonly record: OperationRecord; readonly takenOver: boolean }
  /** Another worker holds a live lease: do not dispatch; wait or report in-progress. */
  | { readonly kind: 'busy'; readonly record: OperationRecord }
  /** Already terminal: adopt the result / report the handoff. */
  | { readonly kind: 'terminal'; readonly record: OperationRecord }
  /** Exists with a different operation or intent fingerprint: a conflict, nothing written. */
  | { readonly kind: 'conflict'; readonly record: OperationRecord; readonly field: 'intent' | 'operation' };

/** A write permission: the id plus the fencing token obtained at claim time. */
export interface Fenced {
  readonly businessOperationId: BusinessOperationId;
  readonly fence: number;
}

export interface StatePatch {
  readonly state: OperationState;
  readonly lastOutcome?: OperationRecord['lastOutcome'];
  readonly result?: unknown;
  readonly providerRef?: string | null;
  readonly statusRef?: string | null;
  readonly now: number;
  /** A receipt written in the same transaction as this state (rules of `appendReceipt`); only with `capabilities.receiptWithState`. */
  readonly receipt?: Receipt;
  /**
   * `deferrable`: the runner can recover this write from the provider, so a ledger may commit it without
   * waiting for the disk (durable with its next durable commit). Ignoring it is always correct.
   */
  readonly durability?: 'deferrable';
}

/** Optional ledger features; without a flag the runner falls back to separate writes. */
export interface LedgerCapabilities {
  /** `claim({ dispatch: true })` creates a new operation as `dispatched` in the claim's write. */
  readonly claimDispatch?: boolean;
  /** `setState(ref, { receipt })` and `handOff(ref, packet, now, receipt)` write the receipt atomically with the state. */
  readonly receiptWithState?: boolean;
}

/** States `prune` may delete: terminal and closed. `handed-off` waits for a person and is never pruned. */
export const PRUNABLE_STATES: readonly OperationState[] = ['succeeded', 'rejected', 'abandoned'];

/** What `Ledger.prune` deletes: closed operations (PRUNABLE_STATES) whose last change is older than `before`. */
export interface PruneOptions {
  /** Epoch ms: operations whose `updatedAt` is before this. */
  readonly before: number;
  /** A subset of PRUNABLE_STATES (default all of them). */
  readonly states?: readonly OperationState[];
  /** Count what would be deleted, delete nothing (`onPrune` is not called). */
  readonly dryRun?: boolean;
  /** Called with each operation and its receipts BEFORE it is deleted; a rejection stops the prune, that batch kept. */
  readonly onPrune?: (record: OperationRecord, receipts: readonly Receipt[]) => void | Promise<void>;
  /** Operations per delete transaction (default 500): keeps each write lock short. */
  readonly batchSize?: number;
}

/** The states a prune may delete for these options, checked: never an open or handed-off one. Throws LedgerError. */
export function checkPruneOptions(options: PruneOptions): readonly OperationState[] {
  if (!options || typeof options.before !== 'number' || !Number.isFinite(options.before))
    throw new LedgerError('prune: before must be epoch ms');
  if (options.batchSize !== undefined && !(Number.isInteger(options.batchSize) && options.batchSize >= 1))
    throw new LedgerError('prune: batchSize must be an integer ≥ 1');
  const states = options.states ?? PRUNABLE_STATES;
  const refused = states.find((st) => !PRUNABLE_STATES.includes(st));
  if (refused !== undefined)
    throw new LedgerError(
      `prune: ${JSON.stringify(refused)} operations are never pruned (only ${PRUNABLE_STATES.join(', ')})`,
    );
  return states;
}

export interface PruneReport {
  /** Operations deleted (with dryRun: that would be deleted), with their receipts. */
  readonly pruned: number;
  readonly byState: Readonly<Partial<Record<OperationState, number>>>;
  readonly dryRun: boolean;
}

export interface ListFilter {
  readonly states?: readonly OperationState[];
  readonly provider?: string;
  readonly operation?: string;
  readonly limit?: number;
  /** Newest (latest createdAt) first, so `limit` keeps the newest. Default: oldest first. */
  readonly newestFirst?: boolean;
}

/** The durable record of business operations. Every write but `claim` and `resolve` carries a `Fenced` token (LeaseLostError when stale). */
export interface Ledger {
  /** Optional features this ledger supports; see LedgerCapabilities. */
  readonly capabilities?: LedgerCapabilities;
  /** Creates the operation or takes the lease on it atomically; see ClaimResult. */
  claim(input: ClaimInput): Promise<ClaimResult>;
  /** Extends the lease; a no-op on a terminal operation; LeaseLostError once the lease was released (claim again). */
  renewLease(ref: Fenced, leaseMs: number, now: number): Promise<void>;
  /** Durably records `dispatched` (attemptCount+1, firstDispatchedAt set once) BEFORE the provider is called. */
  markDispatched(ref: Fenced, now: number): Promise<OperationRecord>;
  /** Moves to a non-terminal or terminal state other than handed-off. */
  setState(ref: Fenced, patch: StatePatch): Promise<OperationRecord>;
  /** Terminal handoff with its packet; releases the lease. `receipt`, if given, is written in the same transaction (capabilities.receiptWithState). */
  handOff(ref: Fenced, packet: HandoffPacket, now: number, receipt?: Receipt): Promise<OperationRecord>;
  /** Appends a receipt; seq must be the next one for the operation. */
  appendReceipt(ref: Fenced, receipt: Receipt): Promise<void>;
  /** Drops the lease without changing state. */
  release(ref: Fenced): Promise<void>;
  /** A person's resolution of a handed-off operation: mark-done (succeeded with providerRef) or abandon. `resume` is done through claim({ resume: true }). */
  resolve(
    id: BusinessOperationId,
    resolution: { action: 'mark-done' | 'abandon'; providerRef?: string; by?: string },
    now: number,
  ): Promise<OperationRecord>;
  get(id: BusinessOperationId): Promise<OperationRecord | null>;
  list(filter?: ListFilter): Promise<OperationRecord[]>;
  receipts(id: BusinessOperationId): Promise<Receipt[]>;
  /** Non-terminal operations (RECOVERABLE_STATES) whose lease is absent or expired at `now`. */
  recoverCandidates(now: number, limit?: number): Promise<OperationRecord[]>;
  /** Optional (retention): deletes closed operations and their receipts, see PruneOptions. */
  prune?(options: PruneOptions): Promise<PruneReport>;
  close(): Promise<void>;
}
