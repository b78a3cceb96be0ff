import type { CallScript } from '@retrysafe/sandbox-kit';
import type { SandboxUser } from './msgraph-directory.js';

export type SandboxKind =
  | 'mail.send'
  | 'events.create'
  | 'todo.tasks.create'
  | 'mail.lookup'
  | 'events.lookup'
  | 'todo.tasks.lookup';

/** One scripted answer for one request. */
export type SandboxFault =
  | 'pass'
  /** Answer with this status and a Graph error body. `commit: true` applies the effect first (Graph has delivered mail with a 503/504); default false (throttled before processing). */
  | {
      readonly kind: 'status';
      readonly status: number;
      readonly retryAfterS?: number;
      readonly code?: string;
      readonly commit?: boolean;
    }
  /** sendMail only: a normal 202 that also carries Retry-After (reported to have led clients into resending). */
  | { readonly kind: 'accepted-with-retry-after'; readonly retryAfterS: number };

/** An array (one entry per call; calls past its end pass) or a function of the 1-based call number. */
export type FaultScript = CallScript<SandboxFault>;

export type DuplicateTransactionBehaviour =
  /** Documented intent: no second event; the sandbox answers 201 with the existing event. */
  | 'return-existing'
  /** No second event; answers 409 ErrorDuplicateTransactionId. */
  | 'conflict'
  /** Ignores transactionId: a second event (what a client must survive if the intent does not hold). */
  | 'create-new';

export interface MsGraphSandboxOptions {
  readonly port?: number;
  /** How long after sendMail the message becomes visible in Sent Items (default 0). */
  readonly sentItemsDelayMs?: number;
  /** When set, requests without `Authorization: Bearer <accessToken>` get 401 InvalidAuthenticationToken. */
  readonly accessToken?: string;
  /** To Do list ids that exist (default ['tasks']); other lists answer 404. */
  readonly todoLists?: readonly string[];
  /** Users that exist for /users/{id} (default: every user exists). */
  readonly users?: readonly string[];
  /** Who `/me` is (default SANDBOX_SIGNED_IN_USER); null: an app-only token, whose `/me` Graph refuses with 400. */
  readonly signedInUser?: SandboxUser | null;
  readonly duplicateTransactionId?: DuplicateTransactionBehaviour;
  readonly faults?: Partial<Record<SandboxKind, FaultScript>>;
  /** Clock (default Date.now); `advance(ms)` adds to it. */
  readonly now?: () => number;
  /** Server-side page size of a lookup (default: $top alone): a shorter page with `@odata.nextLink`, as Graph may send. */
  readonly pageSize?: number;
}

export interface SandboxMessage {
  readonly kind: 'mail.send';
  readonly id: string;
  readonly mailbox: string;
  /** The user's object id the mailbox named when the request arrived (a UPN given to another user since moves it not). */
  readonly user: string;
  readonly internetMessageId: string;
  readonly subject: string | null;
  readonly toRecipients: readonly string[];
  readonly extendedProperties: readonly { id: string; value: string }[];
  readonly sentAt: number;
  readonly visibleAt: number;
}
export interface SandboxEvent {
  readonly kind: 'events.create';
  readonly id: string;
  readonly mailbox: string;
  /** The user's object id the mailbox named when the request arrived (a UPN given to another user since moves it not). */
  readonly user: string;
  readonly iCalUId: string;
  readonly transactionId: string | null;
  readonly subject: string;
  readonly start: unknown;
  readonly end: unknown;
  readonly extendedProperties: readonly { id: string; value: string }[];
  readonly createdAt: number;
}
export interface SandboxTask {
  readonly kind: 'todo.tasks.create';
  readonly id: string;
  readonly mailbox: string;
  /** The user's object id the mailbox named when the request arrived (a UPN given to another user since moves it not). */
  readonly user: string;
  readonly listId: string;
  readonly title: string;
  readonly linkedResources: readonly { applicationName?: string; displayName?: string; externalId?: string }[];
  readonly createdAt: number;
}
export type SandboxRecord = SandboxMessage | SandboxEvent | SandboxTask;

export interface SandboxRequest {
  readonly n: number;
  readonly kind: SandboxKind | 'other';
  readonly method: string;
  readonly path: string;
  /** The raw query string (`?$filter=…`), '' when none. */
  readonly query: string;
  /** The n-th call of this kind (1-based). */
  readonly call: number;
  readonly fault: string;
  readonly status: number | null;
  readonly retryAttempt: string | null;
}

export interface MsGraphSandbox {
  /** Graph root for the client's baseUrl, e.g. `http://127.0.0.1:PORT/`. */
  readonly url: string;
  /** Records held: delivered messages (visible or not), events, tasks. Lookup kinds count 0. */
  count(kind: SandboxKind | string): number;
  /** Requests received of a kind (POSTs for creates, GETs for lookups). */
  requestCount(kind: SandboxKind): number;
  requests(): readonly SandboxRequest[];
  records(): readonly SandboxRecord[];
  /** The object id the sandbox's directory gives a mailbox spelling (a UPN in any case, an id). */
  userId(spelling: string): string;
  /** Gives a UPN to the user `id` (one user left, another took the name): its spellings resolve to `id` from now on. */
  assignUser(userPrincipalName: string, id: string): void;
  /** A message, event or task deleted (Graph's DELETE on it, by its owner): it leaves every list. */
  deleteRecord(id: string): boolean;
  /** Messages visible in Sent Items now. */
  visibleSentItems(mailbox?: string): readonly SandboxMessage[];
  setFaults(kind: SandboxKind, script: FaultScript | undefined): void;
  setSentItemsDelay(ms: number): void;
  /** Moves the sandbox clock forward (Sent Items delay). */
  advance(ms: number): void;
  /** Forgets every event transactionId, as if it aged past a retention Graph does not document: a resend then creates a second event. */
  expireKeys(): void;
  close(): Promise<void>;
}
