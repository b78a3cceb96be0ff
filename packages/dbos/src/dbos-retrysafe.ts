import { randomBytes } from 'node:crypto';
import { DBOS, type DBOSClient } from '@dbos-inc/dbos-sdk';
import {
  type AdapterV1,
  type BusinessOperationId,
  type HandoffPacket,
  InvalidStateError,
  type OperationRecord,
  sha256Hex,
  UnsafeResumeError,
} from '@retrysafe/contract';
import { isTerminal } from '@retrysafe/contract/ledger';
import {
  createRunner,
  type Resolution,
  type ResolveResult,
  type RunInput,
  type Runner,
  type RunnerOptions,
  type RunResult,
} from '@retrysafe/core';
import { createPostgresLedger, type PostgresLedger } from '@retrysafe/ledger-postgres';
import type pg from 'pg';
import { type DbosResolutionRefusal, DbosResolutionRefusedError } from './errors/dbos-resolution-refused-error.js';
import { DbosStepConfigurationError } from './errors/dbos-step-configuration-error.js';

/** The runner's options besides its ledger, and where the ledger lives. */
export interface DbosRetrysafeOptions
  extends Pick<RunnerOptions, 'policy' | 'redact' | 'handoff' | 'logger' | 'owner'> {
  /** The one PostgreSQL of DBOS's system database and the ledger (schema `ledgerSchema`). Either this or `pool`. */
  readonly databaseUrl?: string;
  /** One pool for both instead (`systemDatabasePool` for DBOS, `pool` for the ledger); you close it. */
  readonly pool?: pg.Pool;
  /** Schema of the ledger's tables (default `retrysafe`; DBOS keeps its own in `dbos`). */
  readonly ledgerSchema?: string;
  /** Pool size of the ledger's own pool (default 10; not used with `pool`). */
  readonly ledgerPoolSize?: number;
}

/** What a wrapped operation hands its workflow (DBOS checkpoints it): the runner's results without receipts, which
 * stay in the ledger; a handoff lifts the packet's reason, explanation and safe next actions out for the workflow. */
export type DbosOperationOutcome =
  | Omit<Extract<RunResult, { status: 'done' }>, 'receipts'>
  | Extract<RunResult, { status: 'in-progress' }>
  | (Pick<Extract<RunResult, { status: 'handed-off' }>, 'status' | 'businessOperationId' | 'packet'> &
      Pick<HandoffPacket, 'reason' | 'explanation' | 'safeNextActions'>)
  | Extract<ResolveResult, { status: 'resolved' }>;

/** What to run: the runner's input without its ids (the DBOS workflow and step give those); the business id is never a DBOS id. */
export type DbosRunInput = Pick<RunInput, 'params' | 'businessOperationId' | 'intent'>;

export interface DbosStepOptions {
  /** DBOS step name (default `retrysafe:<card operation>`). */
  readonly name?: string;
  /** Durable sleeps and re-runs (each a new step) while `in-progress` or after a `LeaseExpiredError` (default 20). */
  readonly inProgressRounds?: number;
}

export interface AwaitResolutionOptions {
  /** Then the outcome comes back still handed off (default 7 days), once decisions sent before are taken. */
  readonly timeoutSeconds?: number;
  /** How often the ledger is read for a resolution made elsewhere (default 60 s). */
  readonly pollSeconds?: number;
}

/** A person's decision, as sent to the waiting workflow. `handoffAt`: the `createdAt` of the packet decided on (default
 * the published one); the decision is refused once the operation has been resumed or handed off again since. */
export type DbosResolutionMessage = Resolution & { readonly by?: string; readonly handoffAt?: string | null };

export interface SendResolutionOptions {
  /** Wait up to this long for the workflow to take the decision: `applied`, or `DbosResolutionRefusedError` for one it
   * did not apply; `sent` when not taken yet (default 0: return once sent). Also how long, at least 5 s, a workflow
   * not waiting on the operation is given to begin a wait before the decision is refused (`not-waiting`). */
  readonly awaitSeconds?: number;
}

/** What the workflow answers a decision it took, under `answerEventKey` of the decision's id. */
type DbosResolutionAnswer = { readonly applied: true } | { readonly refused: DbosResolutionRefusal };

/** The workflow's latest wait on one operation (they are counted): `open` until it ends, then it takes what was sent
 * before and no more. */
