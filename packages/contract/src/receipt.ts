import type { FieldError } from './errors.js';
import type { AttemptId, BusinessOperationId, ProviderKey, RunId } from './ids.js';
import type { OutcomeKind, ProviderRefs, RejectReason } from './outcome.js';

export type ReceiptKind = 'dispatch' | 'resend' | 'lookup' | 'poll' | 'resolve' | 'recover';

/** One receipt per attempt, lookup or resolution: redacted (a request fingerprint, no bodies), hash-chained per operation. */
export interface Receipt extends ProviderRefs {
  readonly businessOperationId: BusinessOperationId;
  readonly seq: number;
  readonly runId: RunId;
  readonly attemptId: AttemptId;
  readonly provider: string;
  readonly operation: string;
  readonly kind: ReceiptKind;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly outcome: OutcomeKind | 'found' | 'not-found' | 'cannot-tell' | null;
  readonly decision: { readonly action: string; readonly reason: string; readonly delayMs?: number };
  readonly providerKey: ProviderKey | null;
  readonly message?: string;
  /** `conflict`: the key is stored with other params, so something was applied under it. */
  readonly rejectReason?: RejectReason;
  /** What a rejected attempt still created: a corrected request may not go out as a new one. */
  readonly created?: string;
  readonly fields?: readonly FieldError[];
  /** `sha256:` of the canonical, redacted request params. */
  readonly requestFingerprint: string;
  readonly prevHash: string | null;
  readonly hash: string;
}
