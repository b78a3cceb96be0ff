// An agent's handle is the business-operation id: no answer it is shown (a tool's, retrysafe_status, retrysafe_handoffs)
// quotes a run or attempt id, which it could mistake for one to send back.
import type { Outcome } from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import { agentRunner, agentTools, callAgentTool, operationStatus, pendingHandoffs } from '@retrysafe/core/agent';
import { describe, expect, it } from 'vitest';
import { gated, scripted, setup } from './helpers.js';

const CONFLICT: Outcome = { kind: 'rejected', reason: 'conflict', message: 'key in use' };
const ACTION: Outcome = { kind: 'rejected', reason: 'action-required', message: 'open the URL first' };
const toolOf = (adapter: Parameters<typeof agentTools>[0][number]) =>
  agentTools([adapter], ['sandbox_records_create'])[0]!;

describe('the answers an agent is shown', () => {
  it('of every kind name no run or attempt id', async () => {
    const { provider, adapter, ledger, runner, clock } = setup({ replays: false, lookup: 'none' });
    const answers: unknown[] = [];
    const call = async (a: typeof adapter, args: Record<string, unknown>) => {
      const answer = await callAgentTool(agentRunner(runner), toolOf(a), args);
      answers.push(answer);
      return answer;
    };
    await call(adapter, { ref: 'i-done' });
    await call(adapter, { ref: 'i-done' });
    await call(adapter, { ref: 'i-done', note: 'other' });
    await call(adapter, { ref: 7 });
    const conflicting = scripted(adapter, () => CONFLICT);
    await call(conflicting, { ref: 'i-conflict', note: 'a' });
    await call(conflicting, { ref: 'i-conflict', note: 'b' });
    await call(
      scripted(adapter, () => ACTION),
      { ref: 'i-user' },
    );
    provider.failNext({ kind: 'unknown-after-commit' });
    const unknown = await call(adapter, { ref: 'i-unknown' });
    await runner.resolve(unknown.businessOperationId!, { action: 'abandon' }, { adapters: [adapter], by: 'ops' });
    await call(adapter, { ref: 'i-unknown' });
    const { held, atGate, gate } = gated(adapter);
    const first = callAgentTool(agentRunner(runner), toolOf(held), { ref: 'i-held' });
    await atGate.promise;
    const other = createRunner({ ledger, clock, owner: 'other', policy: { waitForOtherMs: 0 } });
    answers.push(await callAgentTool(agentRunner(other), toolOf(held), { ref: 'i-held' }));
    for (const r of await ledger.list())
      answers.push(await operationStatus(ledger, r.businessOperationId, { now: clock.now() }));
    answers.push(await pendingHandoffs(ledger));
    gate.resolve();
    answers.push(await first);
    // A run id the host gave that is not one: the host's error, not invalid input for the agent to correct.
    const host = callAgentTool(agentRunner(runner), toolOf(adapter), { ref: 'i-run' }, { runId: 'not a run id' });
    await expect(host).rejects.toMatchObject({ name: 'InvalidIdError', kind: 'run id' });
    expect(answers.map((a) => (a as { status?: string }).status)).toEqual(
      expect.arrayContaining(['done', 'in-progress', 'needs-human', 'conflict', 'invalid-input']),
    );
    expect(JSON.stringify(answers)).toMatch(/rejected as a conflict/);
    const ids = new Set<string>();
    for (const r of await ledger.list())
      for (const receipt of await ledger.receipts(r.businessOperationId)) ids.add(receipt.attemptId).add(receipt.runId);
    const shown = JSON.stringify(answers);
    expect([...ids].filter((id) => shown.includes(id))).toEqual([]);
  });
});
