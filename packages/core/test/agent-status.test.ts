// An agent that repeats a call, or asks retrysafe_status, is told the state in the ledger's words, the truth about it
// and its next step: in flight (ask again when), waiting for the user's step, a person's, abandoned.
import type { Outcome } from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import { agentRunner, agentTools, callAgentTool, operationStatus, pendingHandoffs } from '@retrysafe/core/agent';
import { describe, expect, it } from 'vitest';
import { gated, scripted, setup } from './helpers.js';

const ACTION: Outcome = { kind: 'rejected', reason: 'action-required', message: 'open the URL first' };
const toolOf = (adapter: Parameters<typeof agentTools>[0][number]) =>
  agentTools([adapter], ['sandbox_records_create'])[0]!;

/** A call refused once for the user's step, held at its gate after its claim, and a second runner's owner: `sent` counts
 * the sends. */
async function heldForStep(ref: string) {
  const { adapter, ledger, runner, clock } = setup({ lookup: 'none' });
  const sent = { count: 0 };
  const refusing = scripted(adapter, (n) => (sent.count++, n === 0 ? ACTION : undefined));
  const { held, atGate, gate } = gated(refusing);
  const first = callAgentTool(agentRunner(runner), toolOf(held), { ref });
  await atGate.promise;
  const other = createRunner({ ledger, clock, owner: 'other', policy: { waitForOtherMs: 0 } });
  return { ledger, clock, refusing, held, gate, first, other, sent };
}

