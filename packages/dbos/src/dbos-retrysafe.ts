import { randomBytes } from 'node:crypto';
import { DBOS } from '@dbos-inc/dbos-sdk';
import {
  type AdapterV1,
  type BusinessOperationId,
  type HandoffPacket,
  InvalidStateError,
  type OperationRecord,
  type OperationSpec,
  sha256Hex,
  UnsafeResumeError,
} from '@retrysafe/contract';
import { isTerminal } from '@retrysafe/contract/ledger';
import {
  createRunner,
  type ResolveResult,
  type RunInput,
  type Runner,
  type RunnerOptions,
  type RunResult,
} from '@retrysafe/core';
import { createRedactor } from '@retrysafe/core/internal';
import { createPostgresLedger, type PostgresLedger } from '@retrysafe/ledger-postgres';
import type pg from 'pg';
import { DbosStepConfigurationError } from './errors/dbos-step-configuration-error.js';
import {
  answerEventKey,
  bound,
  type DbosResolutionAnswer,
  decisionsEventKey,
  handoffEventKey,
  isResolution,
  NOT_WAITING,
  resolutionTopic,
  type WaitState,
  waitBeganKey,
  waitEndedKey,
  waitEventKey,
} from './resolution-protocol.js';

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

/** The workflow id as the run id when the contract accepts it (DBOS's UUIDs are), else `dbos-wf-` and its hash. */
export function runIdForWorkflow(workflowId: string): string {
  return /^[A-Za-z0-9._:-]{1,96}$/.test(workflowId) ? workflowId : `dbos-wf-${sha256Hex(workflowId).slice(0, 40)}`;
}

const RETRY_FIELDS = ['retriesAllowed', 'maxAttempts', 'intervalSeconds', 'backoffRate', 'shouldRetry'];

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

type Parts = { readonly runner: Runner; readonly ledger: PostgresLedger; readonly redact: RunnerOptions['redact'] };
type Redactor = ReturnType<typeof createRedactor>;

/** Redacts as the runner redacts receipts: its options, the operation's sensitive fields and the values they hold. */
function redactorFor({ redact }: Parts, spec: OperationSpec | undefined, params?: unknown): Redactor {
  try {
    return createRedactor(redact, spec?.sensitiveFields).withValuesFrom(params);
  } catch {
    return createRedactor(redact); // sensitive fields the runner refuses
  }
}

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
function asStep<T>(
  name: string,
  inStep: boolean,
  runId: string,
  redactor: () => Redactor,
  body: (attemptIds: () => string) => Promise<T>,
) {
  const inner = () => {
    const prefix = `${runId}:s${DBOS.stepID ?? 0}.${randomBytes(4).toString('hex')}`;
    let n = 0;
    // Redacted whole before DBOS stores it (message, stack, cause, every field), logs it or puts it on a span.
    return body(() => `${prefix}.${++n}`).catch((err) => Promise.reject(redactor().params(err)));
  };
  return inStep ? inner() : DBOS.runStep(inner, { name, retriesAllowed: false });
}

async function runOperation(
  parts: Parts,
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
  const redactor = () => redactorFor(parts, spec, input.params);
  for (let round = 0; ; round++) {
    let outcome: DbosOperationOutcome;
    try {
      outcome = await asStep(name, inStep, runId, redactor, async (attemptIds) => {
        // A round after in-progress has not seen the end the worker that held it left (a hand-off for the user's step,
        // say): a follow-up answers it, where a new call could send it again.
        const signal = DBOS.stepStatus?.cancelSignal;
        const followUp = round > 0;
        return fromRunResult(
          await parts.runner.run(adapter, operation, { ...input, runId, attemptIds, signal, followUp }),
        );
      });
    } catch (err) {
      // Stopped before sending (a pause ran the lease out): run again, as ending the workflow in ERROR loses it.
      // Read by its code: DBOS replays a step's error as a deserialised copy.
      if ((err as { code?: unknown } | null)?.code !== 'RETRYSAFE_LEASE_EXPIRED' || round >= rounds) throw err;
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
  const redactor = () => redactorFor(parts, adapter.operations[outcome.packet.operation]);
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
        : await asStep(`retrysafe:resolve:${outcome.packet.operation}`, false, runId, redactor, (attemptIds) =>
            decide(parts, adapter, id, message, published, { runId, attemptIds }, redactor),
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
  redactor: () => Redactor,
): Promise<Decided> {
  let answer: DbosResolutionAnswer | null = null;
  if (isResolution(message)) {
    const by = typeof message.by === 'string' ? message.by : undefined;
    // Unnamed (a message sent to the topic without sendResolution): the published hand-off, as the message type says;
    // unbound, it would be applied to a later hand-off nobody read (a forced resume forced past it).
    const handoffAt = typeof message.handoffAt === 'string' ? message.handoffAt : published.createdAt;
    try {
      const r = await runner.resolve(id, message, { adapters: [adapter], ...run, by, handoffAt });
      if (r.status !== 'in-progress') return { next: fromRunResult(r), answer: { applied: true } };
      answer = { refused: { code: 'in-progress', message: 'another worker was resuming it: nothing applied' } };
    } catch (err) {
      // Not applied (not safe, handed off again since, or no longer handed off): its sender is told, and the ledger
      // says what the workflow waits on now.
      if (!UnsafeResumeError.isInstance(err) && !InvalidStateError.isInstance(err)) throw err;
      const refused = { refused: { code: err.code, message: redactor().text(err.message) } };
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
  const parts: Parts = { ledger, runner: createRunner({ ...runnerOptions, ledger }), redact: runnerOptions.redact };
  return {
    ledger,
    runner: parts.runner,
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
