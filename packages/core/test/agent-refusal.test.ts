// Every typed refusal before the claim reaches an agent as a structured answer (invalid-input, or
// conflict), through the one mapping (refusalAnswer in src/agent.ts) that callAgentTool — and so
// MCP, its fence and the AI SDK — uses.
import {
  ConflictError,
  InvalidIdError,
  InvalidIntentError,
  InvalidParamsError,
  LedgerError,
  PayloadLimitError,
} from '@retrysafe/contract';
import { PAYLOAD_LIMITS } from '@retrysafe/contract/ledger';
import {
  agentRunner,
  agentTools,
  callAgentTool,
  operationStatus,
  pendingHandoffs,
  refusalAnswer,
} from '@retrysafe/core/agent';
import { describe, expect, it } from 'vitest';
import { latch, scripted, setup } from './helpers.js';

/** The sandbox operation as an agent tool whose provider rejects every call with `rejection`; `sent()` counts calls. */
function rejectingTool(rejection: { reason: string; message: string; created?: string; fields?: object[] }) {
  const { adapter, ...rest } = setup();
  let sent = 0;
  const doExecute = async () => {
    sent++;
    return { kind: 'rejected', ...rejection } as const;
  };
  const [tool] = agentTools([{ ...adapter, doExecute } as typeof adapter], ['sandbox_records_create']);
  return { ...rest, adapter, tool: tool!, sent: () => sent };
}

function nested(depth: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = { v };
  return v;
}

const cases: readonly (readonly [string, Record<string, unknown>, { status: string; path?: string }])[] = [
  [
    'too deep',
    { ref: 'deep', extra: nested(PAYLOAD_LIMITS.maxDepth + 5) },
    { status: 'invalid-input', path: '(params)' },
  ],
  [
    'too large',
    { ref: 'large', extra: 'x'.repeat(PAYLOAD_LIMITS.maxBytes + 10) },
    { status: 'invalid-input', path: '(params)' },
  ],
  ['against the schema', { ref: 5 }, { status: 'invalid-input', path: 'ref' }],
  ['not JSON', { ref: 'nan', amount: Number.NaN }, { status: 'invalid-input' }],
];

describe('callAgentTool: refusals before the claim are structured answers, nothing claimed or sent', () => {
  it.each(cases)('%s', async (_name, args, expected) => {
    const { provider, adapter, ledger, runner } = setup();
    const [tool] = agentTools([adapter], ['sandbox_records_create']);
    const answer = await callAgentTool(agentRunner(runner), tool!, args);
    expect(answer.status).toBe(expected.status);
    if (expected.path !== undefined) expect(answer).toMatchObject({ fields: [{ path: expected.path }] });
    expect(provider.calls()).toBe(0);
    expect(await ledger.list()).toEqual([]);
  });

  it('a conflict is answered as one, naming the paths', async () => {
    const { provider, adapter, runner } = setup();
    const [tool] = agentTools([adapter], ['sandbox_records_create']);
    expect((await callAgentTool(agentRunner(runner), tool!, { ref: 'c-1', amount: 1 })).status).toBe('done');
    expect(await callAgentTool(agentRunner(runner), tool!, { ref: 'c-1', amount: 2 })).toMatchObject({
      status: 'conflict',
      field: 'params',
      paths: ['amount'],
    });
    expect(provider.count()).toBe(1);
  });
});

// One rule whichever adapter: an invalid-input answer carries the id its intent fields give, whatever else is wrong,
// and null only when they give none (missing or not JSON), which the message says.
describe('the business-operation id of an invalid-input answer', () => {
  it.each(cases)('%s, with the intent field given: its id', async (_name, args) => {
    const { adapter, runner } = setup();
    const [tool] = agentTools([adapter], ['sandbox_records_create']);
    const answer = await callAgentTool(agentRunner(runner), tool!, args);
    expect(answer.businessOperationId).toMatch(/^sandbox\.records\.create:/);
    expect(answer.message).not.toMatch(/no business-operation id/i);
  });

  it.each([
    ['missing', { amount: 5 }],
    ['not JSON', { ref: Number.NaN }],
  ])('the intent field %s: null, and the message says why', async (_name, args) => {
    const { adapter, runner } = setup();
    const [tool] = agentTools([adapter], ['sandbox_records_create']);
    const answer = await callAgentTool(agentRunner(runner), tool!, args);
    expect(answer).toMatchObject({ status: 'invalid-input', businessOperationId: null });
    expect(answer.message).toMatch(/No business-operation id: the intent fields \(ref\) do not give one/);
  });
});

