import type { DBOS, DBOSClient } from '@dbos-inc/dbos-sdk';
import { sha256Hex } from '@retrysafe/contract';
import { DbosResolutionRefusedError } from './errors/dbos-resolution-refused-error.js';
// The topic, events and message shared with the waiting workflow (awaitResolution).
import * as wire from './resolution-protocol.js';

export interface SendResolutionOptions {
  /** Wait up to this long for the workflow to take the decision: `applied`, or `DbosResolutionRefusedError` for one it
   * did not apply; `sent` when not taken yet (default 0: return once sent). Also how long, at least 5 s, a workflow
   * not waiting on the operation is given to begin a wait before the decision is refused (`not-waiting`). */
  readonly awaitSeconds?: number;
}

// How long, at least, a sender gives the workflow to begin its next wait (a loop that waits again), and to finish
// taking decisions in a wait that was ending as its decision arrived (taking one may call the provider); after
// that, the workflow is not running and takes the decision, if it arrived in time, when DBOS recovers it.
const NEXT_WAIT_SECONDS = 5;
const ENDING_WAIT_SECONDS = 60;
// A DBOSClient hears of no event: it reads the database again after its polling interval, 10 s unless asked, so a
// person would learn that long after the workflow took the decision that it did.
const POLLING_INTERVAL_MS = 250;

/** An event of the workflow, waited for up to `seconds` (0: read once). */
const eventOf = <T>(sender: Pick<DBOSClient, 'getEvent'>, workflowId: string, key: string, seconds: number) =>
  sender.getEvent<T>(workflowId, key, { timeoutSeconds: seconds, pollingIntervalMs: POLLING_INTERVAL_MS });

/** Who sends a decision: `DBOS` inside the app, a `DBOSClient` outside it. With a workflow status read (both have one),
 * a decision sent to a workflow that has ended is refused instead of left unread. */
export type DbosResolutionSender = Pick<DBOSClient, 'send' | 'getEvent'> &
  Partial<Pick<DBOSClient, 'getWorkflow'> & Pick<typeof DBOS, 'getWorkflowStatus'>>;

/** Delivers a person's decision to an open wait of `awaitResolution` (none open: refused, nothing sent); a repeat for
 * the same hand-off, sent before the workflow took the first, carries the same DBOS idempotency key. */
export async function sendResolution(
  sender: DbosResolutionSender,
  workflowId: string,
  businessOperationId: string,
  resolution: wire.DbosResolutionMessage,
  options: SendResolutionOptions = {},
): Promise<'applied' | 'sent'> {
  if (!wire.isResolution(resolution))
    throw new TypeError(
      'resolution must be { action: "resume", force? } | { action: "mark-done", providerRef } | { action: "abandon" }',
    );
  const awaitSeconds = wire.bound(options, 'awaitSeconds', 0);
  const providerRef = 'providerRef' in resolution ? resolution.providerRef : null;
  // A forced resume is another decision than the refused unforced one before it: it must not be folded into it.
  const force = 'force' in resolution && resolution.force === true;
  // The same decision for a later hand-off of the operation is another decision: the hand-off published now names
  // which (what the person read), never one published while it is on its way.
  let handoffAt = resolution.handoffAt ?? (await publishedHandoffAt(sender, workflowId, businessOperationId));
  for (let sends = 1; ; sends++) {
    if (await workflowEnded(sender, workflowId)) throw endedRefusal(workflowId, businessOperationId);
    // Sent only to a wait that is open: one that has ended takes no decision, and nothing may lie unread for a wait
    // that never comes (the workflow runs on, or never waits on this operation).
    const wait = await waitToSendTo(sender, workflowId, businessOperationId, awaitSeconds);
    if (wait === null) throw notWaitingRefusal(workflowId, businessOperationId);
    // None published yet: the one the first wait publishes before it begins.
    handoffAt ??= await publishedHandoffAt(sender, workflowId, businessOperationId);
    // Once the workflow took a decision, the same one sent again is a new message: that one may have found the
    // operation busy elsewhere, and a hand-off made elsewhere is published only at the workflow's next poll.
    const taken = (await eventOf<number>(sender, workflowId, wire.decisionsEventKey(businessOperationId), 0)) ?? 0;
    const decision = [businessOperationId, resolution.action, providerRef, force, handoffAt, taken, wait];
    const decisionId = sha256Hex(JSON.stringify(decision)).slice(0, 32);
    const message = { ...resolution, handoffAt, decisionId, wait };
    await sender.send(
      workflowId,
      message,
      wire.resolutionTopic(businessOperationId),
      `retrysafe-resolution-${decisionId}`,
    );
    const answer = await answerOf(sender, workflowId, businessOperationId, decisionId, wait, awaitSeconds);
    if (answer === 'ended') throw endedRefusal(workflowId, businessOperationId);
    // Its wait ended before taking it, and no other wait applies it: sent again, to the next wait, a few times (a
    // workflow whose waits all end before a decision reaches them would take it sent for ever).
    if (answer === wire.NOT_WAITING || (answer && 'refused' in answer && answer.refused.code === wire.NOT_WAITING)) {
      if (sends < MAX_SENDS) continue;
      throw missedRefusal(workflowId, businessOperationId);
    }
    if (answer && 'refused' in answer) throw new DbosResolutionRefusedError(businessOperationId, answer.refused);
    return answer ? 'applied' : 'sent';
  }
}

