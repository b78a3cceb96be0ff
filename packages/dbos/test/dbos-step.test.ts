import { randomBytes } from 'node:crypto';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { type BusinessOperationId, LeaseExpiredError, LedgerError } from '@retrysafe/contract';
import { identityFields } from '@retrysafe/contract/ledger';
import { createRunner } from '@retrysafe/core';
import {
  type AwaitResolutionOptions,
  createDbosRetrysafe,
  type DbosOperationOutcome,
  type DbosResolutionMessage,
  DbosResolutionRefusedError,
  DbosStepConfigurationError,
  handoffEventKey,
  resolutionTopic,
  runIdForWorkflow,
  sendResolution,
} from '@retrysafe/dbos';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrl } from './crash-harness.js';

// One DBOS application in this process, on the test PostgreSQL, with the sandbox in process.
const url = databaseUrl();
const tag = randomBytes(3).toString('hex');
const dbosSchema = `dbos_unit_${tag}`;
const ledgerSchema = `rs_unit_${tag}`;
const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
const adapter = createSandboxAdapter({ provider, intentFields: ['ref'] });
// A test that runs beside others has a sandbox of its own, found by the ref its workflow is started with: a fault
// queued, a call or a record counted by one test is never another's. The others share the one above.
const sandboxes = new Map<string, { provider: typeof provider; adapter: typeof adapter }>();
function sandboxFor(ref: string) {
  if (!sandboxes.has(ref)) {
    const own = createSandboxProvider(REPLAYING_BEHAVIOUR);
    sandboxes.set(ref, { provider: own, adapter: createSandboxAdapter({ provider: own, intentFields: ['ref'] }) });
  }
  return sandboxes.get(ref)!;
}
const adapterOf = (ref: string) => sandboxes.get(ref)?.adapter ?? adapter;
const rs = createDbosRetrysafe({ databaseUrl: url, ledgerSchema, policy: { leaseMs: 2_000 } });
const OP = 'records.create';

const once = DBOS.registerWorkflow(async (ref: string) => rs.run(adapter, OP, { params: { ref } }), { name: 'once' });

const withRetriesAsked = DBOS.registerWorkflow(
  // A caller who asks DBOS to retry the wrapped step (through a cast: the option type has no such field).
  async (ref: string) => rs.run(adapter, OP, { params: { ref } }, { retriesAllowed: true, maxAttempts: 3 } as never),
  { name: 'withRetriesAsked' },
);

const insideRetryingStep = DBOS.registerWorkflow(
  async (ref: string) =>
    DBOS.runStep(async () => rs.run(adapter, OP, { params: { ref } }), {
      name: 'outer',
      retriesAllowed: true,
      maxAttempts: 2,
      intervalSeconds: 0.01,
    }),
  { name: 'insideRetryingStep' },
);

const insidePlainStep = DBOS.registerWorkflow(
  async (ref: string) =>
    DBOS.runStep(async () => rs.run(adapter, OP, { params: { ref } }), { name: 'outer-no-retries' }),
  { name: 'insidePlainStep' },
);

const withHandoff = DBOS.registerWorkflow(
  async (ref: string): Promise<{ first: DbosOperationOutcome; final: DbosOperationOutcome }> => {
    const first = await rs.run(adapterOf(ref), OP, { params: { ref } });
    // A typed outcome to branch on, not an exception: wait (durably) for a person.
    const final =
      first.status === 'handed-off'
        ? await rs.awaitResolution(adapterOf(ref), first, { timeoutSeconds: 60, pollSeconds: 1 })
        : first;
    return { first, final };
  },
  { name: 'withHandoff' },
);

/** A workflow that runs the operation, then waits (`wait`) for a person's decision on its hand-off. */
const runThenAwait = (name: string, wait: AwaitResolutionOptions, ownIntent = false) =>
  DBOS.registerWorkflow(
    async (ref: string): Promise<DbosOperationOutcome> => {
      const intent = ownIntent ? { intent: { order: ref, kind: 'own' } } : {};
      const first = await rs.run(adapterOf(ref), OP, { params: { ref }, ...intent });
      return rs.awaitResolution(adapterOf(ref), first, wait);
    },
    { name },
  );

const withShortWait = runThenAwait('withShortWait', { timeoutSeconds: 8, pollSeconds: 1 });
// The caller names the business intent itself (RunInput.intent) instead of leaving it to the intent fields.
const withOwnIntent = runThenAwait('withOwnIntent', { timeoutSeconds: 8, pollSeconds: 1 }, true);

const handedOffTwice = DBOS.registerWorkflow(
  async (ref: string): Promise<DbosOperationOutcome> => {
    let outcome = await rs.run(adapterOf(ref), OP, { params: { ref } });
    for (let round = 0; round < 2 && outcome.status === 'handed-off'; round++)
      outcome = await rs.awaitResolution(adapterOf(ref), outcome, { timeoutSeconds: 10, pollSeconds: 1 });
    return outcome;
  },
  { name: 'handedOffTwice' },
);

// Polls the ledger seldom: a hand-off made elsewhere stays unpublished for a while.
const withSlowPoll = runThenAwait('withSlowPoll', { timeoutSeconds: 20, pollSeconds: 6 });

// Test-only topic: the workflow below runs on until the test says so.
const FINISH = 'test.finish';