type WaitState = { readonly wait: number; readonly open: boolean };

const RUN_ID = /^[A-Za-z0-9._:-]{1,96}$/;
const LEASE_EXPIRED = 'RETRYSAFE_LEASE_EXPIRED';

/** The DBOS message topic and event key of one handed-off operation's resolution and outcome. */
export const resolutionTopic = (businessOperationId: string): string => `retrysafe.resolution:${businessOperationId}`;
export const handoffEventKey = (businessOperationId: string): string => `retrysafe.handoff:${businessOperationId}`;
const decisionsEventKey = (businessOperationId: string): string => `retrysafe.decisions:${businessOperationId}`;
const answerEventKey = (decisionId: string): string => `retrysafe.answer:${decisionId}`;
const waitEventKey = (businessOperationId: string): string => `retrysafe.wait:${businessOperationId}`;
// Set when wait `wait` begins, and once it has taken every decision sent before it ended (one not answered by then
// never will be: a later wait refuses it).
const waitBeganKey = (businessOperationId: string, wait: number) => `retrysafe.began:${wait}:${businessOperationId}`;
const waitEndedKey = (businessOperationId: string, wait: number) => `retrysafe.ended:${wait}:${businessOperationId}`;
// How long, at least, a sender gives the workflow to begin its next wait (a loop that waits again), and to finish
// taking decisions in a wait that was ending as its decision arrived (taking one may call the provider); after
// that, the workflow is not running and takes the decision, if it arrived in time, when DBOS recovers it.
const NEXT_WAIT_SECONDS = 5;
const ENDING_WAIT_SECONDS = 60;

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
  resolution: DbosResolutionMessage,
  options: SendResolutionOptions = {},
): Promise<'applied' | 'sent'> {
  if (!isResolution(resolution))
    throw new TypeError(
      'resolution must be { action: "resume", force? } | { action: "mark-done", providerRef } | { action: "abandon" }',
    );
  const awaitSeconds = bound(options, 'awaitSeconds', 0);
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
    const taken = (await sender.getEvent<number>(workflowId, decisionsEventKey(businessOperationId), 0)) ?? 0;
    const decision = [businessOperationId, resolution.action, providerRef, force, handoffAt, taken, wait];
    const decisionId = sha256Hex(JSON.stringify(decision)).slice(0, 32);
    const message = { ...resolution, handoffAt, decisionId, wait };
    await sender.send(workflowId, message, resolutionTopic(businessOperationId), `retrysafe-resolution-${decisionId}`);
    const answer = await answerOf(sender, workflowId, businessOperationId, decisionId, wait, awaitSeconds);
    if (answer === 'ended') throw endedRefusal(workflowId, businessOperationId);
    // Its wait ended before taking it, and no other wait applies it: sent again, to the next wait, a few times (a
    // workflow whose waits all end before a decision reaches them would take it sent for ever).
    if (answer === NOT_WAITING || (answer && 'refused' in answer && answer.refused.code === NOT_WAITING)) {
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
  const state = await waitStateOf(sender, workflowId, id);
  if (state?.open) return state.wait;
  const next = (state?.wait ?? 0) + 1;
  const began = await sender.getEvent<true>(workflowId, waitBeganKey(id, next), Math.max(seconds, NEXT_WAIT_SECONDS));
  return began ? next : null;
}

const endedRefusal = (workflowId: string, id: string) =>
  new DbosResolutionRefusedError(id, {
    code: 'workflow-ended',
    message: `workflow ${workflowId} has ended, so nothing takes this decision: resolve the operation in the ledger (retrysafe ledger resolve)`,
  });

const NOT_WAITING = 'not-waiting';
const notWaitingRefusal = (workflowId: string, id: string) =>
  new DbosResolutionRefusedError(id, {
    code: NOT_WAITING,
    message: `workflow ${workflowId} is not waiting for a decision on it, so nothing was sent: send it again when it waits, or resolve the operation in the ledger (retrysafe ledger resolve)`,
  });

/** How many times one decision is sent to a workflow whose waits end before it arrives. */
const MAX_SENDS = 3;
const missedRefusal = (workflowId: string, id: string) =>
  new DbosResolutionRefusedError(id, {
    code: NOT_WAITING,
    message: `workflow ${workflowId} ended each of ${MAX_SENDS} waits before the decision sent to it arrived, so none applied it: send it again, or resolve the operation in the ledger (retrysafe ledger resolve)`,
  });

async function waitStateOf(sender: Pick<DBOSClient, 'getEvent'>, workflowId: string, id: string) {
  return sender.getEvent<WaitState>(workflowId, waitEventKey(id), 0);
}

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
  const key = answerEventKey(decisionId);
  const ended = await workflowEnded(sender, workflowId);
  const state = await waitStateOf(sender, workflowId, id);
  if (!ended && state && (state.wait !== wait || !state.open)) {
    // The wait was ending as the decision arrived: it may still take it, and answers it before it has ended.
    const waited = await sender.getEvent<true>(
      workflowId,
      waitEndedKey(id, wait),
      Math.max(seconds, ENDING_WAIT_SECONDS),
    );
    const answer = await sender.getEvent<DbosResolutionAnswer>(workflowId, key, 0);
    return answer ?? (waited ? NOT_WAITING : null);
  }
  const answer = await sender.getEvent<DbosResolutionAnswer>(workflowId, key, ended ? 0 : seconds);
  if (answer) return answer;
  if (ended) return 'ended';
  if (seconds === 0 || !(await workflowEnded(sender, workflowId))) return null;
  // It ended while we waited: had it taken the decision, its answer was written before it returned.
  return (await sender.getEvent<DbosResolutionAnswer>(workflowId, key, 0)) ?? 'ended';
}

