import type { FieldError } from './errors.js';
import type { AttemptId, RunId } from './ids.js';
import type { OperationRecord } from './ledger.js';
import type { OutcomeKind, ProviderRefs, RejectReason } from './outcome.js';

export type ReceiptKind = 'dispatch' | 'resend' | 'lookup' | 'poll' | 'resolve';

/** One per attempt, lookup or resolution: redacted (no bodies), hash-chained per operation. */
export interface Receipt
  extends ProviderRefs,
    Pick<OperationRecord, 'businessOperationId' | 'provider' | 'operation' | 'providerKey'> {
  readonly seq: number;
  readonly runId: RunId;
  readonly attemptId: AttemptId;
  readonly kind: ReceiptKind;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly outcome: OutcomeKind | 'found' | 'not-found' | 'cannot-tell' | null;
  readonly decision: { readonly action: string; readonly reason: string; readonly delayMs?: number };
  readonly message?: string;
  /** `conflict`: the key is stored with other params, so something was applied under it. */
  readonly rejectReason?: RejectReason;
  /** The call's request provably never left (its outcome's `neverSent`). */
  readonly neverSent?: true;
  /** What a rejected attempt still created: a corrected request may not go out as a new one. */
  readonly created?: string;
  readonly fields?: readonly FieldError[];
  /** `sha256:` of the canonical, redacted request params. */
  readonly requestFingerprint: string;
  readonly prevHash: string | null;
  readonly hash: string;
}

/** Every reason a packet may give, for a filter that refuses a typo rather than matching nothing. */
export const HANDOFF_REASONS = [
  ...['rejected', 'retry-exhausted', 'unknown-no-safe-resend', 'lookup-window-exhausted'],
  ...['in-progress-window-exhausted', 'key-past-retention', 'crash-recovery-inconclusive', 'recovery-failed'],
] as const;
export type HandoffReason = (typeof HANDOFF_REASONS)[number];

/** `resend-with`: send corrected params as a new revision; offered only when every attempt is known not applied. */
export type SafeActionName = 'resume' | 'mark-done' | 'abandon' | 'resend-with';

export interface SafeAction {
  readonly action: SafeActionName;
  readonly safe: boolean;
  readonly why: string;
}

/** One provider call or lookup; `message` is what it said (redacted), such as why a lookup could not tell. */
export interface HandoffAttempt
  extends Pick<Receipt, 'kind' | 'outcome' | 'status' | 'code' | 'providerRef' | 'requestId' | 'message' | 'created'> {
  readonly attemptId: string;
  readonly runId: string;
  readonly at: string;
}

/** Everything a person needs to finish the operation by hand. No secrets, no PII. */
export interface HandoffPacket
  extends Pick<
    OperationRecord,
    'businessOperationId' | 'provider' | 'operation' | 'intentFingerprint' | 'providerKey'
  > {
  readonly reason: HandoffReason;
  readonly explanation: string;
  readonly attempts: readonly HandoffAttempt[];
  /** The last attempt's outcome; `fields` say what a corrected request must change, `created` what to finish or cancel. */
  readonly lastKnown: Pick<Receipt, 'outcome' | 'status' | 'code' | 'providerRef' | 'message' | 'fields' | 'created'>;
  readonly safeNextActions: readonly SafeAction[];
  readonly createdAt: string;
}

export interface HandoffSink {
  send(packet: HandoffPacket): Promise<void> | void;
}
