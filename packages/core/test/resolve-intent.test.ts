// An adapter that resolves an intent field (doResolveIntent) is asked only once every other intake check passed, and
// the id is derived from its answer: two spellings it resolves to one value are one operation.

import {
  AdapterConfigurationError,
  businessOperationId,
  IntentLookupError,
  InvalidIntentError,
  InvalidParamsError,
} from '@retrysafe/contract';
import { PAYLOAD_LIMITS } from '@retrysafe/contract/ledger';
import { intentLookupFailure } from '@retrysafe/contract/provider';
import {
  AdapterContractError,
  createMemoryLedger,
  createRunner,
  createVirtualClock,
  type LogEntry,
} from '@retrysafe/core';
import { agentRunner, agentTools, callAgentTool } from '@retrysafe/core/agent';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { scripted } from './helpers.js';

const OP = 'records.create';

/** `fails(n)`: what the n-th look-up throws (1-based), or nothing when it answers. */
function rig(fails: (n: number) => Error | undefined = () => undefined, logger?: (e: LogEntry) => void) {
  const clock = createVirtualClock();
  const ledger = createMemoryLedger();
  const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now, sleep: clock.sleep });
  const asked: unknown[] = [];
  const plain = createSandboxAdapter({ provider });
  const adapter = {
    ...plain,
    operations: { [OP]: { ...plain.operations[OP]!, resolvesIntent: true } },
    // The provider's own id of a ref: case does not matter to it.
    doResolveIntent: async (_op: string, intent: Record<string, unknown>) => {
      asked.push(intent);
      const failure = fails(asked.length);
      if (failure) throw failure;
      return { ...intent, ref: String(intent.ref).toLowerCase() };
    },
  };
  return {
    provider,
    plain,
    adapter,
    asked,
    clock,
    ledger,
    runner: createRunner({
      ...{ ledger, clock, random: () => 0.5 },
      ...(logger && { logger, redact: { patterns: [/Rec-\d/g] } }),
    }),
  };
}

describe('doResolveIntent', () => {
  it('two spellings the adapter resolves to one value ⇒ one operation, one record, the id of the resolved intent', async () => {
    const { provider, adapter, runner } = rig();
    const first = await runner.run(adapter, OP, { params: { ref: 'Rec-1' } });
    expect(first.businessOperationId).toBe(businessOperationId(`sandbox.${OP}`, { ref: 'rec-1' }));
    expect(await runner.run(adapter, OP, { params: { ref: 'rec-1' } }).catch((e: unknown) => e)).toMatchObject({
      businessOperationId: first.businessOperationId,
    });
    expect(provider.count()).toBe(1);
  });

  it('params the schema refuses ⇒ InvalidParamsError, the adapter never asked', async () => {
    const { adapter, asked, runner } = rig();
    await expect(runner.run(adapter, OP, { params: { ref: 7 } as never })).rejects.toThrow(InvalidParamsError);
    expect(asked).toEqual([]);
  });
  it('an intent it returns that core intake refuses is the adapter’s fault: AdapterContractError, and the agent is not told to correct its arguments', async () => {
    const { adapter: base, runner } = rig();
    const bad = [{ ref: 'x'.repeat(PAYLOAD_LIMITS.maxBytes + 1) }, { ref: 1n }];
    for (const returned of bad) {
      const adapter = { ...base, doResolveIntent: async () => returned };
      await expect(runner.run(adapter, OP, { params: { ref: 'Rec-1' } })).rejects.toThrow(AdapterContractError);
      const [tool] = agentTools([adapter], ['sandbox_records_create']);
      expect(await callAgentTool(agentRunner(runner), tool!, { ref: 'Rec-1' })).toMatchObject({
        status: 'invalid-input',
        businessOperationId: null,
        message: expect.stringMatching(/doResolveIntent.*a person must fix the adapter/s),
      });
    }
  });
});

// An adapter written without defineAdapter (or a wrapper that rebuilds `operations`) is checked as the frame checks:
// a resolver no operation declares, or a declaration with no resolver, would drop the resolution silently.
describe('doResolveIntent and resolvesIntent that disagree', () => {
  it('are refused before anything is claimed or sent, by run, recover and resolve alike', async () => {
    const { provider, plain, adapter, asked, ledger, runner } = rig();
    const { doResolveIntent: _, ...declaredOnly } = adapter;
    for (const broken of [{ ...adapter, operations: plain.operations }, declaredOnly]) {
      await expect(runner.run(broken, OP, { params: { ref: 'Rec-8' } })).rejects.toThrow(AdapterConfigurationError);
      await expect(runner.recover({ adapters: [broken] })).rejects.toThrow(/resolvesIntent/);
    }
    expect([asked, provider.count(), await ledger.list({})]).toEqual([[], 0, []]);
  });
});