describe("a failure that is not the agent's to answer", () => {
  // MCP sends it to the agent as the error's message, the AI SDK to the model as the tool error: DynamoDB's refusal
  // names the role session (often a person's address), a driver's may quote a connection string.
  it('reaches the agent with the person and the credential blanked, as the same error', async () => {
    const { adapter, ledger, runner } = setup();
    const who = 'assumed-role/AWSReservedSSO_Admin_0f1e/jane.doe@example.com';
    ledger.claim = () =>
      Promise.reject(
        new LedgerError(
          `claim failed: User: arn:aws:sts::123456789012:${who} is not authorized (postgres://app:s3cr3t-pw@db/x)`,
        ),
      );
    const [tool] = agentTools([adapter], ['sandbox_records_create']);
    const failed = await callAgentTool(agentRunner(runner), tool!, { ref: 'l-1' }).catch((e: Error) => e);
    expect(LedgerError.isInstance(failed)).toBe(true);
    expect((failed as Error).message).toContain('is not authorized');
    for (const leak of ['jane.doe', 's3cr3t-pw']) expect((failed as Error).message).not.toContain(leak);
  });
});

describe('the refusal mapping', () => {
  it('answers every refusal type, and nothing else', () => {
    const refusals = [
      new PayloadLimitError('params', 'bytes', 2, 1),
      new InvalidParamsError('x.op', [{ path: 'a', message: 'is required' }]),
      new InvalidIntentError('a', 'not JSON'),
      new InvalidIdError('business-operation id', 'bad id', 'too long'),
      new ConflictError({ businessOperationId: 'x.op:1', field: 'params', detail: 'other params', paths: ['a'] }),
    ];
    for (const e of refusals)
      expect(['invalid-input', 'conflict'], e.name).toContain(refusalAnswer(e, () => null)?.status);
    expect(refusalAnswer(new Error('ledger down'), () => null)).toBeNull();
  });
});

describe('the needs-human answer offers a corrected call only where the runner will send one', () => {
  it('a rejection that left an object at the provider: no "corrected request" promise, and the corrected call sends nothing', async () => {
    const { runner, tool, sent } = rejectingTool({
      reason: 'card-declined',
      message: 'declined',
      created: 'pi_1',
      fields: [{ path: 'card', message: 'was declined' }],
    });
    const first = await callAgentTool(agentRunner(runner), tool!, { ref: 'o-12', note: 'card a' });
    expect(first.status).toBe('needs-human');
    expect(first.message).not.toMatch(/sent as a corrected request/);
    const corrected = await callAgentTool(agentRunner(runner), tool!, { ref: 'o-12', note: 'card b' });
    expect(corrected.status).toBe('conflict');
    expect(sent()).toBe(1);
  });
});

describe('a rejection naming an intent field: its correction is a new operation, not a revision of this one', () => {
  it('neither the packet nor the answer offers a corrected request under the same intent; a corrected call is sent once', async () => {
    const { runner, ledger, tool, sent } = rejectingTool({
      reason: 'validation',
      message: 'ref is malformed',
      fields: [{ path: 'ref', message: 'is malformed' }],
    });
    const first = await callAgentTool(agentRunner(runner), tool, { ref: 'o-60', note: 'a' });
    expect(first.status).toBe('needs-human');
    expect(first.message).not.toMatch(/sent as a corrected request|other intent fields/);
    expect(first.message).toMatch(
      /ref \(is malformed\)\. One is an intent field: a call with it corrected is a new operation/,
    );
    const { handoff } = (await operationStatus(ledger, first.businessOperationId!))!;
    expect(handoff!.safeNextActions.find((a) => a.action === 'resend-with')).toMatchObject({ safe: false });
    const resume = handoff!.safeNextActions.find((a) => a.action === 'resume');
    expect(resume).toMatchObject({ safe: false, why: expect.stringMatching(/new operation/) });
    expect(resume!.why).not.toMatch(/resend-with\)/);
    const corrected = await callAgentTool(agentRunner(runner), tool, { ref: 'o-61', note: 'a' });
    expect(corrected.businessOperationId).not.toBe(first.businessOperationId);
    expect(sent()).toBe(2);
  });
});

