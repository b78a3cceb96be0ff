import { LedgerError } from './errors.js';
import type { HandoffPacket } from './handoff.js';
import type { BusinessOperationId, ProviderKey } from './ids.js';
import type { Receipt } from './receipt.js';

// claimed → dispatched → succeeded | rejected | unknown | in-progress → reconciling → … | handed-off; only a
// person abandons, or resumes a handed-off operation. A crashed worker may have left an effect in any open state.
const OPEN = ['claimed', 'dispatched', 'unknown', 'in-progress', 'reconciling'] as const;
const ENDED = ['succeeded', 'rejected', 'handed-off', 'abandoned'] as const;
export type OperationState = (typeof OPEN | typeof ENDED)[number];
export const RECOVERABLE_STATES: readonly OperationState[] = OPEN;
export const TERMINAL_STATES: readonly OperationState[] = ENDED;

export interface OperationRecord {
  readonly businessOperationId: BusinessOperationId;
  readonly provider: string;
  readonly operation: string;
  readonly intentFingerprint: string;
  readonly paramsFingerprint: string;
  /** Kept so a resume or a crash recovery re-sends the same request; never copied into receipts or packets. */
  readonly params: unknown;
  readonly providerKey: ProviderKey | null;
  readonly state: OperationState;
  /** Fencing token: one more on every claim; every write must carry the current one. */
  readonly fence: number;
  readonly leaseOwner: string | null;
  readonly leaseExpiresAt: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** The provider key's age is measured from here. */
  readonly firstDispatchedAt: number | null;
  /** Provider calls made (lookups are not counted). */
  readonly attemptCount: number;
  readonly lastOutcome: Receipt['outcome'];
  readonly result: unknown;
  readonly providerRef: string | null;
  readonly statusRef: string | null;
  readonly handoff: HandoffPacket | null;
  readonly resolution: {
    readonly action: 'resume' | 'mark-done' | 'abandon' | 'supersede';
    readonly providerRef?: string;
    readonly at: number;
    readonly by?: string;
    readonly revision?: number;
  } | null;
  /** Written with each receipt, so a deleted or re-sealed tail of the chain is seen. */
  readonly receiptChain?: { readonly head: string | null; readonly length: number };
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
  readonly owner: string;
  readonly leaseMs: number;
  readonly now: number;
  /** Re-claim a `handed-off` operation (a person chose "resume"). */
  readonly resume?: boolean;
  /** A NEW operation is born `dispatched` in the claim's own write (`capabilities.claimDispatch`). */
  readonly dispatch?: boolean;
  /** Re-open a `rejected` or `handed-off` operation as a new revision while the stored fence still equals `fence`. */
  readonly supersede?: { readonly fence: number; readonly revision: number };
}

/** `busy`: another worker holds a live lease; `conflict`: another operation or intent, nothing written. */
export type ClaimResult =
  | { readonly kind: 'claimed'; readonly record: OperationRecord; readonly takenOver: boolean }
  | { readonly kind: 'busy' | 'terminal'; readonly record: OperationRecord }
  | { readonly kind: 'conflict'; readonly record: OperationRecord; readonly field: 'intent' | 'operation' };

/** A write permission: the fencing token obtained at claim time. */
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
  /** Written in the same transaction as the state (`capabilities.receiptWithState`). */
  readonly receipt?: Receipt;
  /** The runner can recover this write from the provider, so it may commit without waiting for the disk. */
  readonly durability?: 'deferrable';
}

/** Optional ledger features; without a flag the runner falls back to separate writes. */
export interface LedgerCapabilities {
  readonly claimDispatch?: boolean;
  readonly receiptWithState?: boolean;
}

/** `handed-off` waits for a person and is never pruned. */
export const PRUNABLE_STATES: readonly OperationState[] = ['succeeded', 'rejected', 'abandoned'];

/** Closed operations (`states`, default PRUNABLE_STATES) whose `updatedAt` is before `before`. */
export interface PruneOptions {
  readonly before: number;
  readonly states?: readonly OperationState[];
  readonly dryRun?: boolean;
  /** Called BEFORE each operation is deleted; a rejection stops the prune and keeps that batch. */
  readonly onPrune?: (record: OperationRecord, receipts: readonly Receipt[]) => void | Promise<void>;
  /** Operations per delete transaction (default 500): keeps each write lock short. */
  readonly batchSize?: number;
}

/** The states a prune may delete for these options: never an open or handed-off one. */
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
  readonly pruned: number;
  readonly byState: Readonly<Partial<Record<OperationState, number>>>;
  readonly dryRun: boolean;
}

export interface ListFilter {
  readonly states?: readonly OperationState[];
  readonly provider?: string;
  readonly operation?: string;
  readonly limit?: number;
  /** Latest createdAt first, so `limit` keeps the newest. */
  readonly newestFirst?: boolean;
}

/** The durable record of business operations. Every write but `claim` and `resolve` carries a `Fenced` token (LeaseLostError when stale). */
export interface Ledger {
  readonly capabilities?: LedgerCapabilities;
  /** Creates the operation or takes the lease on it atomically. */
  claim(input: ClaimInput): Promise<ClaimResult>;
  renewLease(ref: Fenced, leaseMs: number, now: number): Promise<void>;
  /** Durably records `dispatched` BEFORE the provider is called. */
  markDispatched(ref: Fenced, now: number): Promise<OperationRecord>;
  setState(ref: Fenced, patch: StatePatch): Promise<OperationRecord>;
  handOff(ref: Fenced, packet: HandoffPacket, now: number, receipt?: Receipt): Promise<OperationRecord>;
  appendReceipt(ref: Fenced, receipt: Receipt): Promise<void>;
  release(ref: Fenced): Promise<void>;
  /** A person's mark-done or abandon of a handed-off operation (resume is `claim({ resume: true })`). */
  resolve(
    id: BusinessOperationId,
    resolution: { action: 'mark-done' | 'abandon'; providerRef?: string; by?: string },
    now: number,
  ): Promise<OperationRecord>;
  get(id: BusinessOperationId): Promise<OperationRecord | null>;
  list(filter?: ListFilter): Promise<OperationRecord[]>;
  receipts(id: BusinessOperationId): Promise<Receipt[]>;
  /** Operations in RECOVERABLE_STATES whose lease is absent or expired at `now`. */
  recoverCandidates(now: number, limit?: number): Promise<OperationRecord[]>;
  prune?(options: PruneOptions): Promise<PruneReport>;
  close(): Promise<void>;
}

/** What every ledger stores: SQLite's JSON functions refuse nesting deeper than 1000, and params sit inside the record. */
export const PAYLOAD_LIMITS = Object.freeze({ maxDepth: 100, maxBytes: 1024 * 1024 });
