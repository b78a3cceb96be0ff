import type { BusinessOperationId, ProviderKey } from './ids.js';
import type { Receipt } from './receipt.js';

export type HandoffReason =
  | 'rejected'
  | 'retry-exhausted'
  | 'unknown-no-safe-resend'
  | 'lookup-window-exhausted'
  | 'in-progress-window-exhausted'
  | 'key-past-retention'
  | 'crash-recovery-inconclusive'
  | 'recovery-failed';

/** `resend-with`: send corrected params as a new revision; offered only when every attempt is known not applied. */
export type SafeActionName = 'resume' | 'mark-done' | 'abandon' | 'resend-with';

export interface SafeAction {
  readonly action: SafeActionName;
  readonly safe: boolean;
  readonly why: string;
}

export interface HandoffAttempt
  extends Pick<Receipt, 'kind' | 'outcome' | 'status' | 'code' | 'providerRef' | 'requestId' | 'created'> {
  readonly attemptId: string;
  readonly runId: string;
  readonly at: string;
}

/** Everything a person needs to finish the operation by hand. No secrets, no PII. */
export interface HandoffPacket {
  readonly businessOperationId: BusinessOperationId;
  readonly provider: string;
  readonly operation: string;
  readonly intentFingerprint: string;
  readonly providerKey: ProviderKey | null;
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