describe('a not-found rejection naming an intent field: the object may exist out of reach, so nothing says abandon it', () => {
  it("the packet keeps not-found's way out (fix the access, resume --force) and resend-with says only that a correction is another intent", async () => {
    const { runner, ledger, tool } = rejectingTool({
      reason: 'not-found',
      message: 'no such order',
      fields: [{ path: 'ref', message: 'unknown' }],
    });
    const first = await callAgentTool(agentRunner(runner), tool, { ref: 'o-62', note: 'a' });
    expect(first.status).toBe('needs-human');
    expect(first.message).not.toMatch(/abandons this one/);
    const { handoff } = (await operationStatus(ledger, first.businessOperationId!))!;
    const action = (name: string) => handoff!.safeNextActions.find((a) => a.action === name);
    expect(action('resume')).toMatchObject({ safe: false, why: expect.stringMatching(/fix the access, then resume/) });
    expect(action('resend-with')).toMatchObject({ safe: false, why: expect.stringMatching(/another intent/) });
    expect(action('resend-with')!.why).not.toMatch(/abandon it/);
  });
});

/** A rejection nothing applied: the agent's correction is a new revision. */
const NOTE_TOO_LONG = {
  reason: 'validation',
  message: 'note is too long',
  fields: [{ path: 'note', message: 'is too long' }],
};

describe('a correction after the agent runner was built again (a restart)', () => {
  it('is first answered as a conflict that says the same call sends it; that call does', async () => {
    const { runner, tool, sent } = rejectingTool(NOTE_TOO_LONG);
    expect(await callAgentTool(agentRunner(runner), tool, { ref: 'o-40', note: 'long' })).toMatchObject({
      status: 'needs-human',
    });
    const restarted = agentRunner(runner);
    const corrected = await callAgentTool(restarted, tool, { ref: 'o-40', note: 'short' });
    expect(corrected).toMatchObject({ status: 'conflict', storedMayApply: false });
    expect(corrected.message).toMatch(/call again with these arguments to send them as a corrected request/);
    expect(sent()).toBe(1);
    await callAgentTool(restarted, tool, { ref: 'o-40', note: 'short' });
    expect(sent()).toBe(2);
  });
});

describe('a correction first answered to a call that followed another (followUp, a duplicate joined in flight)', () => {
  it('tells the end all the same: the next call with those arguments sends them', async () => {
    const { runner, tool, sent } = rejectingTool(NOTE_TOO_LONG);
    const agent = agentRunner(runner);
    await callAgentTool(agentRunner(runner), tool, { ref: 'o-41', note: 'long' });
    const corrected = await callAgentTool(agent, tool, { ref: 'o-41', note: 'short' }, { followUp: true });
    expect(corrected).toMatchObject({ status: 'conflict', storedMayApply: false });
    await callAgentTool(agent, tool, { ref: 'o-41', note: 'short' });
    expect(sent()).toBe(2);
  });
});

describe('agentTools: the operations to expose', () => {
  it('a name in `only` that matches no operation is refused (RunnerConfigurationError), not dropped to fewer tools', () => {
    const { adapter } = setup();
    expect(agentTools([adapter], ['sandbox_records_create']).map((t) => t.name)).toEqual(['sandbox_records_create']);
    for (const typo of ['sandbox.record.create', 'sandbox_records_creat', 'Sandbox.records.create'])
      expect(() => agentTools([adapter], ['sandbox.records.create', typo]), typo).toThrow(
        expect.objectContaining({ name: 'RunnerConfigurationError', message: expect.stringContaining(typo) }),
      );
  });
});

describe('the tool description of an operation that is not idempotent', () => {
  // A content-named create (a post's text, an issue's title) corrected after no answer is another operation: one more.
  it('says a changed intent field does it once more, and to call again with the same arguments first', () => {
    const [tool] = agentTools([setup().adapter], ['sandbox_records_create']);
    expect(tool!.description).toMatch(/does it once more.*call again with the same arguments first/);
  });
});

describe('the answer for an operation a person closed', () => {
  it('abandoned after a rejection with field errors: no "corrected request" promise and no waiting for a person; a corrected call sends nothing', async () => {
    const { provider, runner, ledger, tool, sent } = rejectingTool(NOTE_TOO_LONG);
    const first = await callAgentTool(agentRunner(runner), tool!, { ref: 'o-13', note: 'long' });
    expect(first.message).toMatch(/sent as a corrected request/); // the packet offers resend-with
    expect(first.message).not.toMatch(/other intent fields/);
    expect(first.message).toMatch(/^Handed to a person: [^.]*\. Do not retry/); // the explanation ends its sentence
    await runner.resolve(first.businessOperationId!, { action: 'abandon' }, { by: 'ops' });
    const again = await callAgentTool(agentRunner(runner), tool!, { ref: 'o-13', note: 'long' });
    expect(again.message).not.toMatch(/sent as a corrected request/);
    expect(again.message).toMatch(/abandoned/);
    expect(again).toMatchObject({ handoff: { safeNextActions: [] } });
    expect(await operationStatus(ledger, first.businessOperationId!)).toMatchObject({
      state: 'abandoned',
      handoff: { safeNextActions: [] },
    });
    expect(await callAgentTool(agentRunner(runner), tool!, { ref: 'o-13', note: 'short' })).toMatchObject({
      status: 'conflict',
    });
    expect(sent()).toBe(1);
    expect(provider.count()).toBe(0);
  });
});