// Waits a short while for a decision, then runs on without waiting for one again.
const waitThenRunOn = DBOS.registerWorkflow(
  async (ref: string): Promise<DbosOperationOutcome> => {
    const first = await rs.run(adapterOf(ref), OP, { params: { ref } });
    const out = await rs.awaitResolution(adapterOf(ref), first, { timeoutSeconds: 2, pollSeconds: 1 });
    await DBOS.recv(FINISH, 30);
    return out;
  },
  { name: 'waitThenRunOn' },
);

// Waits, and when nobody decided, (reminds someone and) waits again on the same hand-off.
const waitTwice = DBOS.registerWorkflow(
  async (ref: string): Promise<DbosOperationOutcome> => {
    const first = await rs.run(adapterOf(ref), OP, { params: { ref } });
    const out = await rs.awaitResolution(adapterOf(ref), first, { timeoutSeconds: 2, pollSeconds: 1 });
    return rs.awaitResolution(adapterOf(ref), out, { timeoutSeconds: 4, pollSeconds: 1 });
  },
  { name: 'waitTwice' },
);

// Waits a second at a time, again and again, until a decision closes it or the test says finish.
const waitOnAndOn = DBOS.registerWorkflow(
  async (ref: string): Promise<DbosOperationOutcome> => {
    let out = await rs.run(adapterOf(ref), OP, { params: { ref } });
    while (out.status === 'handed-off' && (await DBOS.recv(FINISH, 0)) === null)
      out = await rs.awaitResolution(adapterOf(ref), out, { timeoutSeconds: 1, pollSeconds: 1 });
    return out;
  },
  { name: 'waitOnAndOn' },
);

// Shows the messages sent to it, waiting as awaitResolution does (its first wait on `id`, begun and open).
const receiveTwice = DBOS.registerWorkflow(
  async (id: string) => {
    await DBOS.setEvent(`retrysafe.wait:${id}`, { wait: 1, open: true });
    await DBOS.setEvent(`retrysafe.began:1:${id}`, true);
    return [await DBOS.recv(resolutionTopic(id), 20), await DBOS.recv(resolutionTopic(id), 1)];
  },
  { name: 'receiveTwice' },
);

beforeAll(async () => {
  DBOS.setConfig({ name: `unit-${tag}`, ...rs.dbosConfig(), systemDatabaseSchemaName: dbosSchema, logLevel: 'error' });
  await DBOS.launch();
});

