// `@retrysafe/contract/ledger`: the record every ledger stores, and its state machine as pure functions that each
// ledger applies inside its own atomic section: read the record, call the rule, write what it returns.
import { definedFields } from './canonical.js';
import { InvalidStateError, LeaseLostError, LedgerError } from './errors.js';
import type { BusinessOperationId, ProviderKey } from './ids.js';
import { checkClaim, checkNow, checkPacket, checkRenewal, checkStatePatch, unstorable } from './ledger-checks.js';
import { type OperationState, TERMINAL_STATES } from './ledger-states.js';
import type { OnUnreadable } from './ledger-stored.js';
import type { HandoffPacket, Receipt } from './receipt.js';

export {
  checkListFilter,
  checkPacket,
  checkPruneOptions,
  checkRecoverCandidates,
  checkRef,
  checkRenewal,
  checkStatePatch,
  choiceOption,
  numberOption,
  unstorable,
} from './ledger-checks.js';
export * from './ledger-states.js';
export * from './ledger-stored.js';

export interface OperationRecord {
  readonly businessOperationId: BusinessOperationId;
  readonly provider: string;
  /** The adapter's account (AdapterV1.account), when it has one: recover() drives it through that account's adapter. */
  readonly account?: string;
  readonly operation: string;
  /** The caller gave the intent (RunInput.intent): digested as given, no provider object in it to check again. */
  readonly intentFrom?: 'caller';
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
  readonly receiptChain: { readonly head: string | null; readonly length: number };
}

/** What names an operation and its request: a claim carries it, the record it creates keeps it. */
const IDENTITY = [
  'businessOperationId',
  'provider',
  'account',
  'operation',
  'intentFrom',
  'intentFingerprint',
  'paramsFingerprint',
  'params',
  'providerKey',
] as const;
export type OperationIdentity = Pick<OperationRecord, (typeof IDENTITY)[number]>;

/** No account, no field. */
export function identityFields(from: OperationIdentity): OperationIdentity {
  return definedFields(from, IDENTITY);
}

export interface ClaimInput extends OperationIdentity {
  readonly owner: string;
  readonly leaseMs: number;
  readonly now: number;
  readonly resume?: boolean;
  /** A NEW operation is born `dispatched` in the claim's own write. */
  readonly dispatch?: boolean;
  /** Re-open a `rejected` or `handed-off` (with `done`: `succeeded` or `abandoned`) operation as a new revision at the fence read. */
  readonly supersede?: { readonly fence: number; readonly revision: number; readonly done?: true };
  /** Only a stored row (recover, a person's resume or revision): none there (finished, pruned) is `gone`. */
  readonly existing?: true;
  /** Its resolve receipt, in the claim's write: refused (LedgerError) unless the chain's next on a resume or revision. */
  readonly receipt?: Receipt;
}

/** `busy`: another worker holds a live lease; `conflict`: another operation or intent; `gone`: `existing`, no row. */
export type ClaimResult =
  | {
      readonly kind: 'claimed';
      readonly record: OperationRecord;
      readonly takenOver: boolean;
      /** Taken over from an expired lease: when it ended, on the clock that judged it (its owner may read another). */
      readonly previousLeaseExpiresAt?: number | null;
    }
  | { readonly kind: 'busy' | 'terminal'; readonly record: OperationRecord }
  | { readonly kind: 'conflict'; readonly record: OperationRecord; readonly field: 'intent' | 'operation' }
  | { readonly kind: 'gone' };

export interface Fenced {
  readonly businessOperationId: BusinessOperationId;
  readonly fence: number;
}

export interface StatePatch
  extends Partial<Pick<OperationRecord, 'lastOutcome' | 'result' | 'providerRef' | 'statusRef'>> {
  readonly state: OperationState;
  readonly now: number;
  /** Written in the same transaction as the state. */
  readonly receipt?: Receipt;
  /** The runner can recover this write from the provider, so it may commit without waiting for the disk. */
  readonly durability?: 'deferrable';
}