describe('the answers to an operation in flight', () => {
  it('say it is in progress and when to ask again, the call and the status alike', async () => {
    const { adapter, ledger, runner, clock } = setup({}, { policy: { leaseMs: 30_000, waitForOtherMs: 0 } });
    const { held, atGate, gate } = gated(adapter);
    const first = callAgentTool(agentRunner(runner), toolOf(held), { ref: 'f-1' });
    await atGate.promise;
    const other = createRunner({ ledger, clock, owner: 'other', random: () => 0.5, policy: { waitForOtherMs: 0 } });
    const again = await callAgentTool(agentRunner(other), toolOf(held), { ref: 'f-1' });
    expect(again).toMatchObject({ status: 'in-progress', retryAfterMs: 30_000 });
    expect(again.message).toMatch(/in progress.* in about 30 s/);
    // A corrected text or title is another operation: it would make a second object beside the one in flight.
    expect(again.message).toMatch(/do not redo it under other intent fields/);
    const status = await operationStatus(ledger, again.businessOperationId!, { now: clock.now() });
    expect(status.found && status.message).toMatch(/^It is dispatched: a run holds it now.* in about 30 s/);
    gate.resolve();
    expect(await first).toMatchObject({ status: 'done' });
  });

  it('followed after in progress: the step the user was asked for, not the request sent again; sent once they took it', async () => {
    const { refusing, held, gate, first, other, sent } = await heldForStep('f-3');
    const agent = agentRunner(other);
    expect(await callAgentTool(agent, toolOf(held), { ref: 'f-3' })).toMatchObject({ status: 'in-progress' });
    gate.resolve();
    expect(await first).toMatchObject({ status: 'needs-human' });
    const followed = await callAgentTool(agent, toolOf(refusing), { ref: 'f-3' });
    expect(followed).toMatchObject({ status: 'needs-human' });
    expect(followed.message).toMatch(/asks the user to take a step/);
    expect(sent.count).toBe(1);
    // Told of the step, the agent's next call is the same request after it: sent again.
    expect(await callAgentTool(agent, toolOf(refusing), { ref: 'f-3' })).toMatchObject({ status: 'done' });
    expect(sent.count).toBe(2);
  });

  it('told the step by retrysafe_status after in progress, the next call is sent', async () => {
    const { ledger, clock, refusing, held, gate, first, other } = await heldForStep('f-4');
    const agent = agentRunner(other);
    const answer = await callAgentTool(agent, toolOf(held), { ref: 'f-4' });
    gate.resolve();
    await first;
    const status = await operationStatus(ledger, answer.businessOperationId!, { agent, now: clock.now() });
    expect(status.found && status.message).toMatch(/asks the user to take a step/);
    expect(await callAgentTool(agent, toolOf(refusing), { ref: 'f-4' })).toMatchObject({ status: 'done' });
  });

  it('followed after in progress by an agent runner built again (a restart): the step, not the request sent again', async () => {
    const { refusing, held, gate, first, other, sent } = await heldForStep('f-5');
    expect(await callAgentTool(agentRunner(other), toolOf(held), { ref: 'f-5' })).toMatchObject({
      status: 'in-progress',
    });
    gate.resolve();
    await first;
    const restarted = agentRunner(other);
    const followed = await callAgentTool(restarted, toolOf(refusing), { ref: 'f-5' });
    expect(followed.message).toMatch(/asks the user to take a step/);
    expect(sent.count).toBe(1);
    expect(await callAgentTool(restarted, toolOf(refusing), { ref: 'f-5' })).toMatchObject({ status: 'done' });
  });

  it('told the step by retrysafe_handoffs after in progress, the next call is sent', async () => {
    const { ledger, refusing, held, gate, first, other } = await heldForStep('f-6');
    const agent = agentRunner(other);
    await callAgentTool(agent, toolOf(held), { ref: 'f-6' });
    gate.resolve();
    await first;
    const { handoffs } = await pendingHandoffs(ledger, { agent });
    expect(handoffs).toMatchObject([{ waitsFor: 'user' }]);
    expect(await callAgentTool(agent, toolOf(refusing), { ref: 'f-6' })).toMatchObject({ status: 'done' });
  });

  it('told a hand-off, resumed by a person and handed off again: the next call is told the new end, not sent', async () => {
    const { adapter, runner } = setup({ lookup: 'none' });
    const sent = { count: 0 };
    const refusing = scripted(adapter, (n) => (sent.count++, n <= 1 ? ACTION : undefined));
    const agent = agentRunner(runner);
    const told = await callAgentTool(agent, toolOf(refusing), { ref: 'f-7' });
    expect(told).toMatchObject({ status: 'needs-human' });
    await runner.resolve(told.businessOperationId!, { action: 'resume' }, { adapters: [refusing], by: 'ops' });
    expect(sent.count).toBe(2);
    expect(await callAgentTool(agent, toolOf(refusing), { ref: 'f-7' })).toMatchObject({ status: 'needs-human' });
    expect(sent.count).toBe(2);
    expect(await callAgentTool(agent, toolOf(refusing), { ref: 'f-7' })).toMatchObject({ status: 'done' });
    expect(sent.count).toBe(3);
  });

  it("resumed by a person, shows no hand-off it no longer waits on (the user's step it was refused for)", async () => {
    const { adapter, ledger, runner, clock } = setup({ lookup: 'none' });
    const refusing = scripted(adapter, (n) => (n === 0 ? ACTION : undefined));
    const { held, atGate, gate } = gated(refusing);
    const answer = await callAgentTool(agentRunner(runner), toolOf(refusing), { ref: 'f-2' });
    const id = answer.businessOperationId!;
    const resumed = runner.resolve(id, { action: 'resume' }, { adapters: [held], by: 'ops' });
    await atGate.promise;
    const status = await operationStatus(ledger, id, { now: clock.now() });
    expect(status).toMatchObject({ state: 'dispatched', handoff: null });
    expect(status.found && status.message).not.toMatch(/step|URL/);
    gate.resolve();
    expect(await resumed).toMatchObject({ status: 'done' });
  });
});

