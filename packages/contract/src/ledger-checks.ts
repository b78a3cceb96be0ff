// The input checks every ledger applies, so each refuses the same bad input with the same LedgerError: NaN, -1 or a
// string would otherwise be kept by one ledger, turned to null or read as "all" by another, refused by a third.
import { LedgerError } from './errors.js';
import { businessOperationIdProblem } from './ids.js';
import type { ClaimInput, Fenced, ListFilter, PruneOptions, StatePatch } from './ledger.js';
import { type OperationState, PRUNABLE_STATES, STATES } from './ledger-states.js';
import type { OnUnreadable } from './ledger-stored.js';
import type { HandoffPacket } from './receipt.js';

/** A ledger factory's option, or its default. */
export function numberOption(value: number | undefined, fallback: number, name: string, min: number, integer = false) {
  const v = value ?? fallback;
  if (!(Number.isFinite(v) && v >= min && (!integer || Number.isInteger(v))))
    throw new LedgerError(`${name} must be ${integer ? 'an integer' : 'a number'} ≥ ${min}, got ${String(value)}`);
  return v;
}

/** The first of `allowed` is the default. */
export function choiceOption<T extends string>(value: T | undefined, allowed: readonly T[], name: string): T {
  if (value === undefined) return allowed[0]!;
  if (!allowed.includes(value))
    throw new LedgerError(`${name} must be ${allowed.map((a) => `'${a}'`).join(' or ')}, got ${JSON.stringify(value)}`);
  return value;
}

/** Whole ms within the safe integers: what every store keeps exactly (PostgreSQL's bigint, DynamoDB's numbers). */
export function checkNow(now: number, what: string): void {
  if (!Number.isSafeInteger(now)) throw new LedgerError(`${what}: now must be whole epoch ms, got ${String(now)}`);
}

/** A fraction is rounded up where a ledger stores whole ms; the lease must end within the safe integers, as `now`. */
export function checkLease(leaseMs: number, now: number, what: string): void {
  if (!(Number.isFinite(leaseMs) && leaseMs > 0 && Number.isSafeInteger(Math.ceil(now + leaseMs))))
    throw new LedgerError(
      `${what}: leaseMs must be a number > 0 ending within the safe integers, got ${String(leaseMs)}`,
    );
}

export function checkLimit(limit: number | undefined, what: string): void {
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 0))
    throw new LedgerError(`${what}: limit must be a whole number ≥ 0, got ${String(limit)}`);
}

export function checkOnUnreadable(onUnreadable: unknown, what: string): void {
  if (onUnreadable !== undefined && typeof onUnreadable !== 'function')
    throw new LedgerError(`${what}: onUnreadable must be a function`);
}

export function checkRecoverCandidates(now: number, limit: number | undefined, onUnreadable?: OnUnreadable): void {
  checkNow(now, 'recoverCandidates');
  checkLimit(limit, 'recoverCandidates');
  checkOnUnreadable(onUnreadable, 'recoverCandidates');
}

/** A ledger whose SQL or conditional write does a rule's work still calls its checks, before reading or writing. */
export function checkRef(ref: Fenced): void {
  if (typeof ref?.businessOperationId !== 'string' || !Number.isSafeInteger(ref.fence))
    throw new LedgerError('a fenced reference { businessOperationId, fence } is required');
}

/** A text no ledger keeps exactly in a column: PostgreSQL's refuse U+0000, and a lone surrogate becomes U+FFFD in
 * UTF-8 (so two texts would read as one). No ledger takes one. */
export const unstorable = (value: unknown): boolean => typeof value === 'string' && /\u0000|\p{Cs}/u.test(value);

export function checkStorable(values: object, fields: readonly string[], what: string): void {
  const bad = fields.find((field) => unstorable((values as Record<string, unknown>)[field]));
  if (bad !== undefined)
    throw new LedgerError(`${what}: ${bad} holds U+0000 or a lone surrogate, which a ledger cannot store`);
}

const REF_TEXTS = ['providerRef', 'statusRef', 'lastOutcome', 'outcome'];