describe('doResolveIntent the provider could not answer now (IntentLookupError)', () => {
  const busy = () => new IntentLookupError('ref', 'HTTP 503', 5_000);

  it('asked again after the wait it names, within the policy: one operation, sent once', async () => {
    const { provider, adapter, asked, clock, runner } = rig((n) => (n === 1 ? busy() : undefined));
    const startedAt = clock.now();
    expect(await runner.run(adapter, OP, { params: { ref: 'Rec-2' } })).toMatchObject({ status: 'done' });
    expect([asked.length, provider.count(), clock.now() - startedAt >= 5_000]).toEqual([2, 1, true]);
  });

  it('each failed look-up is logged with the wait before the next, redacted, under no business-operation id', async () => {
    const logs: LogEntry[] = [];
    const { adapter, runner } = rig(
      (n) => (n === 1 ? new IntentLookupError('ref', 'Rec-6 busy', 5_000) : undefined),
      (e) => void logs.push(e),
    );
    const done = await runner.run(adapter, OP, { params: { ref: 'Rec-6' } });
    const retry = logs.find((e) => e.event === 'intent-lookup');
    expect(retry).toMatchObject({ level: 'warn', operation: `sandbox.${OP}`, decision: 'retry', delayMs: 5_000 });
    expect(retry && 'businessOperationId' in retry).toBe(false);
    expect(retry?.message).not.toMatch(/Rec-6/);
    expect(
      logs
        .filter((e) => e.businessOperationId !== undefined)
        .every((e) => e.businessOperationId === done.businessOperationId),
    ).toBe(true);
  });

  it('still failing: IntentLookupError once the policy’s attempts are used, nothing claimed or sent', async () => {
    const { provider, adapter, asked, ledger, runner } = rig(busy);
    const e = await runner.run(adapter, OP, { params: { ref: 'Rec-3' } }).catch((x: unknown) => x);
    expect(IntentLookupError.isInstance(e) && e.message).toMatch(/maxAttempts.*nothing was claimed or sent/);
    expect([asked.length, provider.count(), await ledger.list({})]).toEqual([4, 0, []]);
  });

  it('an agent is told to call again later, not that its arguments are invalid; a refusal names why', async () => {
    const refused = new InvalidIntentError('ref', 'the provider knows no record Rec-5');
    const { adapter, runner } = rig((n) => (n === 1 ? refused : busy()));
    const [tool] = agentTools([adapter], ['sandbox_records_create']);
    const agent = agentRunner(runner);
    // Refused before the look-up answered: the id of the spelling is no operation's, so none is told.
    const invalid = await callAgentTool(agent, tool!, { ref: 'Rec-5' });
    expect(invalid).toMatchObject({
      status: 'invalid-input',
      businessOperationId: null,
      fields: [{ path: 'ref', message: 'the provider knows no record Rec-5' }],
    });
    expect(invalid.message).toMatch(
      /No business-operation id: .*what the provider resolves the intent fields \(ref\) to/,
    );
    const later = await callAgentTool(agent, tool!, { ref: 'Rec-4' });
    expect(later).toMatchObject({ status: 'unavailable', businessOperationId: null, retryAfterMs: 5_000 });
    expect(later.message).toMatch(/nothing was claimed or sent.*call again with the same arguments in about 5 s/i);
  });

  it('an invalid-input answer names no id: before the look-up the intent fields give one the operation never has', async () => {
    const refused = new InvalidIntentError('ref', 'the provider knows no record Rec-6');
    const { adapter, runner } = rig((n) => (n === 1 ? refused : undefined));
    const [tool] = agentTools([adapter], ['sandbox_records_create']);
    const agent = agentRunner(runner);
    for (const args of [{ ref: 'Rec-6' }, { ref: 7 }])
      expect(await callAgentTool(agent, tool!, args)).toMatchObject({
        status: 'invalid-input',
        businessOperationId: null,
      });
    const done = await callAgentTool(agent, tool!, { ref: 'Rec-7' });
    expect(done).toMatchObject({
      status: 'done',
      businessOperationId: businessOperationId(`sandbox.${OP}`, { ref: 'rec-7' }),
    });
  });
});