/** SUCCESS or ERROR: DBOS never runs it again (a cancelled one can be resumed). Unknown without a status read. */
async function workflowEnded(sender: DbosResolutionSender, workflowId: string): Promise<boolean> {
  const status = sender.getWorkflowStatus
    ? await sender.getWorkflowStatus(workflowId)
    : await sender.getWorkflow?.(workflowId);
  return status?.status === 'SUCCESS' || status?.status === 'ERROR';
}

async function publishedHandoffAt(sender: Pick<DBOSClient, 'getEvent'>, workflowId: string, id: string) {
  const handoff = await sender.getEvent<{ packet?: { createdAt?: string } }>(workflowId, handoffEventKey(id), 0);
  return handoff?.packet?.createdAt ?? null;
}

/** The workflow id as the run id when the contract accepts it (DBOS's UUIDs are), else `dbos-wf-` and its hash. */
export function runIdForWorkflow(workflowId: string): string {
  return RUN_ID.test(workflowId) ? workflowId : `dbos-wf-${sha256Hex(workflowId).slice(0, 40)}`;
}

const RETRY_FIELDS = ['retriesAllowed', 'maxAttempts', 'intervalSeconds', 'backoffRate', 'shouldRetry'] as const;

function refuseEngineRetries(options: object = {}): void {
  const f = RETRY_FIELDS.find((field) => field in options);
  if (f)
    throw new DbosStepConfigurationError(
      'engine-retries',
      `DBOS step option ${f} is not accepted: the retrysafe runner is the one retrying layer, so DBOS step retries stay off`,
    );
  if ('timeoutMS' in options)
    throw new DbosStepConfigurationError(
      'engine-timeout',
      'DBOS step option timeoutMS is not accepted: a timed-out attempt keeps running; bound the provider call with the adapter timeout instead',
    );
  bound(options, 'inProgressRounds', 0);
}

/** A round count or a wait in seconds: a finite number ≥ 0, since NaN or Infinity would never end the loop it bounds. */
function bound(options: object | undefined, name: string, fallback: number): number {
  const value = (options as Record<string, unknown> | undefined)?.[name];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw new DbosStepConfigurationError('bad-option', `${name} must be a finite number ≥ 0, got ${String(value)}`);
  return value;
}

function isResolution(r: unknown): r is DbosResolutionMessage {
  const { action, providerRef } = (r ?? {}) as { action?: unknown; providerRef?: unknown };
  return (
    action === 'resume' ||
    action === 'abandon' ||
    (action === 'mark-done' && typeof providerRef === 'string' && providerRef !== '')
  );
}

function fromRunResult(r: RunResult | ResolveResult): DbosOperationOutcome {
  if (r.status === 'done') {
    const { receipts: _receipts, ...done } = r;
    return { ...done, result: r.result ?? null };
  }
  return r.status === 'handed-off' ? handedOff(r.businessOperationId, r.packet) : r;
}