export function checkStatePatch(patch: StatePatch): void {
  if (typeof patch?.state !== 'string') throw new LedgerError('setState: patch.state is required');
  checkNow(patch.now, 'setState');
  checkStorable(patch, REF_TEXTS, 'setState');
  if (patch.state === 'handed-off') throw new LedgerError('setState cannot hand off: use handOff(ref, packet)');
  if (patch.state === 'abandoned')
    throw new LedgerError('setState cannot abandon: a person does that through resolve()');
  if (!(STATES as readonly string[]).includes(patch.state))
    throw new LedgerError(`setState: unknown state ${JSON.stringify(patch.state)}`);
}

export function checkPacket(packet: HandoffPacket): void {
  if (typeof packet?.lastKnown !== 'object' || packet.lastKnown === null)
    throw new LedgerError('handOff: a handoff packet { lastKnown, … } is required');
  checkStorable(packet.lastKnown, REF_TEXTS, 'handOff');
}

export function checkRenewal(leaseMs: number, now: number): void {
  checkNow(now, 'renewLease');
  checkLease(leaseMs, now, 'renewLease');
}

export function checkPruneOptions(options: PruneOptions): readonly OperationState[] {
  if (!Number.isSafeInteger(options?.before)) throw new LedgerError('prune: before must be whole epoch ms');
  if (options.batchSize !== undefined && !(Number.isInteger(options.batchSize) && options.batchSize >= 1))
    throw new LedgerError('prune: batchSize must be an integer ≥ 1');
  if (options.onPrune !== undefined && typeof options.onPrune !== 'function')
    throw new LedgerError('prune: onPrune must be a function');
  checkOnUnreadable(options.onUnreadable, 'prune');
  const states = options.states ?? PRUNABLE_STATES;
  if (!Array.isArray(states)) throw new LedgerError('prune: states must be a list of states');
  const refused = states.find((st) => !PRUNABLE_STATES.includes(st));
  if (refused !== undefined)
    throw new LedgerError(
      `prune: ${JSON.stringify(refused)} operations are never pruned (only ${PRUNABLE_STATES.join(', ')})`,
    );
  return states;
}

export function checkListFilter(filter: ListFilter): void {
  checkLimit(filter.limit, 'list');
  checkStorable(filter, ['provider', 'operation'], 'list');
  checkOnUnreadable(filter.onUnreadable, 'list');
  const { states } = filter;
  if (states !== undefined && !(Array.isArray(states) && states.every((s) => STATES.includes(s))))
    throw new LedgerError(`list: states must be a list of states, got ${JSON.stringify(states)}`);
}

/** The claim's fields a record is found, listed and compared by. */
const CLAIM_TEXTS = ['provider', 'operation', 'intentFingerprint', 'paramsFingerprint'] as const;
/** The claim's texts a ledger keeps in text columns (see unstorable): refused alike by every ledger. */
const STORABLE = [...CLAIM_TEXTS, 'providerKey', 'account', 'owner'] as const;

/** `leaseNow`: the clock the claim's lease is judged on. */
export function checkClaim(input: ClaimInput, leaseNow: number): void {
  checkNow(input.now, 'claim');
  checkLease(input.leaseMs, input.now, 'claim');
  if (typeof input.owner !== 'string' || input.owner.length === 0)
    throw new LedgerError('claim: owner must be a non-empty string');
  if (!Number.isFinite(leaseNow)) throw new LedgerError('claim: the lease clock must be epoch ms');
  const badId = businessOperationIdProblem(input.businessOperationId);
  if (badId !== null) throw new LedgerError(`claim: businessOperationId ${badId}; nothing written`);
  for (const field of CLAIM_TEXTS)
    if (typeof input[field] !== 'string') throw new LedgerError(`claim: ${field} must be a string`);
  if (input.account !== undefined && typeof input.account !== 'string')
    throw new LedgerError('claim: account must be a string when given');
  if (input.intentFrom !== undefined && input.intentFrom !== 'caller')
    throw new LedgerError("claim: intentFrom must be 'caller' when given");
  checkStorable(input, STORABLE, 'claim');
}
