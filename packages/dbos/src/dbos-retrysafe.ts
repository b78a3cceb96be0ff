import { createHash, randomBytes } from 'node:crypto';
import { DBOS, type DBOSClient } from '@dbos-inc/dbos-sdk';
import {
  type AdapterV1,
  type HandoffPacket,
  InvalidStateError,
  type OperationRecord,
  UnsafeResumeError,
} from '@retrysafe/contract';
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
import { DbosStepConfigurationError } from './errors/dbos-step-configuration-error.js';

/** The runner's options besides its ledger (unset policy fields come from each operation's card), and where the ledger lives. */
export interface DbosRetrysafeOptions
  extends Pick<RunnerOptions, 'policy' | 'redact' | 'handoff' | 'logger' | 'owner'> {
  /**
   * The one PostgreSQL both sides use: DBOS's system database (`systemDatabaseUrl`) and the retrysafe
   * ledger (schema `ledgerSchema`). Either this or `pool`.
   */
  readonly databaseUrl?: string;
  /** One pool for both instead (`systemDatabasePool` for DBOS, `pool` for the ledger); you close it. */
  readonly pool?: pg.Pool;
  /** Schema of the ledger's tables (default `retrysafe`; DBOS keeps its own in `dbos`). */
  readonly ledgerSchema?: string;
  /** Pool size of the ledger's own pool (default 10; not used with `pool`). */
  readonly ledgerPoolSize?: number;
}

/**
 * What a wrapped operation hands its workflow: a plain JSON value, checkpointed by DBOS as the step's output.
 * Each branch is derived from the runner's own result types, so a field the runner adds or renames reaches it.
 */
export type DbosOperationOutcome =
  /** The runner's `done`, without its receipts (they stay in the ledger). `adopted` also covers the execution DBOS lost in a crash. */
  | Omit<Extract<RunResult, { status: 'done' }>, 'receipts'>
  | Extract<RunResult, { status: 'in-progress' }>
  /** The runner's `handed-off` without receipts, with the packet's reason, explanation and safe next actions lifted out for the workflow. */
  | (Pick<Extract<RunResult, { status: 'handed-off' }>, 'status' | 'businessOperationId' | 'packet'> &
      Pick<HandoffPacket, 'reason' | 'explanation' | 'safeNextActions'>)
  /** A person resolved a handed-off operation without a new send: marked done with a provider reference, or abandoned. */
  | Extract<ResolveResult, { status: 'resolved' }>;

/** What to run: the runner's input without its ids (the DBOS workflow and step give those); the business id is never a DBOS id. */
export type DbosRunInput = Pick<RunInput, 'params' | 'businessOperationId' | 'intent'>;

export interface DbosStepOptions {
  /** DBOS step name (default `retrysafe:<card operation>`). */
  readonly name?: string;
  /**
   * While another worker holds the operation (`in-progress`), or after the runner stopped before sending
   * because its lease ran out in a pause (`LeaseExpiredError`), sleep durably (`DBOS.sleep`) and run again,
   * up to this many times (default 20); each round is a new DBOS step. 0 returns `in-progress` (or throws) at once.
   */
  readonly inProgressRounds?: number;
}

export interface AwaitResolutionOptions {
  /** Give up waiting after this long and return the outcome still handed off (default 7 days). */
  readonly timeoutSeconds?: number;
  /** How often to look at the ledger for a resolution made elsewhere, e.g. `retrysafe ledger resolve` (default 60 s). */
  readonly pollSeconds?: number;
}

/** Anything that can send a DBOS workflow message: `DBOS` itself, or a `DBOSClient`. */
export type DbosMessageSender = Pick<DBOSClient, 'send'>;

/** A person's decision, as sent to the waiting workflow. */
export type DbosResolutionMessage = Resolution & { readonly by?: string };

const RUN_ID = /^[A-Za-z0-9._:-]{1,96}$/;
/** LeaseExpiredError's code. */
const LEASE_EXPIRED = 'RETRYSAFE_LEASE_EXPIRED';
const hash = (s: string) => createHash('sha256').update(s).digest('hex');

/** The DBOS message topic a workflow waits on for the resolution of one handed-off operation. */
export const resolutionTopic = (businessOperationId: string): string => `retrysafe.resolution:${businessOperationId}`;
/** The DBOS event key under which a waiting workflow publishes its handed-off outcome. */
export const handoffEventKey = (businessOperationId: string): string => `retrysafe.handoff:${businessOperationId}`;

