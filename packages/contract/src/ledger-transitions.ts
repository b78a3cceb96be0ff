import { InvalidStateError, LeaseLostError, LedgerError } from './errors.js';
import type { HandoffPacket } from './handoff.js';
import type { BusinessOperationId } from './ids.js';
import {
  type ClaimInput,
  type ClaimResult,
  type Fenced,
  type OperationRecord,
  type OperationState,
  type StatePatch,
  TERMINAL_STATES,
} from './ledger.js';
import type { Receipt } from './receipt.js';

// The ledger's state machine as pure functions on records, so every ledger applies the same rules
// inside its own atomic section: read the record, call the rule, write what it returns.

/** A cut or corrupt stored value becomes a LedgerError naming the ledger (`where`) and the value. */
export function parseStored<T>(text: string, what: string, where: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (cause) {
    throw new LedgerError(`${where}: ${what} is not valid JSON (cut or corrupt): ${(cause as Error).message}`, {
      cause,
    });
  }
}

export function isTerminal(record: OperationRecord): boolean {
  return TERMINAL_STATES.includes(record.state);
}

export function leaseLive(record: OperationRecord, now: number): boolean {
  return record.leaseOwner !== null && record.leaseExpiresAt !== null && record.leaseExpiresAt > now;
}

const NO_ATTEMPTS = {
  firstDispatchedAt: null,
  attemptCount: 0,
  lastOutcome: null,
  result: null,
  providerRef: null,
  statusRef: null,
  handoff: null,
} as const;

