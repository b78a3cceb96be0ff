import type { FieldError } from './errors.js';
import type { BusinessOperationId, ProviderKey } from './ids.js';
import type { OutcomeKind } from './outcome.js';
import type { ReceiptKind } from './receipt.js';

export type HandoffReason =
  | 'rejected'
  | 'retry-exhausted'
  | 'unknown-no-safe-resend'
  | 'lookup-window-exhausted'
  | 'in-progress-window-exhausted'
  | 'key-past-retention'
  | 'crash-recovery-inconclusive'
  /** recover() could not drive this record (the error is in the packet's explanation and the recover report). */
  | 'recovery-failed';

/** `resend-with`: send corrected params as a new revision; offered only when every attempt is known not applied. */
export type SafeActionName = 'resume' | 'mark-done' | 'abandon' | 'resend-with';

export interface SafeAction {
  readonly action: SafeActionName;
  /** Whether retrysafe considers this safe given what it knows. */
  readonly safe: boolean;
  readonly why: string;
}

export interface HandoffAttempt {
  readonly attemptId: string;
  readonly runId: string;
  readonly kind: ReceiptKind;
  readonly at: string;
  readonly outcome: OutcomeKind | 'found' | 'not-found' | 'cannot-tell' | null;
  readonly status?: number;
  readonly code?: string;
  readonly providerRef?: string;
  readonly requestId?: string;
  /** What this rejected attempt still created at the provider. */
  readonly created?: string;
}

/** Everything a person needs to finish the operation by hand. No secrets, no PII. */
export interface HandoffPacket {
  readonly businessOperationId: BusinessOperationId;
  readonly provider: string;
  readonly operation: string;
  readonly intentFingerprint: string;
  readonly providerKey: ProviderKey | null;
  readonly reason: HandoffReason;
  /** In words: what happened and why retrysafe stopped. */
  readonly explanation: string;
  readonly attempts: readonly HandoffAttempt[];
  readonly lastKnown: {
    readonly outcome: OutcomeKind | 'found' | 'not-found' | 'cannot-tell' | null;
    readonly status?: number;
    readonly code?: string;
    readonly providerRef?: string;
    readonly message?: string;
    /** The provider's field errors of the last rejection (redacted): what a corrected request must change. */
    readonly fields?: readonly FieldError[];
    /** The object a rejected attempt left at the provider: finish or cancel it there; a corrected request is not sent as a new one. */
    readonly created?: string;
  };
  readonly safeNextActions: readonly SafeAction[];
  readonly createdAt: string;
}

/** Where packets go (callback, JSONL file, queue…). */
export interface HandoffSink {
  send(packet: HandoffPacket): Promise<void> | void;
}