describe('retrysafe_status for an operation handed off once and no longer waiting for a person', () => {
  for (const how of ['resume', 'mark-done'] as const) {
    it(`${how === 'resume' ? 'resumed and done' : 'marked done'}: it offers none of the old packet's next actions`, async () => {
      const { provider, adapter, runner, ledger } = setup({}, { policy: { maxAttempts: 1 } });
      provider.failNext({ kind: 'not-applied', retryAfterMs: 10 });
      const first = await runner.run(adapter, 'records.create', { params: { ref: `o-st-${how}` } });
      expect(first.status === 'handed-off' && first.packet.safeNextActions.length).toBeGreaterThan(0);
      const id = first.businessOperationId;
      const resolution = how === 'resume' ? { action: how } : { action: how, providerRef: 'rec_checked' };
      await runner.resolve(id, resolution, { adapters: [adapter], by: 'ops' });
      expect(await operationStatus(ledger, id)).toMatchObject({ state: 'succeeded', handoff: { safeNextActions: [] } });
    });
  }
});

describe('retrysafe_status of an operation not finished', () => {
  // `dispatched` with no result reads as "failed" to a model, which may then redo it under another order reference.
  it('says it may already have taken effect: call it again with the same arguments, not under other intent fields', async () => {
    const { adapter, runner, ledger } = setup();
    const atGate = latch();
    const gate = latch();
    const held = scripted(adapter, (_n, send) => (atGate.resolve(), gate.promise.then(send)));
    const [tool] = agentTools([held], ['sandbox_records_create']);
    const first = callAgentTool(agentRunner(runner), tool!, { ref: 'o-open' });
    await atGate.promise;
    const [row] = await ledger.list();
    const status = await operationStatus(ledger, row!.businessOperationId);
    expect(status).toMatchObject({ state: 'dispatched', result: null });
    expect(status.message).toMatch(/may already have taken effect/);
    expect(status.message).toMatch(/same arguments/);
    expect(status.message).toMatch(/do not redo it under other intent fields/);
    gate.resolve();
    expect(await first).toMatchObject({ status: 'done' });
  });
});

describe('the needs-human answer names what a rejection left at the provider', () => {
  it('also when the provider named no field: the object is named and a new call is said to make a second one', async () => {
    const { runner, tool } = rejectingTool({ reason: 'card-declined', message: 'declined', created: 'pi_2' });
    const first = await callAgentTool(agentRunner(runner), tool!, { ref: 'o-14' });
    expect(first.status).toBe('needs-human');
    expect(first.message).toMatch(/pi_2/);
    expect(first.message).toMatch(/a new call would make a second one/);
  });
});

describe('the needs-human answer to an operation whose effect may exist', () => {
  it('tells the agent not to redo it under other intent fields (a new operation would make it twice)', async () => {
    const { provider, adapter, runner } = setup({ replays: false, lookup: 'none' });
    const [tool] = agentTools([adapter], ['sandbox_records_create']);
    provider.failNext({ kind: 'unknown-after-commit' });
    const first = await callAgentTool(agentRunner(runner), tool!, { ref: 'o-18' });
    expect(first.status).toBe('needs-human');
    expect(first.message).toMatch(/do not redo it under other intent fields/i);
    expect(provider.count()).toBe(1);
  });
});

