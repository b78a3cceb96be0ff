import type { PolicyOverrides, RecoverReport } from '@retrysafe/core';

/** Where the crash drill kills the worker (SIGKILL). */
export const CRASH_POINTS = [
  'after-claim',
  'after-dispatched',
  'after-provider-committed',
  'after-result-recorded',
] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

/** Passed to the child in the RETRYSAFE_CRASH_WORKER environment variable (JSON). */
export interface CrashWorkerConfig {
  readonly mode: 'run' | 'recover';
  /** Absolute path of an ESM module exporting `createAdapter({ baseUrl, timeoutMs, options })`. */
  readonly adapterModule: string;
  readonly adapterOptions?: unknown;
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly ledgerPath: string;
  readonly operation: string;
  /** mode `run`: every job runs concurrently (distinct business operations) and stops at its own point. */
  readonly jobs: readonly {
    readonly index: number;
    readonly params: unknown;
    readonly businessOperationId: string;
    readonly point: CrashPoint | null;
  }[];
  readonly leaseMs: number;
  /** Added to the recovering process's clock so the dead workers' leases have expired. */
  readonly clockSkewMs?: number;
  readonly policy?: PolicyOverrides;
}

export type CrashWorkerMessage =
  | { readonly type: 'at'; readonly index: number; readonly point: CrashPoint; readonly businessOperationId: string }
  | { readonly type: 'finished'; readonly index: number; readonly status: string; readonly businessOperationId: string }
  | {
      readonly type: 'recovered';
      readonly reports: readonly Pick<RecoverReport, 'businessOperationId' | 'from' | 'to' | 'action'>[];
      readonly results: readonly {
        readonly index: number;
        readonly businessOperationId: string;
        readonly status: string;
        readonly adopted: boolean;
        readonly providerKey: string | null;
      }[];
    }
  | { readonly type: 'error'; readonly message: string };