function handedOff(businessOperationId: BusinessOperationId, packet: HandoffPacket): DbosOperationOutcome {
  const { reason, explanation, safeNextActions } = packet;
  return { status: 'handed-off', businessOperationId, reason, explanation, safeNextActions, packet };
}

/** A resolution made outside the workflow (CLI, another process), read back from the ledger; null while still open
 * or still handed off as `published`. */
function fromRecord(rec: OperationRecord, published: HandoffPacket): DbosOperationOutcome | null {
  const { businessOperationId, providerRef } = rec;
  // Handed off again since (a resume elsewhere, a recovery that could not drive it): the new hand-off is the outcome,
  // so it is published and a decision for it is not taken for one sent for the old packet.
  if (rec.state === 'handed-off' && rec.handoff && rec.handoff.createdAt !== published.createdAt)
    return handedOff(businessOperationId, rec.handoff);
  if (rec.state === 'abandoned' || (rec.state === 'succeeded' && rec.resolution?.action === 'mark-done'))
    return { status: 'resolved', businessOperationId, state: rec.state, providerRef };
  if (rec.state === 'succeeded') {
    const result = rec.result ?? null;
    return { status: 'done', businessOperationId, result, providerRef, adopted: true, attempts: rec.attemptCount };
  }
  return null; // still handed off, or being resumed by someone else
}

type Parts = { readonly runner: Runner; readonly ledger: PostgresLedger };

/** The DBOS ids of the code running now; refuses any context in which DBOS would retry it. */
function dbosIds(): { runId: string; inStep: boolean } {
  const workflowId = DBOS.workflowID;
  if (workflowId === undefined)
    throw new DbosStepConfigurationError(
      'not-in-workflow',
      'a wrapped operation runs inside a DBOS workflow (or one of its steps); outside one, call runner.run directly',
    );
  const inStep = DBOS.isInStep();
  const maxAttempts = inStep ? DBOS.stepStatus?.maxAttempts : undefined;
  if (maxAttempts !== undefined && maxAttempts > 1)
    throw new DbosStepConfigurationError(
      'engine-retries',
      `called inside a DBOS step that DBOS retries (maxAttempts ${maxAttempts}): register that step with retries off`,
    );
  return { runId: runIdForWorkflow(workflowId), inStep };
}

/** `body` as a DBOS step with retries off (or inside the current one). Attempt ids carry a tag new to each execution:
 * a step re-executed after a crash keeps its step id, and no two provider calls may share an attempt id. */
function asStep<T>(name: string, inStep: boolean, runId: string, body: (attemptIds: () => string) => Promise<T>) {
  const inner = () => {
    const prefix = `${runId}:s${DBOS.stepID ?? 0}.${randomBytes(4).toString('hex')}`;
    let n = 0;
    return body(() => `${prefix}.${++n}`);
  };
  return inStep ? inner() : DBOS.runStep(inner, { name, retriesAllowed: false });
}

async function runOperation(
  { runner }: Parts,
  adapter: AdapterV1,
  operation: string,
  input: DbosRunInput,
  stepOptions?: DbosStepOptions,
): Promise<DbosOperationOutcome> {
  refuseEngineRetries(stepOptions);
  const { runId, inStep } = dbosIds();
  const spec = Object.hasOwn(adapter?.operations ?? {}, operation) ? adapter.operations[operation] : undefined;
  const name = stepOptions?.name ?? `retrysafe:${spec?.card.operation ?? operation}`;
  const rounds = inStep ? 0 : bound(stepOptions, 'inProgressRounds', 20);
  for (let round = 0; ; round++) {
    let outcome: DbosOperationOutcome;
    try {
      outcome = await asStep(name, inStep, runId, async (attemptIds) => {
        const signal = DBOS.stepStatus?.cancelSignal;
        return fromRunResult(await runner.run(adapter, operation, { ...input, runId, attemptIds, signal }));
      });
    } catch (err) {
      // Stopped before sending (a pause ran the lease out): run again, as ending the workflow in ERROR loses it.
      // Read by its code: DBOS replays a step's error as a deserialised copy.
      if ((err as { code?: unknown } | null)?.code !== LEASE_EXPIRED || round >= rounds) throw err;
      await DBOS.sleep(50);
      continue;
    }
    if (outcome.status !== 'in-progress' || round >= rounds) return outcome;
    await DBOS.sleep(Math.min(Math.max(outcome.retryAfterMs, 50), 60_000));
  }
}

