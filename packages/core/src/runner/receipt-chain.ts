/** The receipt chain: each attempt's receipt sealed onto the one before it, and written with its state when the ledger can. */
import type { AttemptId, OperationRecord, ProviderKey, Receipt, ReceiptKind, RunId, StatePatch } from '@retrysafe/contract';
import type { Decision, Observation } from '../decide.js';
import { sealReceipt, type ReceiptKey } from '../receipts.js';
import { iso, type Op, type RunnerContext } from './context.js';
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
  }, ctx.options.receiptKey);
  return sealed;
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
  return sealReceipt({
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
    ...(r.providerRef !== undefined ? { providerRef: r.providerRef } : {}),
    requestFingerprint: r.requestFingerprint,
    prevHash: r.last?.hash ?? null,
  }, key);
}

/** A state and the receipt of the attempt that led to it: one transaction when the ledger can, else state then receipt. */
export async function writeState(ctx: RunnerContext, op: Op, patch: Omit<StatePatch, 'receipt'>, sealed: Receipt | null): Promise<void> {
  if (sealed !== null && ctx.receiptWithState) {
    op.record = await ctx.ledger.setState(op.ref, { ...patch, receipt: sealed });
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