/** Optional ledger features. */
export interface LedgerCapabilities {
  /** One clock (the database's, or the one machine's) writes and judges every lease: a worker stops sending before
   * the lease end the ledger judges, and a takeover need not wait out the clock-skew margin. */
  readonly sharedLeaseClock?: boolean;
}

/** Closed operations (default PRUNABLE_STATES) whose `updatedAt` is before `before`. */
export interface PruneOptions {
  readonly before: number;
  readonly states?: readonly OperationState[];
  readonly dryRun?: boolean;
  /** Called BEFORE each operation is deleted; a rejection stops the prune and keeps that batch. */
  readonly onPrune?: (record: OperationRecord, receipts: readonly Receipt[]) => void | Promise<void>;
  /** Told of each operation the prune could not read: it is kept. Without it the prune rejects. */
  readonly onUnreadable?: OnUnreadable;
  /** Operations per delete transaction (default 500): keeps each write lock short. */
  readonly batchSize?: number;
}

export interface PruneReport {
  readonly pruned: number;
  readonly byState: Readonly<Partial<Record<OperationState, number>>>;
  readonly dryRun: boolean;
}

/** `handoffAt`: the `createdAt` of the hand-off decided on; refused in the same write when another is current. */
export type Resolution = { action: 'mark-done' | 'abandon'; providerRef?: string; by?: string; handoffAt?: string };

/** Why a decision on a hand-off that is no longer the current one is refused (the runner's words too). */
export const NOT_THE_HANDOFF_DECIDED_ON =
  'it was resumed, closed or handed off again after you read it (not the hand-off decided on): read it again first';

export interface ListFilter extends Partial<Pick<OperationRecord, 'provider' | 'operation'>> {
  readonly states?: readonly OperationState[];
  readonly limit?: number;
  /** Latest createdAt first, so `limit` keeps the newest. */
  readonly newestFirst?: boolean;
  /** A row the ledger cannot read (cut or edited from outside) is told here and left out; without it, list rejects. */
  readonly onUnreadable?: OnUnreadable;
}

/** The durable record of business operations. Every write but `claim` and `resolve` carries a `Fenced` token (LeaseLostError when stale). */
export interface Ledger {
  readonly capabilities?: LedgerCapabilities;
  claim(input: ClaimInput): Promise<ClaimResult>;
  renewLease(ref: Fenced, leaseMs: number, now: number): Promise<void>;
  /** Durably records `dispatched` BEFORE the provider is called. */
  markDispatched(ref: Fenced, now: number): Promise<OperationRecord>;
  setState(ref: Fenced, patch: StatePatch): Promise<OperationRecord>;
  handOff(ref: Fenced, packet: HandoffPacket, now: number, receipt?: Receipt): Promise<OperationRecord>;
  appendReceipt(ref: Fenced, receipt: Receipt): Promise<void>;
  release(ref: Fenced): Promise<void>;
  /** A person's mark-done or abandon (resume is `claim({ resume: true })`); `receipt` as StatePatch's, and only the
   * chain's next (else a LedgerError, nothing written). */
  resolve(id: BusinessOperationId, resolution: Resolution, now: number, receipt?: Receipt): Promise<OperationRecord>;
  get(id: BusinessOperationId): Promise<OperationRecord | null>;
  list(filter?: ListFilter): Promise<OperationRecord[]>;
  receipts(id: BusinessOperationId): Promise<Receipt[]>;
  /** Operations in RECOVERABLE_STATES whose lease is absent or expired at `now`; `onUnreadable` as ListFilter's. */
  recoverCandidates(now: number, limit?: number, onUnreadable?: OnUnreadable): Promise<OperationRecord[]>;
  prune?(options: PruneOptions): Promise<PruneReport>;
  close(): Promise<void>;
}

export function isTerminal(record: OperationRecord): boolean {
  return TERMINAL_STATES.includes(record.state);
}

export function leaseLive(record: OperationRecord, now: number): boolean {
  return record.leaseOwner !== null && record.leaseExpiresAt !== null && record.leaseExpiresAt > now;
}