/**
 * Delivers a person's decision to the workflow waiting in `awaitResolution`. Safe to repeat: the same
 * decision carries the same DBOS idempotency key, so DBOS delivers it once.
 */
export async function sendResolution(
  sender: DbosMessageSender,
  workflowId: string,
  businessOperationId: string,
  resolution: DbosResolutionMessage,
): Promise<void> {
  if (!isResolution(resolution))
    throw new TypeError(
      'resolution must be { action: "resume", force? } | { action: "mark-done", providerRef } | { action: "abandon" }',
    );
  const providerRef = 'providerRef' in resolution ? resolution.providerRef : null;
  const digest = hash(JSON.stringify([businessOperationId, resolution.action, providerRef])).slice(0, 32);
  await sender.send(workflowId, resolution, resolutionTopic(businessOperationId), `retrysafe-resolution-${digest}`);
}

/**
 * The run id of a DBOS workflow: its workflow id when the contract accepts it as one (DBOS's default
 * UUIDs always are), else `dbos-wf-` and a hash of it.
 */
export function runIdForWorkflow(workflowId: string): string {
  return RUN_ID.test(workflowId) ? workflowId : `dbos-wf-${hash(workflowId).slice(0, 40)}`;
}

const RETRY_FIELDS = ['retriesAllowed', 'maxAttempts', 'intervalSeconds', 'backoffRate', 'shouldRetry'] as const;

function refuseEngineRetries(options: object = {}): void {
  for (const f of RETRY_FIELDS) {
    if (f in options)
      throw new DbosStepConfigurationError(
        'engine-retries',
        `DBOS step option ${f} is not accepted: the retrysafe runner is the one retrying layer, so DBOS step retries stay off`,
      );
  }
  if ('timeoutMS' in options)
    throw new DbosStepConfigurationError(
      'engine-timeout',
      'DBOS step option timeoutMS is not accepted: a timed-out attempt keeps running; bound the provider call with the adapter timeout instead',
    );
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
  if (r.status !== 'handed-off') return r; // in-progress and resolved carry no receipts: as they are
  const { businessOperationId, packet } = r;
  const { reason, explanation, safeNextActions } = packet;
  return { status: 'handed-off', businessOperationId, reason, explanation, safeNextActions, packet };
}

/** A resolution made outside the workflow (CLI, another process), read back from the ledger; null while still open. */
function fromRecord(rec: OperationRecord): DbosOperationOutcome | null {
  const { businessOperationId, providerRef } = rec;
  if (rec.state === 'abandoned' || (rec.state === 'succeeded' && rec.resolution?.action === 'mark-done'))
    return { status: 'resolved', businessOperationId, state: rec.state, providerRef };
  if (rec.state === 'succeeded') {
    const result = rec.result ?? null;
    return { status: 'done', businessOperationId, result, providerRef, adopted: true, attempts: rec.attemptCount };
  }
  return null; // still handed off, or being resumed by someone else
}

interface Parts {
  readonly runner: Runner;
  readonly ledger: PostgresLedger;
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

/**
 * Runs `body` as a DBOS step with retries off, or directly when already inside a step. Its attempt ids are
 * `<run id>:s<step id>.<execution tag>.<n>`: the tag is new each time DBOS executes the step (a step
 * re-executed after a crash keeps its step id), so no two provider calls ever share an attempt id.
 */
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
  const rounds = inStep ? 0 : Math.max(0, stepOptions?.inProgressRounds ?? 20);
  for (let round = 0; ; round++) {
    let outcome: DbosOperationOutcome;
    try {
      // The run and attempt ids (and the cancel signal) are DBOS's, whatever `input` carries.
      outcome = await asStep(name, inStep, runId, async (attemptIds) => {
        const signal = DBOS.stepStatus?.cancelSignal;
        return fromRunResult(await runner.run(adapter, operation, { ...input, runId, attemptIds, signal }));
      });
    } catch (err) {
      // The runner stopped before sending because a pause ran its lease out: nothing was sent and a later
      // run reconciles it, so run it again rather than end the workflow in ERROR (that loses the operation).
      // Read by its code: a step's error replayed by DBOS is a deserialised copy.
      if ((err as { code?: unknown } | null)?.code !== LEASE_EXPIRED || round >= rounds) throw err;
      await DBOS.sleep(50);
      continue;
    }
    if (outcome.status !== 'in-progress' || round >= rounds) return outcome;
    await DBOS.sleep(Math.min(Math.max(outcome.retryAfterMs, 50), 60_000));
  }
}

