// What the ledger suite's tests are made of: claim inputs, packets and sealed receipts of one shape.
import {
  asBusinessOperationId,
  type ClaimInput,
  type ClaimResult,
  type HandoffPacket,
  type Ledger,
  type ProviderKey,
  type Receipt,
} from '@retrysafe/contract';
import { sealReceipt } from '@retrysafe/core/internal';
import { expect } from 'vitest';

export const T0 = Date.UTC(2026, 0, 1);
export const id = (s: string) => asBusinessOperationId(`suite-${s}`);

/** A claim of `businessOperationId`, its fingerprints, params and provider key derived from it. */
export function claimOf(businessOperationId: string, over: Partial<ClaimInput> = {}): ClaimInput {
  return {
    businessOperationId: asBusinessOperationId(businessOperationId),
    provider: 'sandbox',
    operation: 'sandbox.records.create',
    intentFingerprint: `sha256:intent-${businessOperationId}`,
    paramsFingerprint: `sha256:params-${businessOperationId}`,
    params: { ref: businessOperationId },
    providerKey: `rs-${businessOperationId}` as ProviderKey,
    owner: 'worker-1',
    leaseMs: 1000,
    now: T0,
    ...over,
  };
}

/** The suite's claims: one intent and params for every name, so only the id tells two apart. */
export const claimInput = (name: string, over: Partial<ClaimInput> = {}): ClaimInput =>
  claimOf(id(name), {
    intentFingerprint: 'sha256:intent-a',
    paramsFingerprint: 'sha256:params-a',
    params: { ref: name, nested: { n: 1 } },
    providerKey: `rs-${name}` as ProviderKey,
    ...over,
  });

/** A handoff packet of the claim `claimOf(businessOperationId)` made, whose safe next action is to abandon it. */
export function packetOf(businessOperationId: string, over: Partial<HandoffPacket> = {}): HandoffPacket {
  const { provider, operation, intentFingerprint, providerKey } = claimOf(businessOperationId);
  return {
    businessOperationId: asBusinessOperationId(businessOperationId),
    provider,
    operation,
    intentFingerprint,
    providerKey,
    reason: 'unknown-no-safe-resend',
    explanation: 'suite',
    attempts: [],
    lastKnown: { outcome: 'unknown', status: 504 },
    safeNextActions: [{ action: 'abandon', safe: true, why: 'suite' }],
    createdAt: new Date(T0).toISOString(),
    ...over,
  };
}

/** A corrected request: the params, fingerprint and key of a new revision of a suite claim. */
export const REVISED = {
  params: { ref: 'revised', fixed: true },
  paramsFingerprint: 'sha256:params-b',
  providerKey: 'rs-revised-r2' as ProviderKey,
};

export const packet = (name: string): HandoffPacket =>
  packetOf(id(name), { intentFingerprint: 'sha256:intent-a', providerKey: `rs-${name}` as ProviderKey });

export function receipt(name: string, seq: number, prevHash: string | null): Receipt {
  return sealReceipt({
    businessOperationId: id(name),
    seq,
    runId: 'run_suite' as Receipt['runId'],
    attemptId: `att_${seq}` as Receipt['attemptId'],
    provider: 'sandbox',
    operation: 'sandbox.records.create',
    kind: seq === 1 ? 'dispatch' : 'resend',
    startedAt: new Date(T0).toISOString(),
    finishedAt: new Date(T0 + 1).toISOString(),
    outcome: 'unknown',
    decision: { action: 'send', reason: 'suite', delayMs: 5 },
    providerKey: `rs-${name}` as ProviderKey,
    requestFingerprint: 'sha256:req',
    prevHash,
  });
}

export async function claimed(ledger: Ledger, name: string, over: Partial<ClaimInput> = {}) {
  const r = await ledger.claim(claimInput(name, over));
  if (r.kind !== 'claimed') throw new Error(`expected claimed, got ${r.kind}`);
  return { ref: { businessOperationId: r.record.businessOperationId, fence: r.record.fence }, record: r.record };
}

/** A claimed operation with one receipt, then handed off: `ref` (its claim), `r1` (its receipt), `handed` (the record). */
export async function handedOffWithReceipt(ledger: Ledger, name: string) {
  const { ref } = await claimed(ledger, name);
  const r1 = receipt(name, 1, null);
  await ledger.appendReceipt(ref, r1);
  const handed = await ledger.handOff(ref, packet(name), T0 + 1);
  return { ref, r1, handed };
}

/** Asserts what the ledger holds for `name`: this record, and these receipts (default none). */
export async function expectStored(ledger: Ledger, name: string, record: unknown, receipts: readonly Receipt[] = []) {
  expect(await ledger.get(id(name))).toEqual(record);
  expect(await ledger.receipts(id(name))).toEqual(receipts);
}

/** Asserts the claim was granted and, when given, whether it took an expired lease over. */
export function expectClaimed(
  r: ClaimResult,
  takenOver?: boolean,
): asserts r is Extract<ClaimResult, { kind: 'claimed' }> {
  expect(r).toMatchObject({ kind: 'claimed', ...(takenOver === undefined ? {} : { takenOver }) });
}

/** The suite's `it`: each test gets the ledger under test, fresh for it. */
export type Test = (name: string, fn: (ledger: Ledger) => Promise<void> | void) => void;

export const idsOf = async (records: Promise<readonly { businessOperationId: string }[]>) =>
  (await records).map((r) => r.businessOperationId);

export const refused = (write: Promise<unknown>, error: { isInstance(e: unknown): boolean }) =>
  expect(write).rejects.toSatisfy(error.isInstance);