/** The wait a decision is sent to: the open one, or the next once it has begun; null when none begins within
 * `seconds` (at least `NEXT_WAIT_SECONDS`). */
async function waitToSendTo(sender: Pick<DBOSClient, 'getEvent'>, workflowId: string, id: string, seconds: number) {
  const state = await eventOf<wire.WaitState>(sender, workflowId, wire.waitEventKey(id), 0);
  if (state?.open) return state.wait;
  const next = (state?.wait ?? 0) + 1;
  const began = await eventOf<true>(
    sender,
    workflowId,
    wire.waitBeganKey(id, next),
    Math.max(seconds, NEXT_WAIT_SECONDS),
  );
  return began ? next : null;
}

const endedRefusal = (workflowId: string, id: string) =>
  new DbosResolutionRefusedError(id, {
    code: 'workflow-ended',
    message: `workflow ${workflowId} has ended, so nothing takes this decision: resolve the operation in the ledger (retrysafe ledger resolve)`,
  });

const notWaitingRefusal = (workflowId: string, id: string) =>
  new DbosResolutionRefusedError(id, {
    code: wire.NOT_WAITING,
    message: `workflow ${workflowId} is not waiting for a decision on it, so nothing was sent: send it again when it waits, or resolve the operation in the ledger (retrysafe ledger resolve)`,
  });

/** How many times one decision is sent to a workflow whose waits end before it arrives. */
const MAX_SENDS = 3;
const missedRefusal = (workflowId: string, id: string) =>
  new DbosResolutionRefusedError(id, {
    code: wire.NOT_WAITING,
    message: `workflow ${workflowId} ended each of ${MAX_SENDS} waits before the decision sent to it arrived, so none applied it: send it again, or resolve the operation in the ledger (retrysafe ledger resolve)`,
  });

/** The workflow's answer to a decision sent to wait `wait`, waited for up to `seconds`; `ended` when the workflow
 * ended without taking it (a message to an ended workflow lies unread in DBOS, a decision lost without a word);
 * `not-waiting` when that wait ended without taking it (no later wait takes a decision sent to another). */
async function answerOf(
  sender: DbosResolutionSender,
  workflowId: string,
  id: string,
  decisionId: string,
  wait: number,
  seconds: number,
) {
  const key = wire.answerEventKey(decisionId);
  const ended = await workflowEnded(sender, workflowId);
  const state = await eventOf<wire.WaitState>(sender, workflowId, wire.waitEventKey(id), 0);
  if (!ended && state && (state.wait !== wait || !state.open)) {
    // The wait was ending as the decision arrived: it may still take it, and answers it before it has ended.
    const waited = await eventOf<true>(
      sender,
      workflowId,
      wire.waitEndedKey(id, wait),
      Math.max(seconds, ENDING_WAIT_SECONDS),
    );
    const answer = await eventOf<wire.DbosResolutionAnswer>(sender, workflowId, key, 0);
    return answer ?? (waited ? wire.NOT_WAITING : null);
  }
  const answer = await eventOf<wire.DbosResolutionAnswer>(sender, workflowId, key, ended ? 0 : seconds);
  if (answer) return answer;
  if (ended) return 'ended';
  if (seconds === 0 || !(await workflowEnded(sender, workflowId))) return null;
  // It ended while we waited: had it taken the decision, its answer was written before it returned.
  return (await eventOf<wire.DbosResolutionAnswer>(sender, workflowId, key, 0)) ?? 'ended';
}

/** SUCCESS or ERROR: DBOS never runs it again (a cancelled one can be resumed). Unknown without a status read. */
async function workflowEnded(sender: DbosResolutionSender, workflowId: string): Promise<boolean> {
  const status = sender.getWorkflowStatus
    ? await sender.getWorkflowStatus(workflowId)
    : await sender.getWorkflow?.(workflowId);
  return status?.status === 'SUCCESS' || status?.status === 'ERROR';
}

async function publishedHandoffAt(sender: Pick<DBOSClient, 'getEvent'>, workflowId: string, id: string) {
  const handoff = await eventOf<{ packet?: { createdAt?: string } }>(sender, workflowId, wire.handoffEventKey(id), 0);
  return handoff?.packet?.createdAt ?? null;
}