async function awaitResolution(
  parts: Parts,
  adapter: AdapterV1,
  outcome: DbosOperationOutcome,
  waitOptions: AwaitResolutionOptions = {},
): Promise<DbosOperationOutcome> {
  const pollSeconds = Math.max(1, bound(waitOptions, 'pollSeconds', 60));
  const timeoutSeconds = bound(waitOptions, 'timeoutSeconds', 7 * 86_400);
  if (outcome.status !== 'handed-off') return outcome;
  const { runId, inStep } = dbosIds();
  if (inStep)
    throw new DbosStepConfigurationError(
      'not-in-workflow',
      'awaitResolution waits with DBOS.recv, which runs in the workflow itself, not inside a step',
    );
  const id = outcome.businessOperationId;
  const workflowId = DBOS.workflowID!;
  await DBOS.setEvent(handoffEventKey(id), outcome);
  // Counted across waits on the same operation: a count that started again would fold a new decision into a taken one.
  let taken = (await DBOS.getEvent<number>(workflowId, decisionsEventKey(id), 0)) ?? 0;
  const wait = ((await DBOS.getEvent<WaitState>(workflowId, waitEventKey(id), 0))?.wait ?? 0) + 1;
  await DBOS.setEvent(waitEventKey(id), { wait, open: true });
  await DBOS.setEvent(waitBeganKey(id, wait), true);
  const deadline = (await DBOS.now()) + timeoutSeconds * 1000;
  let decided: DbosOperationOutcome | null = null; // what a decision (or one made in the ledger) came to
  let published = outcome.packet; // the hand-off a decision taken now answers
  let open = true;
  for (;;) {
    const left = deadline - (await DBOS.now());
    if (open && (left <= 0 || decided)) {
      // Closed before the last messages are taken: a decision sent while the wait was open is taken, never left
      // unread; one sent after goes to the next wait, or is refused to its sender (sendResolution).
      open = false;
      await DBOS.setEvent(waitEventKey(id), { wait, open });
    }
    const timeout = open ? Math.max(1, Math.min(pollSeconds, Math.ceil(left / 1000))) : 0;
    const message = await DBOS.recv<unknown>(resolutionTopic(id), timeout);
    if (!open && message === null) {
      await DBOS.setEvent(waitEndedKey(id, wait), true);
      return decided ?? outcome;
    }
    // Published before acting: the same decision sent from now on is not folded into this one (sendResolution).
    if (message !== null) await DBOS.setEvent(decisionsEventKey(id), ++taken);
    const { decisionId, wait: sentTo } = (message ?? {}) as { decisionId?: unknown; wait?: unknown };
    // Sent to an earlier wait that ended before it arrived: never applied, as its sender sends it again to this one.
    const { next, answer }: Decided =
      typeof sentTo === 'number' && sentTo !== wait
        ? {
            next: null,
            answer: { refused: { code: NOT_WAITING, message: 'it arrived after the wait it was sent to had ended' } },
          }
        : await asStep(`retrysafe:resolve:${outcome.packet.operation}`, false, runId, (attemptIds) =>
            decide(parts, adapter, id, message, published, { runId, attemptIds }),
          );
    if (answer && typeof decisionId === 'string') await DBOS.setEvent(answerEventKey(decisionId), answer);
    if (next === null || next.status === 'in-progress') continue;
    await DBOS.setEvent(handoffEventKey(id), next);
    decided = next;
    if (next.status === 'handed-off') published = next.packet;
  }
}

type Decided = { next: DbosOperationOutcome | null; answer: DbosResolutionAnswer | null };

/** In the resolve step: the decision received (or none, a poll) applied through the runner, then the ledger read. The
 * outcome to return (null: wait on) and, for a decision, the answer its sender may wait for. */