describe('the run’s time limit (maxElapsedMs) covers the look-up before the claim', () => {
  it('waits spent on the look-up count: a send whose wait would pass the limit is not made', async () => {
    const { adapter, clock, ledger } = rig((n) =>
      n === 1 ? new IntentLookupError('ref', 'HTTP 503', 5_000) : undefined,
    );
    let sends = 0;
    const busy = scripted(adapter, () => (sends++, { kind: 'not-applied', message: 'HTTP 429', retryAfterMs: 5_000 }));
    const runner = createRunner({ ledger, clock, random: () => 0.5, policy: { maxElapsedMs: 8_000 } });
    const startedAt = clock.now();
    await runner.run({ ...busy, doResolveIntent: adapter.doResolveIntent }, OP, { params: { ref: 'Rec-7' } });
    expect([sends, clock.now() - startedAt <= 8_000]).toEqual([1, true]);
  });
});

// The id names the object the params resolved to at first; by a correction the name may belong to another one.
describe('a resend-with after the name changed hands', () => {
  it('the target is read again: nothing sent, handed off saying why', async () => {
    const holder = new Map([['rec-9', 'object-1']]);
    const { provider, adapter, runner } = rig();
    const resolving = {
      ...adapter,
      doResolveIntent: async (_op: string, intent: Record<string, unknown>) => ({
        ...intent,
        ref: holder.get(String(intent.ref)),
      }),
    };
    provider.failNext({ kind: 'rejected' });
    const first = await runner.run(resolving, OP, { params: { ref: 'rec-9', amount: 1 } });
    expect(first.status).toBe('handed-off');
    holder.set('rec-9', 'object-2');
    const resolution = { action: 'resend-with', params: { ref: 'rec-9', amount: 2 } } as const;
    const sent = await runner.resolve(first.businessOperationId, resolution, { adapters: [resolving] });
    expect(provider.count()).toBe(0);
    expect(sent).toMatchObject({ status: 'handed-off', packet: { lastKnown: { message: /another object/ } } });
  });
});

describe('a re-read of the target that cannot be made', () => {
  it('sends nothing and says so: the operation is given back (not-sent), not left as a call that may have gone', async () => {
    // The first call is refused before it left; every later re-read of the name fails, past the run's limit.
    const { adapter, ledger } = rig((n) => (n >= 2 ? new IntentLookupError('ref', 'HTTP 503', 60_000) : undefined));
    const refused = scripted(adapter, () => ({ kind: 'not-applied', neverSent: true, message: 'ECONNREFUSED' }));
    const clock = createVirtualClock();
    const runner = createRunner({ ledger, clock, random: () => 0.5, policy: { maxElapsedMs: 30_000 } });
    const run = runner.run({ ...refused, doResolveIntent: adapter.doResolveIntent }, OP, { params: { ref: 'R-1' } });
    await expect(run).rejects.toMatchObject({ name: 'RetryExhaustedError' });
    expect((await ledger.get(businessOperationId(`sandbox.${OP}`, { ref: 'r-1' })))?.state).toBe('not-sent');
  });

  it('says what is true there: the operation was claimed, so its hand-off never says nothing was claimed', async () => {
    // The name stops naming a record after the first call was refused before it left (as an adapter's 404 says it).
    const notFound = { kind: 'rejected', reason: 'not-found', message: 'HTTP 404' } as const;
    const gone = intentLookupFailure('ref', 'no record has this ref', notFound);
    const { adapter, ledger } = rig((n) => (n >= 2 ? gone : undefined));
    const refused = scripted(adapter, () => ({ kind: 'not-applied', neverSent: true, message: 'ECONNREFUSED' }));
    const runner = createRunner({ ledger, clock: createVirtualClock(), random: () => 0.5 });
    const r = await runner.run({ ...refused, doResolveIntent: adapter.doResolveIntent }, OP, {
      params: { ref: 'R-1' },
    });
    const said = r.status === 'handed-off' ? r.packet.lastKnown.message : r.status;
    expect(said).toMatch(/could not tell which object the params name now \(nothing was sent\): ref: no record/);
    expect(said).not.toMatch(/claimed/);
  });
});

// The params' address may name another object by the time a request arrives: the adapter sends by the object as read.
describe('the target as read', () => {
  it('goes with every send: the one read before the claim with the first, the one read again with a later one', async () => {
    const { provider, adapter, asked, runner } = rig();
    const targets: unknown[] = [];
    const seeing: typeof adapter = {
      ...adapter,
      doExecute: (op, params, ctx) => (targets.push(ctx.target), adapter.doExecute(op, params, ctx)),
    };
    provider.failNext({ kind: 'not-applied' });
    expect(await runner.run(seeing, OP, { params: { ref: 'Rec-3' } })).toMatchObject({ status: 'done', attempts: 2 });
    expect(asked).toHaveLength(2);
    expect(targets).toEqual([{ ref: 'rec-3' }, { ref: 'rec-3' }]);
  });
});
