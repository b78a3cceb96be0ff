// What passes between a person's decision (sendResolution) and the workflow that waits for it (awaitResolution):
// the DBOS topic and events both read, the message, and the bounds both check.
import type { Resolution } from '@retrysafe/core';
import type { DbosResolutionRefusal } from './errors/dbos-resolution-refused-error.js';
import { DbosStepConfigurationError } from './errors/dbos-step-configuration-error.js';

/** A person's decision, as sent to the waiting workflow. `handoffAt`: the `createdAt` of the packet decided on (default
 * the published one); the decision is refused once the operation has been resumed or handed off again since. */
export type DbosResolutionMessage = Resolution & { readonly by?: string; readonly handoffAt?: string | null };

/** What the workflow answers a decision it took, under `answerEventKey` of the decision's id. */
export type DbosResolutionAnswer = { readonly applied: true } | { readonly refused: DbosResolutionRefusal };

/** The workflow's latest wait on one operation (they are counted): `open` until it ends, then it takes what was sent
 * before and no more. */
export type WaitState = { readonly wait: number; readonly open: boolean };

/** The DBOS message topic and event key of one handed-off operation's resolution and outcome. */
export const resolutionTopic = (businessOperationId: string): string => `retrysafe.resolution:${businessOperationId}`;
export const handoffEventKey = (businessOperationId: string): string => `retrysafe.handoff:${businessOperationId}`;
export const decisionsEventKey = (businessOperationId: string): string => `retrysafe.decisions:${businessOperationId}`;
export const answerEventKey = (decisionId: string): string => `retrysafe.answer:${decisionId}`;
export const waitEventKey = (businessOperationId: string): string => `retrysafe.wait:${businessOperationId}`;
// Set when wait `wait` begins, and once it has taken every decision sent before it ended (one not answered by then
// never will be: a later wait refuses it).
export const waitBeganKey = (businessOperationId: string, wait: number) =>
  `retrysafe.began:${wait}:${businessOperationId}`;
export const waitEndedKey = (businessOperationId: string, wait: number) =>
  `retrysafe.ended:${wait}:${businessOperationId}`;

export const NOT_WAITING = 'not-waiting';

/** A round count or a wait in seconds: a finite number ≥ 0, since NaN or Infinity would never end the loop it bounds. */
export function bound(options: object | undefined, name: string, fallback: number): number {
  const value = (options as Record<string, unknown> | undefined)?.[name];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw new DbosStepConfigurationError('bad-option', `${name} must be a finite number ≥ 0, got ${String(value)}`);
  return value;
}

export function isResolution(r: unknown): r is DbosResolutionMessage {
  const { action, providerRef } = (r ?? {}) as { action?: unknown; providerRef?: unknown };
  return (
    action === 'resume' ||
    action === 'abandon' ||
    (action === 'mark-done' && typeof providerRef === 'string' && providerRef !== '')
  );
}