async function awaitResolution(
  { runner, ledger }: Parts,
  adapter: AdapterV1,
  outcome: DbosOperationOutcome,
  waitOptions: AwaitResolutionOptions = {},
): Promise<DbosOperationOutcome> {
  if (outcome.status !== 'handed-off') return outcome;
  const { runId, inStep } = dbosIds();
  if (inStep)
    throw new DbosStepConfigurationError(
      'not-in-workflow',
      'awaitResolution waits with DBOS.recv, which runs in the workflow itself, not inside a step',
    );
  const id = outcome.businessOperationId;
  const pollSeconds = Math.max(1, waitOptions.pollSeconds ?? 60);
  await DBOS.setEvent(handoffEventKey(id), outcome);
  const deadline = (await DBOS.now()) + Math.max(0, waitOptions.timeoutSeconds ?? 7 * 86_400) * 1000;
  for (;;) {
    const left = deadline - (await DBOS.now());
    if (left <= 0) return outcome;
    const message = await DBOS.recv<unknown>(
      resolutionTopic(id),
      Math.max(1, Math.min(pollSeconds, Math.ceil(left / 1000))),
    );
    // Carries out a person's decision if one came, then reports what the ledger holds (null while still open).
    const next = await asStep(`retrysafe:resolve:${outcome.packet.operation}`, false, runId, async (attemptIds) => {
      if (isResolution(message)) {
        const by = typeof message.by === 'string' ? message.by : undefined;
        try {
          return fromRunResult(await runner.resolve(id, message, { adapters: [adapter], runId, attemptIds, by }));
        } catch (err) {
          // An unsafe resume without { force: true } is refused: the workflow keeps waiting for a decision it can carry out.
          if (UnsafeResumeError.isInstance(err)) return null;
          // Resolved elsewhere in the meantime: report what the ledger holds.
          if (!InvalidStateError.isInstance(err)) throw err;
        }
      }
      const rec = await ledger.get(id);
      return rec ? fromRecord(rec) : null;
    });
    if (next === null || next.status === 'in-progress') continue;
    await DBOS.setEvent(handoffEventKey(id), next);
    return next;
  }
}

/**
 * retrysafe inside DBOS: wrapped operations run as DBOS steps with DBOS's retries off, record the DBOS
 * workflow id and step id as run and attempt ids, keep their ledger on the same PostgreSQL as DBOS's
 * system database, and return handoffs as outcomes the workflow branches on.
 *
 * Nothing of retrysafe's is atomic with DBOS's step checkpoint: the ledger's writes commit before DBOS
 * checkpoints the step's output, so after a crash DBOS executes the step again and the runner decides
 * from the ledger (adopt, look up / re-send with the same key, or hand off) — never a blind second send.
 */
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
    /** Spread into `DBOS.setConfig`: DBOS's system database on the same PostgreSQL as the ledger. */
    dbosConfig: () => (pool ? { systemDatabasePool: pool } : { systemDatabaseUrl: databaseUrl! }),
    /**
     * Inside a DBOS workflow: performs the operation as one DBOS step (retries off), or inside the current
     * step when called from one. Never throws for a handoff: it returns `status: 'handed-off'`.
     */
    run: (adapter: AdapterV1, operation: string, input: DbosRunInput, stepOptions?: DbosStepOptions) =>
      runOperation(parts, adapter, operation, input, stepOptions),
    /** `run` bound to one operation, for use as a workflow's step function. */
    step: (adapter: AdapterV1, operation: string, stepOptions?: DbosStepOptions) => {
      refuseEngineRetries(stepOptions);
      return (input: DbosRunInput) => runOperation(parts, adapter, operation, input, stepOptions);
    },
    /**
     * Inside the workflow that got a `handed-off` outcome: publishes the handoff as a DBOS event
     * (`handoffEventKey`), then waits durably (`DBOS.recv`) for a person's decision sent with
     * `sendResolution`, or for a resolution made in the ledger directly. Other outcomes come back unchanged.
     */
    awaitResolution: (adapter: AdapterV1, outcome: DbosOperationOutcome, waitOptions?: AwaitResolutionOptions) =>
      awaitResolution(parts, adapter, outcome, waitOptions),
    close: () => ledger.close(),
  };
}

export type DbosRetrysafe = ReturnType<typeof createDbosRetrysafe>;