afterAll(async () => {
  await DBOS.shutdown();
  await rs.close();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS "${dbosSchema}" CASCADE`);
  await c.query(`DROP SCHEMA IF EXISTS "${ledgerSchema}" CASCADE`);
  await c.end();
});

const start = async <A extends unknown[], R>(wf: (...a: A) => Promise<R>, workflowID: string, ...args: A) =>
  DBOS.startWorkflow(wf, { workflowID })(...args);

/** The workflow told to finish runs on to its end with the operation still handed off, in its result and the ledger. */
async function finishesHandedOff(wfId: string, h: { getResult(): Promise<unknown> }, bo: BusinessOperationId) {
  await DBOS.send(wfId, 'finish', FINISH);
  expect(await h.getResult()).toMatchObject({ status: 'handed-off', businessOperationId: bo });
  expect((await rs.ledger.get(bo))!.state).toBe('handed-off');
}

/** Starts `wf` on `ref` with its first call rejected; resolves once the workflow has published the hand-off. */
async function rejectedAndPublished<R>(wf: (ref: string) => Promise<R>, name: string, ref: string) {
  sandboxFor(ref).provider.failNext({ kind: 'rejected', message: 'amount must be positive' });
  const wfId = `${name}-${tag}`;
  const h = await start(wf, wfId, ref);
  const bo = await handedOff(ref);
  const published = await waitFor(async () => DBOS.getEvent<DbosOperationOutcome>(wfId, handoffEventKey(bo), 1));
  return { wfId, h, bo, published };
}

describe('ids: business id from the intent; DBOS workflow and step ids only as run and attempt ids', () => {
  it('a workflow id the contract cannot carry as a run id is hashed, stably', () => {
    expect(runIdForWorkflow('0f7c7f4e-2a1b-4c55-9a43-7b1f6a2d9e10')).toBe('0f7c7f4e-2a1b-4c55-9a43-7b1f6a2d9e10');
    const odd = runIdForWorkflow('order #17 / retry');
    expect(odd).toMatch(/^dbos-wf-[0-9a-f]{40}$/);
    expect(runIdForWorkflow('order #17 / retry')).toBe(odd);
  });

  it('records the workflow id as run id and the step id in every attempt id, and keeps the business id across workflows', async () => {
    const before = provider.count();
    const a = await (await start(once, `ids-a-${tag}`, 'order-ids')).getResult();
    const b = await (await start(once, `ids-b-${tag}`, 'order-ids')).getResult();
    expect(a.status).toBe('done');
    expect(b).toMatchObject({ status: 'done', adopted: true, businessOperationId: a.businessOperationId });
    expect(provider.count() - before).toBe(1);
    expect(a.businessOperationId).not.toContain(`ids-a-${tag}`);
    const receipts = await rs.ledger.receipts(a.businessOperationId);
    expect(receipts.map((r) => r.runId)).toEqual([`ids-a-${tag}`]);
    expect(receipts[0]!.attemptId).toMatch(new RegExp(`^ids-a-${tag}:s0\\.[0-9a-f]{8}\\.1$`));
  });
});

describe('a run stopped before sending (its lease ran out in a pause) is run again, not a failed workflow', () => {
  it('the first round throws LeaseExpiredError with nothing sent; the next round sends once: one record, workflow done', async () => {
    const run = rs.runner.run;
    let stopped = 0;
    // What the runner does after a pause longer than its lease between the claim and the send.
    rs.runner.run = (async (...args: Parameters<typeof run>) => {
      if (stopped++ === 0) throw new LeaseExpiredError('paused', 0, 1);
      return run(...args);
    }) as typeof run;
    try {
      const before = provider.count();
      const out = await (await start(once, `wf-lease-${tag}`, `lease-${tag}`)).getResult();
      expect(stopped).toBe(2);
      expect(out).toMatchObject({ status: 'done', adopted: false, attempts: 1 });
      expect(provider.count() - before).toBe(1);
    } finally {
      rs.runner.run = run;
    }
  });
});

describe('a round after in-progress: the operation another worker held is answered as it ended', () => {
  it('handed off there for a step the user must take: the next round answers handed-off and sends nothing', async () => {
    const ref = `elsewhere-${tag}`;
    // Another worker's run, refused until the user takes a step the provider names.
    const refusing = {
      ...adapter,
      doExecute: async () => ({ kind: 'rejected', reason: 'action-required', message: 'open the URL first' }) as const,
    };
    const elsewhere = await createRunner({ ledger: rs.ledger, owner: 'other-worker' }).run(refusing, OP, {
      params: { ref },
    });
    expect(elsewhere.status).toBe('handed-off');
    const run = rs.runner.run;
    let rounds = 0;
    // This workflow's first round had found it held by that worker until its wait ran out.
    const { businessOperationId } = elsewhere;
    rs.runner.run = (async (...args: Parameters<typeof run>) =>
      rounds++ === 0 ? { status: 'in-progress', businessOperationId, retryAfterMs: 0 } : run(...args)) as typeof run;
    try {
      const before = provider.count();
      const out = await (await start(once, `wf-elsewhere-${tag}`, ref)).getResult();
      expect(out).toMatchObject({ status: 'handed-off', reason: 'rejected' });
      expect(provider.count() - before).toBe(0);
    } finally {
      rs.runner.run = run;
    }
  });
});

describe('an error thrown out of a wrapped operation reaches DBOS redacted', () => {
  it("no secret or address in its message, stack, cause or errors lands in DBOS's tables, frozen or not; its class and code stay", async () => {
    const run = rs.runner.run;
    const [secret, email] = ['sk_live_4eC39HqLyjWDarjtT1zdp7dc', 'jane.doe@example.com'];
    const other = 'AKIAIOSFODNN7EXAMPLE';
    let frozen = false;
    // A ledger failing with its driver's text, as the runner throws it (DBOS stores it, then the workflow's); the
    // driver's own AggregateError (one error per address tried) under it, and an error that cannot be changed.
    rs.runner.run = (async () => {
      const tried = new AggregateError([new Error(`connect to ${email}`), new Error(`key ${other}`)], 'every host');
      const cause = Object.assign(new Error(`no access for ${email}`, { cause: tried }), { detail: `key=${secret}` });
      const err = new LedgerError(`write failed for ${email} (${secret})`, { cause });
      throw frozen ? Object.freeze(err) : err;
    }) as typeof run;
    try {
      for (const wf of [once, insidePlainStep])
        for (frozen of [false, true]) {
          const h = await start(wf, `leak-${wf.name}-${frozen}-${tag}`, `leak-${tag}`);
          await expect(h.getResult()).rejects.toMatchObject({ name: 'LedgerError', code: 'RETRYSAFE_LEDGER' });
        }
    } finally {
      rs.runner.run = run;
    }
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    const tables = await c.query('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [
      dbosSchema,
    ]);
    let stored = '';
    for (const { table_name } of tables.rows)
      for (const { row } of (await c.query(`SELECT t::text AS row FROM "${dbosSchema}"."${table_name}" t`)).rows)
        stored += `${row}\n`;
    await c.end();
    expect(stored).toContain('write failed for');
    expect(stored).toContain('no access for');
    expect(stored).toContain('every host');
    for (const leak of [secret, email, 'jane.doe', other]) expect(stored).not.toContain(leak);
  });
});

describe('DBOS step retries stay off for wrapped operations (enforced)', () => {
  it('rs.step refuses DBOS retry and timeout options when the step function is made', () => {
    for (const bad of [
      { retriesAllowed: true },
      { maxAttempts: 2 },
      { intervalSeconds: 1 },
      { backoffRate: 2 },
      { timeoutMS: 1000 },
    ]) {
      expect(() => rs.step(adapter, OP, bad as never)).toThrow(DbosStepConfigurationError);
    }
    expect(typeof rs.step(adapter, OP, { name: 'fine' })).toBe('function');
  });

  it('refuses DBOS retry options on the wrapped step, before anything is claimed or sent', async () => {
    const calls = provider.calls();
    const h = await start(withRetriesAsked, `retries-${tag}`, 'order-retries');
    await expect(h.getResult()).rejects.toSatisfy(
      (e: unknown) =>
        DbosStepConfigurationError.isInstance(e) && (e as DbosStepConfigurationError).problem === 'engine-retries',
    );
    expect(provider.calls()).toBe(calls);
    expect(await rs.ledger.list({})).not.toContainEqual(expect.objectContaining({ params: { ref: 'order-retries' } }));
  });

  it('refuses to run inside a DBOS step that DBOS retries; runs inside one that it does not', async () => {
    const calls = provider.calls();
    await expect(
      (await start(insideRetryingStep, `in-retrying-${tag}`, 'order-in-retrying')).getResult(),
    ).rejects.toThrow(/DBOS retries .*register that step with retries off/);
    expect(provider.calls()).toBe(calls);
    const ok = await (await start(insidePlainStep, `in-plain-${tag}`, 'order-in-plain')).getResult();
    expect(ok.status).toBe('done');
    expect(provider.calls()).toBe(calls + 1);
    const receipts = await rs.ledger.receipts(ok.businessOperationId);
    expect(receipts[0]!.attemptId.startsWith(`in-plain-${tag}:s0.`)).toBe(true);
  });

  it('refuses a round count or wait that is not a finite number ≥ 0: NaN or Infinity would never end the loop', async () => {
    const bad = (e: unknown) =>
      DbosStepConfigurationError.isInstance(e) && (e as DbosStepConfigurationError).problem === 'bad-option';
    for (const inProgressRounds of [Number.NaN, Number.POSITIVE_INFINITY, -1, '3' as unknown as number])
      expect(() => rs.step(adapter, OP, { inProgressRounds })).toThrow(
        expect.objectContaining({ problem: 'bad-option' }),
      );
    await expect(
      rs.run(adapter, OP, { params: { ref: 'order-nan' } }, { inProgressRounds: Number.NaN }),
    ).rejects.toSatisfy(bad);
    const outcome = { status: 'handed-off' } as DbosOperationOutcome;
    for (const options of [{ timeoutSeconds: Number.NaN }, { pollSeconds: Number.NaN }, { pollSeconds: Infinity }])
      await expect(rs.awaitResolution(adapter, outcome, options)).rejects.toSatisfy(bad);
  });

  it('refuses to run outside a DBOS workflow', async () => {
    await expect(rs.run(adapter, OP, { params: { ref: 'order-outside' } })).rejects.toSatisfy(
      (e: unknown) =>
        DbosStepConfigurationError.isInstance(e) && (e as DbosStepConfigurationError).problem === 'not-in-workflow',
    );
  });
});

describe.concurrent('a handoff is an outcome the workflow waits on, resolved by a person', () => {
  it('rejected → handed-off outcome (one provider call, no DBOS retry) → a person resumes through DBOS messages → one record', async () => {
    const { provider } = sandboxFor('order-handoff-1');
    const before = provider.count();
    const calls = provider.calls();
    const { wfId, h, bo, published } = await rejectedAndPublished(withHandoff, 'handoff-resume', 'order-handoff-1');
    expect(published).toMatchObject({ status: 'handed-off', reason: 'rejected' });
    expect(provider.calls()).toBe(calls + 1);
    // A rejected request's packet marks resume unsafe (it would be rejected again): the person fixed the
    // cause at the provider and says so with force (runner.resolve refuses an unforced one).
    await sendResolution(DBOS, wfId, bo, { action: 'resume', force: true, by: 'alice' });
    const { first, final } = await h.getResult();
    expect(first.status).toBe('handed-off');
    expect(final).toMatchObject({ status: 'done', businessOperationId: bo });
    expect(provider.count() - before).toBe(1);
    const steps = (await DBOS.listWorkflowSteps(wfId)) ?? [];
    expect(steps.filter((s) => s.error !== null)).toEqual([]);
    const receipts = await rs.ledger.receipts(bo);
    expect(receipts.filter((r) => r.kind === 'resolve').map((r) => r.runId)).toEqual([wfId]);
  });

  it('a resume refused as not safe keeps it waiting; the person then forces it and it completes (one record)', async () => {
    const { provider } = sandboxFor('order-handoff-3');
    const before = provider.count();
    const { wfId, h, bo } = await rejectedAndPublished(withHandoff, 'handoff-force', 'order-handoff-3');
    await sendResolution(DBOS, wfId, bo, { action: 'resume', by: 'erin' }); // refused: resume is not safe
    await sendResolution(DBOS, wfId, bo, { action: 'resume', force: true, by: 'erin' });
    const { final } = await h.getResult();
    expect(final).toMatchObject({ status: 'done', businessOperationId: bo });
    expect(provider.count() - before).toBe(1);
  });

  it('a resume made elsewhere that is handed off again reaches the waiting workflow as the new hand-off, published', async () => {
    const { provider, adapter } = sandboxFor('order-again');
    const { wfId, h, bo, published } = await rejectedAndPublished(withShortWait, 'handoff-again', 'order-again');
    const firstAt = (published as Extract<DbosOperationOutcome, { status: 'handed-off' }>).packet.createdAt;
    provider.failNext({ kind: 'rejected', message: 'still not accepted' });
    // A person resumes it from the CLI (`retrysafe ledger resolve`), and the provider rejects it again.
    const again = await rs.runner.resolve(bo, { action: 'resume', force: true }, { adapters: [adapter], by: 'grace' });
    expect(again.status).toBe('handed-off');
    const out = await h.getResult();
    expect(out).toMatchObject({ status: 'handed-off', businessOperationId: bo, reason: 'rejected' });
    const nowAt = (out as Extract<DbosOperationOutcome, { status: 'handed-off' }>).packet.createdAt;
    expect(nowAt).not.toBe(firstAt);
    // What sendResolution reads to tell this hand-off's decisions from the first one's.
    expect(await DBOS.getEvent(wfId, handoffEventKey(bo), 1)).toMatchObject({ packet: { createdAt: nowAt } });
  });

  it('a resolution made in the ledger directly (as `retrysafe ledger resolve` does) reaches the waiting workflow', async () => {
    const { provider } = sandboxFor('order-handoff-2');
    provider.failNext({ kind: 'rejected' });
    const wfId = `handoff-abandon-${tag}`;
    const h = await start(withHandoff, wfId, 'order-handoff-2');
    const bo = await handedOff('order-handoff-2');
    await rs.runner.resolve(bo, { action: 'abandon' }, { by: 'bob' });
    const { final } = await h.getResult();
    expect(final).toEqual({ status: 'resolved', businessOperationId: bo, state: 'abandoned', providerRef: null });
  });
});

describe.concurrent('a resume whose worker died mid-way (the resolve step re-executed after a crash)', () => {
  it.each([
    [
      'is driven on by the waiting workflow once the dead lease runs out: done, one record',
      withShortWait,
      'resume-crash',
    ],
    [
      "is driven on as stored when it was run with the caller's own intent (not re-derived from its params)",
      withOwnIntent,
      'resume-crash-intent',
    ],
  ] as const)(
    '%s',
    async (_, workflow, name) => {
      const { provider } = sandboxFor(`order-${name}`);
      const before = provider.count();
      const { wfId, h, bo } = await rejectedAndPublished(workflow, name, `order-${name}`);
      await diedMidResume(bo);
      // The re-executed step receives the same (checkpointed) decision.
      await sendResolution(DBOS, wfId, bo, { action: 'resume', force: true, by: 'alice' });
      expect(await h.getResult()).toMatchObject({ status: 'done', businessOperationId: bo });
      expect((await rs.ledger.get(bo))!.state).toBe('succeeded');
      expect(provider.count() - before).toBe(1);
    },
    30_000,
  );
});

/** What a resolve step's first execution leaves when its process dies: the resume claimed and dispatched, nothing sent. */
async function diedMidResume(bo: BusinessOperationId) {
  const claim = await rs.ledger.claim({
    ...identityFields((await rs.ledger.get(bo))!),
    owner: 'dead-worker',
    leaseMs: 300,
    now: Date.now(),
    resume: true,
  });
  expect(claim.kind).toBe('claimed');
  if (claim.kind !== 'claimed') throw new Error(claim.kind);
  await rs.ledger.markDispatched({ businessOperationId: bo, fence: claim.record.fence }, Date.now());
}

describe.concurrent('sendResolution', () => {
  // What sendResolution adds to a decision: the hand-off it answers (none published here), the decision's id and the
  // wait it is sent to (the first, not begun here).
  const unpublished = { handoffAt: null, decisionId: expect.stringMatching(/^[0-9a-f]{32}$/), wait: 1 };

  it('the same decision sent twice reaches the workflow once (DBOS idempotency key from the decision)', async () => {
    const wfId = `recv-twice-${tag}`;
    const h = await start(receiveTwice, wfId, 'bo-x');
    await sendResolution(DBOS, wfId, 'bo-x', { action: 'abandon', by: 'carol' });
    await sendResolution(DBOS, wfId, 'bo-x', { action: 'abandon', by: 'carol' });
    expect(await h.getResult()).toEqual([{ action: 'abandon', by: 'carol', ...unpublished }, null]);
  });

  it('a forced resume after a refused unforced one reaches the workflow (two decisions, not one repeated)', async () => {
    const wfId = `recv-force-${tag}`;
    const h = await start(receiveTwice, wfId, 'bo-f');
    await sendResolution(DBOS, wfId, 'bo-f', { action: 'resume', by: 'dave' });
    await sendResolution(DBOS, wfId, 'bo-f', { action: 'resume', force: true, by: 'dave' });
    expect(await h.getResult()).toEqual([
      { action: 'resume', by: 'dave', ...unpublished },
      { action: 'resume', force: true, by: 'dave', ...unpublished },
    ]);
  });

  it('the same decision for a later hand-off of the operation reaches the workflow: it is another decision', async () => {
    const { provider } = sandboxFor('order-twice');
    const before = provider.count();
    provider.failNext({ kind: 'rejected', message: 'amount must be positive' }, 2);
    const wfId = `twice-${tag}`;
    const h = await start(handedOffTwice, wfId, 'order-twice');
    const bo = await handedOff('order-twice');
    const packetOf = async () =>
      (await DBOS.getEvent<Extract<DbosOperationOutcome, { status: 'handed-off' }>>(wfId, handoffEventKey(bo), 1))
        ?.packet.createdAt;
    const first = await waitFor(packetOf);
    await sendResolution(DBOS, wfId, bo, { action: 'resume', force: true, by: 'frank' });
    await waitFor(async () => ((await packetOf()) !== first ? true : null));
    await sendResolution(DBOS, wfId, bo, { action: 'resume', force: true, by: 'frank' });
    expect(await h.getResult()).toMatchObject({ status: 'done', businessOperationId: bo });
    expect(provider.count() - before).toBe(1);
  }, 30_000);

  it('a decision repeated once the operation was handed off again elsewhere reaches the workflow and is applied, not dropped', async () => {
    const { provider, adapter } = sandboxFor('order-again-elsewhere');
    const { wfId, h, bo } = await rejectedAndPublished(withSlowPoll, 'again-elsewhere', 'order-again-elsewhere');
    // Grace resumes it from the CLI (another process, another lease owner); the provider is slow, then rejects it again.
    const cli = createRunner({ ledger: rs.ledger, owner: 'cli-grace', policy: { leaseMs: 2_000 } });
    let answer = () => {};
    const gate = new Promise<void>((r) => {
      answer = r;
    });
    const slow: typeof adapter = {
      ...adapter,
      doExecute: async (...args) => {
        await gate;
        return adapter.doExecute(...args);
      },
    };
    provider.failNext({ kind: 'rejected', message: 'still not accepted' });
    const elsewhere = cli.resolve(bo, { action: 'resume', force: true }, { adapters: [slow], by: 'grace' });
    await waitFor(async () => ((await rs.ledger.get(bo))?.state === 'dispatched' ? true : null));
    // Bob abandons it meanwhile: the workflow finds it being resumed elsewhere, applies nothing, tells him and waits on.
    await expect(
      sendResolution(DBOS, wfId, bo, { action: 'abandon', by: 'bob' }, { awaitSeconds: 10 }),
    ).rejects.toSatisfy(
      (e: unknown) => DbosResolutionRefusedError.isInstance(e) && e.refusal.code === 'RETRYSAFE_INVALID_STATE',
    );
    answer();
    const again = await elsewhere;
    if (again.status !== 'handed-off') throw new Error(again.status);
    // Bob reads the new hand-off in the ledger and abandons it, naming it (the workflow published only the first):
    // his decision must not be taken for the first one.
    const handoffAt = again.packet.createdAt;
    expect(
      await sendResolution(DBOS, wfId, bo, { action: 'abandon', by: 'bob', handoffAt }, { awaitSeconds: 10 }),
    ).toBe('applied');
    expect(await h.getResult()).toMatchObject({ status: 'resolved', businessOperationId: bo, state: 'abandoned' });
    expect((await rs.ledger.get(bo))!.state).toBe('abandoned');
  }, 30_000);

  const staleDecisions = [
    [
      'a forced resume',
      'is not forced past the new packet',
      { action: 'resume', force: true },
      'RETRYSAFE_UNSAFE_RESUME',
    ],
    ['an abandon', 'does not close the new hand-off', { action: 'abandon' }, 'RETRYSAFE_INVALID_STATE'],
  ] as const;
  // Alice decided on the first packet (she fixed its cause, or gave it up); she never read the new one. Sent through
  // sendResolution, or straight to the topic without `handoffAt` (bound to the published packet all the same).
  const senders = [
    [
      '',
      (wfId: string, bo: string, decision: DbosResolutionMessage) =>
        sendResolution(DBOS, wfId, bo, decision, { awaitSeconds: 10 }),
    ],
    [
      ' (sent with DBOS.send, no handoffAt)',
      (wfId: string, bo: string, decision: DbosResolutionMessage) => DBOS.send(wfId, decision, resolutionTopic(bo)),
    ],
  ] as const;
  for (const [what, not, decision, code] of staleDecisions)
    for (const [how, send] of senders)
      it(`${what} sent for a hand-off replaced elsewhere ${not}${how}: nothing sent or written`, async () => {
        const name = `stale-${decision.action}${how ? '-raw' : ''}`;
        const ref = `order-${code}${how ? '-raw' : ''}`;
        const { provider, adapter } = sandboxFor(ref);
        const { wfId, h, bo } = await rejectedAndPublished(withSlowPoll, name, ref);
        // Grace resumes it from the CLI and it is rejected again: a new packet, not yet published by the workflow.
        provider.failNext({ kind: 'rejected', message: 'still not accepted' });
        const again = await rs.runner.resolve(
          bo,
          { action: 'resume', force: true },
          { adapters: [adapter], by: 'grace' },
        );
        if (again.status !== 'handed-off') throw new Error(again.status);
        const calls = provider.calls();
        const sent = send(wfId, bo, { ...decision, by: 'alice' });
        if (how) await sent;
        else
          await expect(sent).rejects.toSatisfy(
            (e: unknown) => DbosResolutionRefusedError.isInstance(e) && e.refusal.code === code,
          );
        expect(await h.getResult()).toMatchObject({
          status: 'handed-off',
          packet: { createdAt: again.packet.createdAt },
        });
        expect(provider.calls()).toBe(calls);
        expect((await rs.ledger.get(bo))!.state).toBe('handed-off');
      }, 30_000);

  it('a decision sent to a workflow that has ended (it returned the new hand-off) is refused to its sender, not left unread', async () => {
    const { provider, adapter } = sandboxFor('order-ended');
    const { wfId, h, bo } = await rejectedAndPublished(withShortWait, 'ended', 'order-ended');
    provider.failNext({ kind: 'rejected', message: 'still not accepted' });
    await rs.runner.resolve(bo, { action: 'resume', force: true }, { adapters: [adapter], by: 'grace' });
    expect(await h.getResult()).toMatchObject({ status: 'handed-off', businessOperationId: bo });
    // A person answers the new hand-off through the workflow, which no longer waits for anything.
    await expect(sendResolution(DBOS, wfId, bo, { action: 'abandon', by: 'bob' })).rejects.toSatisfy(
      (e: unknown) => DbosResolutionRefusedError.isInstance(e) && e.refusal.code === 'workflow-ended',
    );
    expect((await rs.ledger.get(bo))!.state).toBe('handed-off');
  }, 30_000);

  it('a decision sent after the wait timed out, to a workflow that runs on, is refused to its sender (not-waiting), not left unread', async () => {
    const { wfId, h, bo } = await rejectedAndPublished(waitThenRunOn, 'ran-on', 'order-ran-on');
    // The 2 s wait has timed out (and says so); the workflow runs on.
    await waitFor(async () =>
      (await DBOS.getEvent<{ open: boolean }>(wfId, `retrysafe.wait:${bo}`, 0))?.open === false ? true : null,
    );
    await expect(
      sendResolution(DBOS, wfId, bo, { action: 'abandon', by: 'bob' }, { awaitSeconds: 2 }),
    ).rejects.toSatisfy((e: unknown) => DbosResolutionRefusedError.isInstance(e) && e.refusal.code === 'not-waiting');
    await finishesHandedOff(wfId, h, bo);
  }, 30_000);

  it('a decision that arrives while the wait polls the ledger past its timeout is taken, not left unread', async () => {
    const { wfId, h, bo } = await rejectedAndPublished(waitThenRunOn, 'at-timeout', 'order-at-timeout');
    const get = rs.ledger.get;
    let polling = () => {};
    const polled = new Promise<void>((r) => {
      polling = r;
    });
    // The wait's next poll of the ledger is slow: it ends after the wait's 2 s timeout. Only this test's operation:
    // other tests' workflows run meanwhile.
    rs.ledger.get = (async (...args: Parameters<typeof get>) => {
      if (args[0] !== bo) return get(...args);
      rs.ledger.get = get;
      polling();
      await new Promise((r) => setTimeout(r, 3_000));
      return get(...args);
    }) as typeof get;
    try {
      await polled;
      const answer = sendResolution(DBOS, wfId, bo, { action: 'abandon', by: 'bob' }, { awaitSeconds: 10 });
      expect(await answer).toBe('applied');
    } finally {
      rs.ledger.get = get;
    }
    await DBOS.send(wfId, 'finish', FINISH);
    expect(await h.getResult()).toMatchObject({ status: 'resolved', businessOperationId: bo, state: 'abandoned' });
  }, 30_000);

  it('a decision that reached a wait after it ended is not applied by the next wait: sent again to that one, applied once', async () => {
    const { wfId, h, bo } = await rejectedAndPublished(waitTwice, 'late-send', 'order-late-send');
    // A slow network: the message lands once the workflow waits again (its first wait ended meanwhile).
    const slow = {
      getEvent: DBOS.getEvent,
      getWorkflowStatus: DBOS.getWorkflowStatus,
      send: async (...args: Parameters<typeof DBOS.send>) => {
        await waitFor(async () => {
          const state = await DBOS.getEvent<{ wait: number }>(wfId, `retrysafe.wait:${bo}`, 0);
          return state && state.wait >= 2 ? true : null;
        });
        return DBOS.send(...args);
      },
    };
    expect(await sendResolution(slow, wfId, bo, { action: 'abandon', by: 'bob' }, { awaitSeconds: 5 })).toBe('applied');
    expect(await h.getResult()).toMatchObject({ status: 'resolved', businessOperationId: bo, state: 'abandoned' });
    expect((await rs.ledger.receipts(bo)).filter((r) => r.kind === 'resolve')).toHaveLength(1);
    expect(await DBOS.getEvent(wfId, `retrysafe.decisions:${bo}`, 0)).toBe(2); // both copies taken, one applied
  }, 30_000);

  it('a decision that reaches every wait after it ended is sent a few times, then refused (not-waiting): never applied, never sent for ever', async () => {
    const { wfId, h, bo } = await rejectedAndPublished(waitOnAndOn, 'always-late', 'order-always-late');
    let sends = 0;
    // A network that delivers each message once the wait it was sent to has ended.
    const late = {
      getEvent: DBOS.getEvent,
      getWorkflowStatus: DBOS.getWorkflowStatus,
      send: async (...args: Parameters<typeof DBOS.send>) => {
        if (++sends > 6) throw new Error('sent again and again');
        const to = (args[1] as { wait: number }).wait;
        await waitFor(async () => {
          const state = await DBOS.getEvent<{ wait: number }>(wfId, `retrysafe.wait:${bo}`, 0);
          return state && state.wait > to ? true : null;
        });
        return DBOS.send(...args);
      },
    };
    await expect(sendResolution(late, wfId, bo, { action: 'abandon', by: 'bob' })).rejects.toSatisfy(
      (e: unknown) => DbosResolutionRefusedError.isInstance(e) && e.refusal.code === 'not-waiting',
    );
    expect(sends).toBe(3);
    await finishesHandedOff(wfId, h, bo);
  }, 60_000);

  it('a decision for an operation the workflow does not wait on is refused (not-waiting), not left unread', async () => {
    const { wfId, h, bo } = await rejectedAndPublished(waitThenRunOn, 'not-mine', 'order-not-mine');
    const notMine = `${bo}-not-mine`;
    await expect(
      sendResolution(DBOS, wfId, notMine, { action: 'abandon', by: 'bob' }, { awaitSeconds: 1 }),
    ).rejects.toSatisfy((e: unknown) => DbosResolutionRefusedError.isInstance(e) && e.refusal.code === 'not-waiting');
    await DBOS.send(wfId, 'finish', FINISH);
    expect(await h.getResult()).toMatchObject({ status: 'handed-off', businessOperationId: bo });
  }, 30_000);

  it('two people decide at once: one decision applied, the other refused with the reason, nothing applied twice', async () => {
    const { wfId, h, bo } = await rejectedAndPublished(withHandoff, 'two-senders', 'order-two-senders');
    const answers = await Promise.allSettled([
      sendResolution(DBOS, wfId, bo, { action: 'abandon', by: 'bob' }, { awaitSeconds: 10 }),
      sendResolution(
        DBOS,
        wfId,
        bo,
        { action: 'mark-done', providerRef: 'rec_by_hand', by: 'carol' },
        { awaitSeconds: 10 },
      ),
    ]);
    expect(answers.filter((a) => a.status === 'fulfilled').map((a) => a.value)).toEqual(['applied']);
    const refused = answers.find((a) => a.status === 'rejected')?.reason;
    expect(DbosResolutionRefusedError.isInstance(refused) && refused.refusal.code).toBe('RETRYSAFE_INVALID_STATE');
    const { final } = await h.getResult();
    expect(final).toMatchObject({ status: 'resolved', businessOperationId: bo });
    expect((await rs.ledger.receipts(bo)).filter((r) => r.kind === 'resolve')).toHaveLength(1);
  }, 30_000);

  it('a decision sent to a wait cancelled through DBOS is taken once DBOS resumes the workflow, applied once', async () => {
    const { wfId, bo } = await rejectedAndPublished(withHandoff, 'cancelled', 'order-cancelled');
    await waitFor(async () => DBOS.getEvent(wfId, `retrysafe.wait:${bo}`, 0));
    await DBOS.cancelWorkflow(wfId);
    expect(await sendResolution(DBOS, wfId, bo, { action: 'abandon', by: 'bob' }, { awaitSeconds: 1 })).toBe('sent');
    expect((await rs.ledger.get(bo))!.state).toBe('handed-off');
    const resumed = await DBOS.resumeWorkflow<{ final: DbosOperationOutcome }>(wfId);
    expect((await resumed.getResult()).final).toMatchObject({ status: 'resolved', state: 'abandoned' });
    expect((await rs.ledger.receipts(bo)).filter((r) => r.kind === 'resolve')).toHaveLength(1);
  }, 30_000);

  it('a forced resume sent on the published hand-off is not forced past one published while it was on its way', async () => {
    const { provider } = sandboxFor('order-forced-on-its-way');
    provider.failNext({ kind: 'rejected', message: 'amount must be positive' }, 2);
    const wfId = `forced-on-its-way-${tag}`;
    const h = await start(handedOffTwice, wfId, 'order-forced-on-its-way');
    const bo = await handedOff('order-forced-on-its-way');
    await waitFor(async () => DBOS.getEvent(wfId, handoffEventKey(bo), 1));
    // Bob read the published hand-off and forces a resume; his network stalls until the workflow waits on a new one.
    let stalled = false;
    const slow = {
      send: DBOS.send,
      getWorkflowStatus: DBOS.getWorkflowStatus,
      getEvent: async <T>(workflowId: string, key: string, options?: Parameters<typeof DBOS.getEvent>[2]) => {
        if (key === `retrysafe.wait:${bo}` && !stalled) {
          stalled = true;
          await waitFor(async () => {
            const state = await DBOS.getEvent<{ wait: number }>(wfId, key, 0);
            return state && state.wait >= 2 ? true : null;
          });
        }
        return DBOS.getEvent<T>(workflowId, key, options);
      },
    };
    const bob = sendResolution(slow, wfId, bo, { action: 'resume', force: true, by: 'bob' }, { awaitSeconds: 10 });
    // Meanwhile Alice forces a resume on it too, and the provider rejects it again: a new hand-off.
    const alice = { action: 'resume', force: true, by: 'alice' } as const;
    expect(await sendResolution(DBOS, wfId, bo, alice, { awaitSeconds: 10 })).toBe('applied');
    const calls = provider.calls();
    await expect(bob).rejects.toSatisfy(
      (e: unknown) => DbosResolutionRefusedError.isInstance(e) && e.refusal.code === 'RETRYSAFE_UNSAFE_RESUME',
    );
    expect(provider.calls()).toBe(calls);
    await sendResolution(DBOS, wfId, bo, { action: 'abandon', by: 'bob' }, { awaitSeconds: 10 });
    expect(await h.getResult()).toMatchObject({ status: 'resolved', businessOperationId: bo, state: 'abandoned' });
  }, 30_000);

  it('refuses a decision that is not one', async () => {
    await expect(sendResolution(DBOS, 'any', 'bo-y', { action: 'mark-done' } as never)).rejects.toThrow(TypeError);
  });
});

/** The id of the handed-off operation whose params carry `ref`, once there is one. */
function handedOff(ref: string) {
  const find = async () =>
    (await rs.ledger.list({ states: ['handed-off'] })).find((r) => (r.params as { ref?: string }).ref === ref);
  return waitFor(async () => (await find())?.businessOperationId);
}

async function waitFor<T>(fn: () => Promise<T | null | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== null && v !== undefined) return v;
    if (Date.now() > end) throw new Error('waitFor: timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}