describe('the conflict answer to a correction the runner refuses', () => {
  it('a rejection that left an object: the answer does not send the agent to other intent fields', async () => {
    const { runner, tool } = rejectingTool({ reason: 'card-declined', message: 'declined', created: 'pi_3' });
    expect((await callAgentTool(agentRunner(runner), tool!, { ref: 'o-15', note: 'card a' })).status).toBe(
      'needs-human',
    );
    const corrected = await callAgentTool(agentRunner(runner), tool!, { ref: 'o-15', note: 'card b' });
    expect(corrected.status).toBe('conflict');
    expect(corrected.message).toMatch(/pi_3/);
    expect(corrected.message).not.toMatch(/change an intent field/);
    expect(corrected.message).toMatch(/a person must resolve/i);
  });

  it('an operation that succeeded with other params: a different operation is still a change of an intent field', async () => {
    const { adapter, runner } = setup();
    const [tool] = agentTools([adapter], ['sandbox_records_create']);
    expect((await callAgentTool(agentRunner(runner), tool!, { ref: 'o-16', note: 'a' })).status).toBe('done');
    const other = await callAgentTool(agentRunner(runner), tool!, { ref: 'o-16', note: 'b' });
    expect(other).toMatchObject({ status: 'conflict', message: expect.stringMatching(/change an intent field/) });
    expect(other.message).toMatch(/the operation is done with other params/);
  });

  it('is told from the conflict itself, not its words: a param named like the refusal changes nothing', async () => {
    const { adapter, runner } = setup();
    const [tool] = agentTools([adapter], ['sandbox_records_create']);
    const field = 'note that cannot be superseded';
    expect((await callAgentTool(agentRunner(runner), tool!, { ref: 'o-17', [field]: 'a' })).status).toBe('done');
    const other = await callAgentTool(agentRunner(runner), tool!, { ref: 'o-17', [field]: 'b' });
    expect(other).toMatchObject({ status: 'conflict', message: expect.stringMatching(/change an intent field/) });
    expect(other.message).not.toMatch(/a person must resolve/i);
  });
});

describe('a conflict with a request that may still land or has landed', () => {
  const stored = { status: 'conflict', storedMayApply: true, needsPerson: false };
  const repeat = (message: string) => {
    expect(message).toMatch(/do not redo it under other intent fields/i);
    expect(message).toMatch(/call again with the original arguments/);
  };

  it('a run stopped after an unknown attempt, taken by the next call: the typed field and the answer say so', async () => {
    const { provider, adapter, runner } = setup();
    const stop = new AbortController();
    const timedOut = { kind: 'unknown', cause: 'timeout', message: 'no answer' } as const;
    const held = scripted(adapter, (n, send) => (n === 0 ? send().then(() => (stop.abort(), timedOut)) : undefined));
    const params = { ref: 'o-30', note: 'a' };
    await expect(runner.run(held, 'records.create', { params, signal: stop.signal })).rejects.toThrow();
    const conflict = await runner.run(held, 'records.create', { params: { ...params, note: 'b' } }).catch((e) => e);
    expect(ConflictError.isInstance(conflict) && conflict.storedMayApply && !conflict.needsPerson).toBe(true);
    expect(conflict.message).toMatch(/a re-send with the same key/); // the claim took the stopped run's lease
    const [tool] = agentTools([held], ['sandbox_records_create']);
    const answer = await callAgentTool(agentRunner(runner), tool!, { ...params, note: 'b' });
    expect(answer).toMatchObject(stored);
    repeat(answer.message);
    expect(await callAgentTool(agentRunner(runner), tool!, params)).toMatchObject({ status: 'done', adopted: true });
    expect(provider.count()).toBe(1);
  });

  it("an operation that succeeded with other params: its result is the original arguments' to get", async () => {
    const { adapter, runner } = setup();
    const [tool] = agentTools([adapter], ['sandbox_records_create']);
    expect((await callAgentTool(agentRunner(runner), tool!, { ref: 'o-31', note: 'a' })).status).toBe('done');
    const other = await callAgentTool(agentRunner(runner), tool!, { ref: 'o-31', note: 'b' });
    expect(other).toMatchObject(stored);
    repeat(other.message);
    // A correction of what it made is a change to that object, never a new operation that makes a second one.
    expect(other.message).toMatch(/a correction of it is not a new operation/i);
    expect(other.message).toMatch(/update/);
  });

  it('a correction nothing stands against is not one', () => {
    const e = new ConflictError({
      businessOperationId: 'x.op:1',
      field: 'params',
      detail: 'other params',
      paths: ['a'],
    });
    expect(e.storedMayApply).toBe(false);
    expect(refusalAnswer(e, () => null)?.message).not.toMatch(/other intent fields/);
  });
});

describe('the pending hand-offs an agent is shown', () => {
  it('say when there are more than the list holds, so 100 is never read as all of them', async () => {
    const { runner, ledger, tool } = rejectingTool({ reason: 'validation', message: 'no' });
    for (let i = 0; i < 101; i++) await callAgentTool(agentRunner(runner), tool, { ref: `h-${i}` });
    const some = await pendingHandoffs(ledger);
    expect(some.handoffs).toHaveLength(100);
    expect(some.truncated).toBe(true);
    await runner.resolve(some.handoffs[0]!.businessOperationId, { action: 'abandon' }, { by: 'ops' });
    expect(await pendingHandoffs(ledger)).toMatchObject({ truncated: false });
  });
});