const RELEASED = { leaseOwner: null, leaseExpiresAt: null } as const;

const NO_ATTEMPTS = {
  firstDispatchedAt: null,
  attemptCount: 0,
  lastOutcome: null,
  result: null,
  providerRef: null,
  statusRef: null,
  handoff: null,
} as const;

const misplaced = (what: string) =>
  new LedgerError(`claim: a receipt goes with a resume or a new revision, not ${what}; nothing written`);

/** A resume or a revision, claimed at the next fence: its receipt, if given, must follow the stored chain, and is
 * anchored in the same write. */
function restarted(
  existing: OperationRecord,
  receipt: Receipt | undefined,
  takenOver: boolean,
  next: Partial<OperationRecord>,
) {
  if (receipt !== undefined) checkReceipt(existing, receipt, existing.receiptChain.length);
  const record = chainedTransition({ ...existing, ...next, state: 'claimed', fence: existing.fence + 1 }, receipt);
  return { result: { kind: 'claimed', record, takenOver } as const, write: record };
}

/** `done`: a set's next values (changedParamsRevise), only over a `succeeded` or `abandoned` one; else a correction. */
const supersedable = (existing: OperationRecord, by: NonNullable<ClaimInput['supersede']>) =>
  existing.fence === by.fence &&
  (by.done
    ? existing.state === 'succeeded' || existing.state === 'abandoned'
    : existing.state === 'rejected' || existing.state === 'handed-off');

/** `write`: the record to store, if any. `leaseNow` judges the lease (a ledger on the database clock passes its own). */
export function claimTransition(
  existing: OperationRecord | null,
  input: ClaimInput,
  leaseNow: number = input.now,
): { result: ClaimResult; write: OperationRecord | null } {
  checkClaim(input, leaseNow);
  if (existing === null && input.existing) return { result: { kind: 'gone' }, write: null };
  const { receipt } = input;
  if (receipt !== undefined && (existing === null || !(input.resume || input.supersede)))
    throw misplaced('a plain claim');
  const lease = { leaseOwner: input.owner, leaseExpiresAt: leaseNow + input.leaseMs, updatedAt: input.now };
  const dispatch = input.dispatch === true; // the caller calls the provider next: born `dispatched` in this one write
  const fresh: OperationRecord = {
    ...identityFields(input),
    state: dispatch ? 'dispatched' : 'claimed',
    fence: 1,
    ...lease,
    createdAt: input.now,
    ...NO_ATTEMPTS,
    firstDispatchedAt: dispatch ? input.now : null,
    attemptCount: dispatch ? 1 : 0,
    resolution: null,
    receiptChain: { head: null, length: 0 },
  };
  if (existing === null) return { result: { kind: 'claimed', record: fresh, takenOver: false }, write: fresh };
  if (existing.operation !== input.operation)
    return { result: { kind: 'conflict', record: existing, field: 'operation' }, write: null };
  if (existing.intentFingerprint !== input.intentFingerprint)
    return { result: { kind: 'conflict', record: existing, field: 'intent' }, write: null };
  if (existing.state === 'not-sent' && !(input.existing || input.resume || input.supersede)) {
    // Given back, nothing ever sent: a new operation under the same id, its receipts (the calls that never left) kept,
    // and its key (never sent; a revision's, not revision 1's, which may hold an earlier result at the provider).
    const { fence, createdAt, receiptChain, providerKey } = existing;
    const record: OperationRecord = { ...fresh, fence: fence + 1, createdAt, receiptChain, providerKey };
    return { result: { kind: 'claimed', record, takenOver: false }, write: record };
  }
  if (isTerminal(existing)) {
    const resumed = { action: 'resume', at: input.now, by: input.owner } as const;
    if (input.resume && existing.state === 'handed-off')
      return restarted(existing, receipt, true, { ...lease, resolution: resumed });
    if (input.supersede && supersedable(existing, input.supersede))
      return restarted(existing, receipt, false, {
        ...lease,
        params: input.params,
        paramsFingerprint: input.paramsFingerprint,
        providerKey: input.providerKey,
        ...NO_ATTEMPTS, // a new revision: its own attempts
        // A kept key is as old as its first use: a call recorded not applied may have stored it at the provider.
        ...(input.providerKey === existing.providerKey && { firstDispatchedAt: existing.firstDispatchedAt }),
        resolution: { action: 'supersede', at: input.now, by: input.owner, revision: input.supersede.revision },
      });
    return { result: { kind: 'terminal', record: existing }, write: null };
  }
  if (leaseLive(existing, leaseNow)) return { result: { kind: 'busy', record: existing }, write: null };
  if (receipt !== undefined) throw misplaced('a takeover');
  const record: OperationRecord = { ...existing, ...lease, fence: existing.fence + 1 };
  return {
    result: { kind: 'claimed', record, takenOver: true, previousLeaseExpiresAt: existing.leaseExpiresAt },
    write: record,
  };
}

