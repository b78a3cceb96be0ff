import type { OperationRecord, Receipt } from '@retrysafe/contract';
import { answerOf, type Decision, type Observation } from '../decide.js';
import { RunnerConfigurationError } from '../errors/runner-configuration-error.js';
import type { Operation } from '../intake/operation.js';
import { sealReceipt, type UnsealedReceipt } from '../receipts.js';
import type { Redactor } from '../redact.js';
import type { RunnerContext } from './context.js';

/** Path and message only, redacted, at most 20. */
function providerFieldErrors(fields: readonly unknown[], redactor: Redactor): { path: string; message: string }[] {
  return fields.slice(0, 20).flatMap((f) => {
    const r = (f ?? {}) as { path?: unknown; message?: unknown };
    return typeof r.path === 'string'
      ? [{ path: redactor.text(r.path), message: redactor.text(typeof r.message === 'string' ? r.message : 'invalid') }]
      : [];
  });
}

export function attemptReceipt(
  ctx: RunnerContext,
  op: Operation,
  last: Receipt | undefined,
  r: Pick<Receipt, 'kind' | 'attemptId'> & {
    startedAt: number;
    finishedAt: number;
    obs: Observation;
    /** `give-back`: the budget is spent and no call ever left (the operation becomes `not-sent`). */
    decision: Decision | { readonly action: 'give-back'; readonly why: string };
  },
): Receipt {
  const inner = answerOf(r.obs);
  const refs = (inner ?? {}) as {
    [k in 'status' | 'code' | 'providerRef' | 'requestId' | 'message' | 'reason' | 'fields']?: unknown;
  };
  // A rejection's message is what it says (its reason is the rejectReason code); a "cannot tell" has only a reason.
  const message =
    typeof refs.message === 'string' ? refs.message : typeof refs.reason === 'string' ? refs.reason : undefined;
  const d = r.decision;
  const reason = op.redactor.text(d.action === 'handoff' ? `${d.reason}: ${d.why}` : d.why);
  const body: { -readonly [K in keyof UnsealedReceipt]: UnsealedReceipt[K] } = {
    businessOperationId: op.id,
    seq: (last?.seq ?? 0) + 1,
    runId: op.runId,
    attemptId: r.attemptId,
    provider: op.adapter.provider,
    operation: op.card.operation,
    kind: r.kind,
    startedAt: new Date(r.startedAt).toISOString(),
    finishedAt: new Date(r.finishedAt).toISOString(),
    outcome: r.obs === null ? null : r.obs.kind,
    decision: 'delayMs' in d ? { action: d.action, reason, delayMs: d.delayMs } : { action: d.action, reason },
    providerKey: op.providerKey,
    requestFingerprint: op.requestFingerprint,
    prevHash: last?.hash ?? null,
  };
  // Only what the provider said is kept, redacted.
  if (typeof refs.status === 'number') body.status = refs.status;
  for (const k of ['code', 'providerRef', 'requestId'] as const)
    if (typeof refs[k] === 'string') body[k] = op.redactor.text(refs[k]);
  if (message !== undefined) body.message = op.redactor.text(message);
  if (inner?.kind === 'not-applied' && inner.neverSent === true) body.neverSent = true;
  if (inner?.kind === 'rejected') {
    body.rejectReason = inner.reason;
    if (typeof inner.created === 'string') body.created = op.redactor.text(inner.created);
  }
  if (Array.isArray(refs.fields) && refs.fields.length > 0) body.fields = providerFieldErrors(refs.fields, op.redactor);
  return sealReceipt(body, ctx.options.receiptKey);
}

/** A person's or a revision's receipt: `reason` and `providerRef` come redacted; a new attempt id is drawn. */
export function resolveReceipt(
  ctx: RunnerContext,
  record: OperationRecord,
  last: Receipt | undefined,
  op: Pick<Operation, 'runId' | 'attemptIds' | 'providerKey' | 'requestFingerprint'>,
  decision: { readonly action: string; readonly reason: string; readonly providerRef?: string },
): Receipt {
  const { action, reason, providerRef } = decision;
  const at = new Date(ctx.clock.now()).toISOString();
  const body: UnsealedReceipt = {
    businessOperationId: record.businessOperationId,
    seq: (last?.seq ?? 0) + 1,
    provider: record.provider,
    operation: record.operation,
    kind: 'resolve',
    startedAt: at,
    finishedAt: at,
    outcome: null,
    decision: { action, reason },
    prevHash: last?.hash ?? null,
    runId: op.runId,
    attemptId: op.attemptIds(),
    providerKey: op.providerKey,
    ...(providerRef !== undefined && { providerRef }),
    requestFingerprint: op.requestFingerprint,
  };
  return sealReceipt(body, ctx.options.receiptKey);
}

/** A receipt sealed without the key after keyed ones breaks the chain for good: refused before anything is written. */
export function checkSealable(ctx: RunnerContext, record: OperationRecord, what: string): void {
  const sealedWith = /^hmac-sha256:([^:]+):/.exec(record.receiptChain?.head ?? '')?.[1];
  if (sealedWith !== undefined && !ctx.options.receiptKey)
    throw new RunnerConfigurationError(
      'receiptKey',
      `the receipts of ${record.businessOperationId} are sealed with key ${sealedWith}: give the receipt key (RETRYSAFE_RECEIPT_KEYS) to ${what}; nothing was written`,
    );
}