async function decide(
  { runner, ledger }: Parts,
  adapter: AdapterV1,
  id: BusinessOperationId,
  message: unknown,
  published: HandoffPacket,
  run: { runId: string; attemptIds: () => string },
): Promise<Decided> {
  let answer: DbosResolutionAnswer | null = null;
  if (isResolution(message)) {
    const by = typeof message.by === 'string' ? message.by : undefined;
    const handoffAt = typeof message.handoffAt === 'string' ? message.handoffAt : undefined;
    try {
      const r = await runner.resolve(id, message, { adapters: [adapter], ...run, by, handoffAt });
      if (r.status !== 'in-progress') return { next: fromRunResult(r), answer: { applied: true } };
      answer = { refused: { code: 'in-progress', message: 'another worker was resuming it: nothing applied' } };
    } catch (err) {
      // Not applied (not safe, handed off again since, or no longer handed off): its sender is told, and the ledger
      // says what the workflow waits on now.
      if (!UnsafeResumeError.isInstance(err) && !InvalidStateError.isInstance(err)) throw err;
      const refused = { refused: { code: err.code, message: err.message } };
      answer = (await appliedBeforeCrash(ledger, id, run.runId)) ? { applied: true } : refused;
    }
  }
  const rec = await ledger.get(id);
  if (!rec || isTerminal(rec)) return { next: rec ? fromRecord(rec, published) : null, answer };
  // Open: a resume under way, or one whose worker died (this step's own execution before a crash). Driven as
  // stored (its id and intent, which its params need not name) once a dead holder's lease has run out.
  const [report] = await runner.recover({ adapters: [adapter], businessOperationId: id, ...run });
  return { next: report?.result ? fromRunResult(report.result) : null, answer };
}

/** Whether this step's own execution before a crash applied the decision (its resolve receipt carries this step's id
 * in its attempt id): then the operation is no longer as it was, because of this very decision. */
async function appliedBeforeCrash(ledger: PostgresLedger, id: BusinessOperationId, runId: string): Promise<boolean> {
  const step = `${runId}:s${DBOS.stepID ?? 0}.`;
  return (await ledger.receipts(id)).some((r) => r.kind === 'resolve' && r.attemptId.startsWith(step));
}

/** retrysafe inside DBOS: operations as DBOS steps with DBOS's retries off, ledger on DBOS's PostgreSQL. The ledger
 * commits before DBOS checkpoints the step, so a step re-executed after a crash is decided from the ledger. */
export function createDbosRetrysafe(options: DbosRetrysafeOptions) {
  if (!options.databaseUrl && !options.pool)
    throw new TypeError(
      'createDbosRetrysafe needs { databaseUrl } (or { pool }): one PostgreSQL for DBOS and the ledger',
    );
  const { databaseUrl, pool, ledgerSchema, ledgerPoolSize, ...runnerOptions } = options;
  const ledger = createPostgresLedger({
    ...(pool ? { pool } : { connectionString: databaseUrl!, poolSize: ledgerPoolSize ?? 10 }),
    schema: ledgerSchema ?? 'retrysafe',
  });
  const parts: Parts = { ledger, runner: createRunner({ ...runnerOptions, ledger }) };
  return {
    ...parts,
    /** Spread into `DBOS.setConfig`. */
    dbosConfig: () => (pool ? { systemDatabasePool: pool } : { systemDatabaseUrl: databaseUrl! }),
    /** Inside a workflow: the operation as one DBOS step; a handoff is returned, never thrown. */
    run: (adapter: AdapterV1, operation: string, input: DbosRunInput, stepOptions?: DbosStepOptions) =>
      runOperation(parts, adapter, operation, input, stepOptions),
    /** `run` bound to one operation, for use as a workflow's step function. */
    step: (adapter: AdapterV1, operation: string, stepOptions?: DbosStepOptions) => {
      refuseEngineRetries(stepOptions);
      return (input: DbosRunInput) => runOperation(parts, adapter, operation, input, stepOptions);
    },
    /** After a `handed-off` outcome: publishes it (`handoffEventKey`), then waits durably for `sendResolution`'s
     * decision or one made in the ledger. Other outcomes come back unchanged. */
    awaitResolution: (adapter: AdapterV1, outcome: DbosOperationOutcome, waitOptions?: AwaitResolutionOptions) =>
      awaitResolution(parts, adapter, outcome, waitOptions),
    close: () => ledger.close(),
  };
}

export type DbosRetrysafe = ReturnType<typeof createDbosRetrysafe>;