export function checkFence(record: OperationRecord | null, ref: Fenced): OperationRecord {
  if (record === null) throw new LedgerError(`no operation ${ref.businessOperationId} in the ledger`);
  if (record.fence !== ref.fence) throw new LeaseLostError(ref.businessOperationId, ref.fence);
  return record;
}

/** A released lease stays released (claim again). */
export function renewTransition(record: OperationRecord, ref: Fenced, leaseMs: number, now: number): OperationRecord {
  checkRenewal(leaseMs, now);
  checkFence(record, ref);
  if (isTerminal(record)) return record;
  if (record.leaseOwner === null) throw new LeaseLostError(ref.businessOperationId, ref.fence);
  return { ...record, leaseExpiresAt: now + leaseMs, updatedAt: now };
}

export function dispatchedTransition(record: OperationRecord, now: number): OperationRecord {
  checkNow(now, 'markDispatched');
  if (isTerminal(record))
    throw new InvalidStateError(record.businessOperationId, record.state, 'cannot dispatch a terminal operation');
  return {
    ...record,
    state: 'dispatched',
    attemptCount: record.attemptCount + 1,
    firstDispatchedAt: record.firstDispatchedAt ?? now,
    updatedAt: now,
  };
}

export function setStateTransition(record: OperationRecord, patch: StatePatch): OperationRecord {
  checkStatePatch(patch);
  if (isTerminal(record))
    throw new InvalidStateError(
      record.businessOperationId,
      record.state,
      `cannot move a terminal operation to ${patch.state}`,
    );
  return {
    ...record,
    state: patch.state,
    ...definedFields(patch, ['lastOutcome', 'result', 'providerRef', 'statusRef']),
    ...(TERMINAL_STATES.includes(patch.state) && RELEASED),
    updatedAt: patch.now,
  };
}

export function handOffTransition(record: OperationRecord, packet: HandoffPacket, now: number): OperationRecord {
  checkPacket(packet);
  checkNow(now, 'handOff');
  if (record.state === 'succeeded' || record.state === 'abandoned' || record.state === 'handed-off')
    throw new InvalidStateError(record.businessOperationId, record.state, 'cannot hand off');
  return {
    ...record,
    state: 'handed-off',
    handoff: packet,
    lastOutcome: packet.lastKnown.outcome ?? record.lastOutcome,
    providerRef: packet.lastKnown.providerRef ?? record.providerRef,
    ...RELEASED,
    updatedAt: now,
  };
}

export function releaseTransition(record: OperationRecord): OperationRecord {
  return { ...record, ...RELEASED };
}