describe('retrysafe_status of an operation at rest says what the tool answers a repeated call', () => {
  it('waiting for the user: the step, not that it may have taken effect', async () => {
    const { adapter, ledger, runner, clock } = setup({ lookup: 'none' });
    const refusing = scripted(adapter, () => ACTION);
    const answer = await callAgentTool(agentRunner(runner), toolOf(refusing), { ref: 's-1' });
    const status = await operationStatus(ledger, answer.businessOperationId!, { now: clock.now() });
    expect(status.found && status.message).toBe(answer.message);
    expect(answer.message).not.toMatch(/may already have taken effect/);
  });

  it("a person's, then abandoned: do not retry", async () => {
    const { provider, adapter, ledger, runner, clock } = setup({ replays: false, lookup: 'none' });
    provider.failNext({ kind: 'unknown-after-commit' });
    const answer = await callAgentTool(agentRunner(runner), toolOf(adapter), { ref: 's-2' });
    const id = answer.businessOperationId!;
    const status = await operationStatus(ledger, id, { now: clock.now() });
    expect(status.found && status.message).toBe(answer.message);
    expect(answer.message).toMatch(/Handed to a person.*Do not retry/);
    await runner.resolve(id, { action: 'abandon' }, { adapters: [adapter], by: 'ops' });
    const abandoned = await operationStatus(ledger, id, { now: clock.now() });
    expect(abandoned.found && abandoned.message).toBe(
      (await callAgentTool(agentRunner(runner), toolOf(adapter), { ref: 's-2' })).message,
    );
    expect(abandoned.found && abandoned.message).toMatch(/abandoned.*Do not retry/);
  });
});

describe('retrysafe_handoffs says whose step each row waits on, in the words a repeated call answers', () => {
  it("the user's step or a person's; none that was resumed or abandoned since", async () => {
    const { provider, adapter, ledger, runner } = setup({ replays: false, lookup: 'none' });
    const user = await callAgentTool(agentRunner(runner), toolOf(scripted(adapter, () => ACTION)), { ref: 'p-1' });
    provider.failNext({ kind: 'unknown-after-commit' });
    const person = await callAgentTool(agentRunner(runner), toolOf(adapter), { ref: 'p-2' });
    provider.failNext({ kind: 'unknown-after-commit' });
    const abandoned = await callAgentTool(agentRunner(runner), toolOf(adapter), { ref: 'p-3' });
    await runner.resolve(abandoned.businessOperationId!, { action: 'abandon' }, { adapters: [adapter], by: 'ops' });
    const refusing = scripted(adapter, (n) => (n === 0 ? ACTION : undefined));
    const { held, atGate, gate } = gated(refusing);
    const resumedId = (await callAgentTool(agentRunner(runner), toolOf(refusing), { ref: 'p-4' })).businessOperationId!;
    const resumed = runner.resolve(resumedId, { action: 'resume' }, { adapters: [held], by: 'ops' });
    await atGate.promise;
    const { handoffs } = await pendingHandoffs(ledger);
    const rows = handoffs.map(({ businessOperationId, waitsFor, message }) => ({
      businessOperationId,
      waitsFor,
      message,
    }));
    expect(rows).toHaveLength(2);
    expect(rows).toEqual(
      expect.arrayContaining([
        { businessOperationId: user.businessOperationId, waitsFor: 'user', message: user.message },
        { businessOperationId: person.businessOperationId, waitsFor: 'person', message: person.message },
      ]),
    );
    expect(user.message).toMatch(/asks the user to take a step/);
    gate.resolve();
    expect(await resumed).toMatchObject({ status: 'done' });
  });
});

describe('retrysafe_status of an id the ledger does not hold', () => {
  // A model may send an attempt or run id it read in a message: "not found" must not read as "never done".
  it('names the id to send, and that not found is not "not done"', async () => {
    const { adapter, ledger, runner, clock } = setup();
    const done = await runner.run(adapter, 'records.create', { params: { ref: 'n-1' } });
    const attemptId = done.status === 'done' ? done.receipts[0]!.attemptId : '';
    const status = await operationStatus(ledger, attemptId, { now: clock.now() });
    expect(status).toMatchObject({ found: false, businessOperationId: attemptId });
    expect('message' in status && status.message).toMatch(/businessOperationId an operation tool answered/);
    expect('message' in status && status.message).toMatch(/not a run or attempt id/);
    expect('message' in status && status.message).toMatch(/not found does not mean not done/);
  });
});