/** `write`: the record to store, if any. `leaseNow` judges the lease (a ledger on the database clock passes its own). */
export function claimTransition(
  existing: OperationRecord | null,
  input: ClaimInput,
  leaseNow: number = input.now,
): { result: ClaimResult; write: OperationRecord | null } {
  if (!Number.isFinite(input.leaseMs) || input.leaseMs <= 0)
    throw new LedgerError(`claim: leaseMs must be > 0, got ${input.leaseMs}`);
  if (!Number.isFinite(input.now)) throw new LedgerError('claim: now must be epoch ms');
  if (typeof input.owner !== 'string' || input.owner.length === 0)
    throw new LedgerError('claim: owner must be a non-empty string');
  if (!Number.isFinite(leaseNow)) throw new LedgerError('claim: the lease clock must be epoch ms');
  const lease = { leaseOwner: input.owner, leaseExpiresAt: leaseNow + input.leaseMs, updatedAt: input.now };
  if (existing === null) {
    const dispatch = input.dispatch === true; // the caller calls the provider next: born `dispatched` in this one write
    const record: OperationRecord = {
      businessOperationId: input.businessOperationId,
      provider: input.provider,
      operation: input.operation,
      intentFingerprint: input.intentFingerprint,
      paramsFingerprint: input.paramsFingerprint,
      params: input.params,
      providerKey: input.providerKey,
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
    return { result: { kind: 'claimed', record, takenOver: false }, write: record };
  }
  if (existing.operation !== input.operation)
    return { result: { kind: 'conflict', record: existing, field: 'operation' }, write: null };
  if (existing.intentFingerprint !== input.intentFingerprint)
    return { result: { kind: 'conflict', record: existing, field: 'intent' }, write: null };
  if (isTerminal(existing)) {
    if (input.resume && existing.state === 'handed-off') {
      const record: OperationRecord = {
        ...existing,
        ...lease,
        state: 'claimed',
        fence: existing.fence + 1,
        resolution: { action: 'resume', at: input.now, by: input.owner },
      };
      return { result: { kind: 'claimed', record, takenOver: true }, write: record };
    }
    if (
      input.supersede &&
      (existing.state === 'rejected' || existing.state === 'handed-off') &&
      existing.fence === input.supersede.fence
    ) {
      const record: OperationRecord = {
        ...existing,
        ...lease,
        params: input.params,
        paramsFingerprint: input.paramsFingerprint,
        providerKey: input.providerKey,
        ...NO_ATTEMPTS, // a new revision: its own attempts, its own key age
        state: 'claimed',
        fence: existing.fence + 1,
        resolution: { action: 'supersede', at: input.now, by: input.owner, revision: input.supersede.revision },
      };
      return { result: { kind: 'claimed', record, takenOver: false }, write: record };
    }
    return { result: { kind: 'terminal', record: existing }, write: null };
  }
  if (leaseLive(existing, leaseNow)) return { result: { kind: 'busy', record: existing }, write: null };
  const record: OperationRecord = { ...existing, ...lease, fence: existing.fence + 1 };
  return { result: { kind: 'claimed', record, takenOver: true }, write: record };
}

export function checkFence(record: OperationRecord | null, ref: Fenced): OperationRecord {
  if (record === null) throw new LedgerError(`no operation ${ref.businessOperationId} in the ledger`);
  if (record.fence !== ref.fence) throw new LeaseLostError(ref.businessOperationId, ref.fence);
  return record;
}

/** A no-op when terminal; a released lease stays released (claim again). */
export function renewTransition(record: OperationRecord, ref: Fenced, leaseMs: number, now: number): OperationRecord {
  checkFence(record, ref);
  if (isTerminal(record)) return record;
  if (record.leaseOwner === null) throw new LeaseLostError(ref.businessOperationId, ref.fence);
  return { ...record, leaseExpiresAt: now + leaseMs, updatedAt: now };
}

export function dispatchedTransition(record: OperationRecord, now: number): OperationRecord {
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
  if (patch.state === 'handed-off') throw new LedgerError('setState cannot hand off: use handOff(ref, packet)');
  if (patch.state === 'abandoned')
    throw new LedgerError('setState cannot abandon: a person does that through resolve()');
  if (isTerminal(record))
    throw new InvalidStateError(
      record.businessOperationId,
      record.state,
      `cannot move a terminal operation to ${patch.state}`,
    );
  const terminal = TERMINAL_STATES.includes(patch.state);
  return {
    ...record,
    state: patch.state,
    lastOutcome: patch.lastOutcome !== undefined ? patch.lastOutcome : record.lastOutcome,
    result: patch.result !== undefined ? patch.result : record.result,
    providerRef: patch.providerRef !== undefined ? patch.providerRef : record.providerRef,
    statusRef: patch.statusRef !== undefined ? patch.statusRef : record.statusRef,
    leaseOwner: terminal ? null : record.leaseOwner,
    leaseExpiresAt: terminal ? null : record.leaseExpiresAt,
    updatedAt: patch.now,
  };
}

export function handOffTransition(record: OperationRecord, packet: HandoffPacket, now: number): OperationRecord {
  if (record.state === 'succeeded' || record.state === 'abandoned' || record.state === 'handed-off')
    throw new InvalidStateError(record.businessOperationId, record.state, 'cannot hand off');
  return {
    ...record,
    state: 'handed-off',
    handoff: packet,
    lastOutcome: packet.lastKnown.outcome ?? record.lastOutcome,
    providerRef: packet.lastKnown.providerRef ?? record.providerRef,
    leaseOwner: null,
    leaseExpiresAt: null,
    updatedAt: now,
  };
}

export function releaseTransition(record: OperationRecord): OperationRecord {
  return { ...record, leaseOwner: null, leaseExpiresAt: null };
}

export function resolveTransition(
  record: OperationRecord | null,
  id: BusinessOperationId,
  resolution: { action: 'mark-done' | 'abandon'; providerRef?: string; by?: string },
  now: number,
): OperationRecord {
  if (record === null) throw new LedgerError(`no operation ${id} in the ledger`);
  if (resolution.action !== 'mark-done' && resolution.action !== 'abandon')
    throw new LedgerError(`unknown resolution ${JSON.stringify((resolution as { action: unknown }).action)}`);
  if (record.state !== 'handed-off')
    throw new InvalidStateError(id, record.state, `only a handed-off operation can be resolved (${resolution.action})`);
  if (
    resolution.action === 'mark-done' &&
    (typeof resolution.providerRef !== 'string' || resolution.providerRef.length === 0)
  )
    throw new InvalidStateError(id, record.state, 'mark-done needs the provider reference of the effect you confirmed');
  return {
    ...record,
    state: resolution.action === 'mark-done' ? 'succeeded' : 'abandoned',
    providerRef: resolution.action === 'mark-done' ? resolution.providerRef! : record.providerRef,
    resolution: {
      action: resolution.action,
      at: now,
      ...(resolution.providerRef ? { providerRef: resolution.providerRef } : {}),
      ...(resolution.by ? { by: resolution.by } : {}),
    },
    leaseOwner: null,
    leaseExpiresAt: null,
    updatedAt: now,
  };
}

/** The chain's anchor every ledger writes with the receipt. */
export function chainedTransition(record: OperationRecord, receipt: Receipt | undefined): OperationRecord {
  return receipt === undefined ? record : { ...record, receiptChain: { head: receipt.hash, length: receipt.seq } };
}

export function checkReceipt(ref: Fenced, receipt: Receipt, lastSeq: number): void {
  if (receipt.businessOperationId !== ref.businessOperationId)
    throw new LedgerError(`receipt for ${receipt.businessOperationId} appended to ${ref.businessOperationId}`);
  if (receipt.seq !== lastSeq + 1)
    throw new LedgerError(`receipt seq ${receipt.seq} for ${ref.businessOperationId}: expected ${lastSeq + 1}`);
}

export function isPrunable(record: OperationRecord, states: readonly OperationState[], before: number): boolean {
  return states.includes(record.state) && record.updatedAt < before;
}
