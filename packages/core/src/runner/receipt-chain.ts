/** The receipt chain: each attempt's receipt sealed onto the one before it, and written with its state when the ledger can. */
import type { AttemptId, OperationRecord, ProviderKey, Receipt, ReceiptKind, RunId, StatePatch } from '@retrysafe/contract';
import type { Decision, Observation } from '../decide.js';
import { sealNew, type ReceiptKey, type UnsealedReceipt } from '../receipts.js';


import { iso, type Mutable, type Op, type RunnerContext } from './context.js';
import { providerFieldErrors } from './guards.js';

/** The attempt's receipt, sealed into the operation's hash chain (written by the caller). */
export function seal(
  ctx: RunnerContext,
  op: Op,
  r: { kind: ReceiptKind; attemptId: string; startedAt: number; finishedAt: number; obs: Observation; decision: Decision | { action: string; why: string } },
): Receipt {
  const inner = r.obs === null ? null : r.obs.kind === 'found' ? r.obs.outcome : r.obs;
  const refs = (inner ?? {}) as { status?: number; code?: string; providerRef?: string; requestId?: string; message?: string; reason?: string; fields?: unknown };
  const message = refs.message ?? (r.obs && r.obs.kind !== 'found' && 'reason' in r.obs && typeof r.obs.reason === 'string' ? r.obs.reason : undefined);
  const d = r.decision;
  const reason = d.action === 'handoff' && 'reason' in d ? `${d.reason}: ${d.why}` : d.why;
  const redactor = op.redactor;
  // Plain literals; the optional fields are added only when present (a receipt has no undefined keys).
  const body: Mutable<UnsealedReceipt> = {
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
    decision: 'delayMs' in d && typeof d.delayMs === 'number' ? { action: d.action, reason: redactor.text(reason), delayMs: d.delayMs } : { action: d.action, reason: redactor.text(reason) },
    providerKey: op.providerKey,
    requestFingerprint: op.requestFingerprint,
    prevHash: op.lastHash,
  };
  if (typeof refs.status === 'number') body.status = refs.status;
  if (typeof refs.code === 'string') body.code = redactor.text(refs.code);
  if (typeof refs.providerRef === 'string') body.providerRef = redactor.text(refs.providerRef);
  if (typeof refs.requestId === 'string') body.requestId = redactor.text(refs.requestId);
  if (typeof message === 'string') body.message = redactor.text(message);
  if (inner?.kind === 'rejected') body.rejectReason = inner.reason;
  if (inner?.kind === 'rejected' && typeof inner.created === 'string') body.created = redactor.text(inner.created);
  if (Array.isArray(refs.fields) && refs.fields.length) body.fields = providerFieldErrors(refs.fields, redactor);
  return sealNew(body, ctx.options.receiptKey);
}

/**
 * A person's or a revision's receipt (kind `resolve`: resume, mark-done, abandon, supersede), chained
 * after `last`. `reason` and `providerRef` are already redacted.
 */
export function resolveReceipt(
  r: {
    readonly record: Pick<OperationRecord, 'businessOperationId' | 'provider' | 'operation'>;
    readonly last: Receipt | undefined;
    readonly runId: RunId;
    readonly attemptId: AttemptId;
    readonly action: string;
    readonly reason: string;
    readonly providerKey: ProviderKey | null;
    readonly providerRef?: string;
    readonly requestFingerprint: string;
    readonly now: number;
  },
  key: ReceiptKey | undefined,
): Receipt {
  const body: Mutable<UnsealedReceipt> = {
    businessOperationId: r.record.businessOperationId,
    seq: (r.last?.seq ?? 0) + 1,
    runId: r.runId,
    attemptId: r.attemptId,
    provider: r.record.provider,
    operation: r.record.operation,
    kind: 'resolve',
    startedAt: iso(r.now),
    finishedAt: iso(r.now),
    outcome: null,
    decision: { action: r.action, reason: r.reason },
    providerKey: r.providerKey,
    requestFingerprint: r.requestFingerprint,
    prevHash: r.last?.hash ?? null,
  };
  if (r.providerRef !== undefined) body.providerRef = r.providerRef;
  return sealNew(body, key);
}

/** A state and the receipt of the attempt that led to it: one transaction when the ledger can, else state then receipt. */
export async function writeState(ctx: RunnerContext, op: Op, patch: Omit<StatePatch, 'receipt'>, sealed: Receipt | null): Promise<void> {
  if (sealed !== null && ctx.receiptWithState) {
    const withReceipt: StatePatch = { state: patch.state, lastOutcome: patch.lastOutcome, result: patch.result, providerRef: patch.providerRef, statusRef: patch.statusRef, now: patch.now, receipt: sealed, durability: patch.durability };
    op.record = await ctx.ledger.setState(op.ref, withReceipt);
    recorded(op, sealed);
    return;
  }
  op.record = await ctx.ledger.setState(op.ref, patch);
  if (sealed !== null) await appendReceipt(ctx, op, sealed);
}

export async function appendReceipt(ctx: RunnerContext, op: Op, sealed: Receipt): Promise<void> {
  await ctx.ledger.appendReceipt(op.ref, sealed);
  recorded(op, sealed);
}

/** Bookkeeping once a receipt is durably written: the next one chains from it. */
export function recorded(op: Op, sealed: Receipt): void {
  op.lastSeq = sealed.seq;
  op.lastHash = sealed.hash;
  op.receipts.push(sealed);
}