/** A ledger's fenced methods, each its transition through the ledger's one fenced write. */
export function fencedMethods(
  write: (
    ref: Fenced,
    what: string,
    rule: (r: OperationRecord) => OperationRecord,
    receipt?: Receipt,
    deferrable?: boolean,
  ) => Promise<OperationRecord>,
): Pick<Ledger, 'renewLease' | 'markDispatched' | 'setState' | 'handOff' | 'appendReceipt' | 'release'> {
  return {
    async renewLease(ref, leaseMs, now) {
      await write(ref, 'renewLease', (r) => renewTransition(r, ref, leaseMs, now));
    },
    markDispatched: (ref, now) => write(ref, 'markDispatched', (r) => dispatchedTransition(r, now)),
    // async: a patch that cannot be read is a rejection, as every ledger method answers, not a throw.
    setState: async (ref, patch) =>
      write(ref, 'setState', (r) => setStateTransition(r, patch), patch.receipt, patch.durability === 'deferrable'),
    handOff: (ref, packet, now, receipt) => write(ref, 'handOff', (r) => handOffTransition(r, packet, now), receipt),
    async appendReceipt(ref, receipt) {
      await write(ref, 'appendReceipt', (r) => r, receipt);
    },
    async release(ref) {
      await write(ref, 'release', releaseTransition);
    },
  };
}

/** `receipt`, if given, must follow `lastSeq` (the stored chain's last seq). */
export function resolveTransition(
  record: OperationRecord | null,
  id: BusinessOperationId,
  resolution: Resolution,
  now: number,
  receipt?: Receipt,
  lastSeq = 0,
): OperationRecord {
  if (typeof resolution !== 'object' || resolution === null)
    throw new LedgerError('resolve: a resolution { action, … } is required');
  checkNow(now, 'resolve');
  const { action, providerRef, by } = resolution;
  if (record === null) throw new LedgerError(`no operation ${id} in the ledger`);
  if (action !== 'mark-done' && action !== 'abandon')
    throw new LedgerError(`unknown resolution ${JSON.stringify(action)}`);
  if (record.state !== 'handed-off')
    throw new InvalidStateError(id, record.state, `only a handed-off operation can be resolved (${action})`);
  if (resolution.handoffAt !== undefined && record.handoff?.createdAt !== resolution.handoffAt)
    throw new InvalidStateError(id, record.state, NOT_THE_HANDOFF_DECIDED_ON);
  const noRef = typeof providerRef !== 'string' || providerRef.trim() === '' || unstorable(providerRef);
  if (action === 'mark-done' && noRef)
    throw new InvalidStateError(id, record.state, 'mark-done needs the provider reference of the effect you confirmed');
  if (receipt !== undefined) checkReceipt({ businessOperationId: id, fence: record.fence }, receipt, lastSeq);
  return chainedTransition(
    {
      ...record,
      state: action === 'mark-done' ? 'succeeded' : 'abandoned',
      providerRef: action === 'mark-done' ? providerRef! : record.providerRef,
      resolution: { action, at: now, ...(providerRef && { providerRef }), ...(by && { by }) },
      ...RELEASED,
      updatedAt: now,
    },
    receipt,
  );
}

export function chainedTransition(record: OperationRecord, receipt: Receipt | undefined): OperationRecord {
  return receipt === undefined ? record : { ...record, receiptChain: { head: receipt.hash, length: receipt.seq } };
}

export function checkReceipt(ref: Fenced, receipt: Receipt, lastSeq: number): void {
  if (typeof receipt !== 'object' || receipt === null)
    throw new LedgerError(`a receipt { businessOperationId, seq, … } is required, got ${String(receipt)}`);
  if (receipt.businessOperationId !== ref.businessOperationId)
    throw new LedgerError(`receipt for ${receipt.businessOperationId} appended to ${ref.businessOperationId}`);
  if (receipt.seq !== lastSeq + 1)
    throw new LedgerError(`receipt seq ${receipt.seq} for ${ref.businessOperationId}: expected ${lastSeq + 1}`);
}

/** What a fenced write stores: `rule` applied at `ref`'s fence, `receipt` checked as the chain's next and anchored. */
export function fencedTransition(
  stored: OperationRecord | null,
  ref: Fenced,
  rule: (r: OperationRecord) => OperationRecord,
  receipt: Receipt | undefined,
  lastSeq: number,
): OperationRecord {
  const next = rule(checkFence(stored, ref));
  if (receipt === undefined) return next;
  checkReceipt(ref, receipt, lastSeq);
  return chainedTransition(next, receipt);
}
