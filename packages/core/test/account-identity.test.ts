// One ledger serving adapters of two accounts of one provider (two tokens, two workspaces): the same params from
// another account are another operation, never adopted with the first account's result, and recover() drives a
// stored operation through its own account's adapter, never another's.

import { AdapterConfigurationError, businessOperationId, LedgerError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock, RunnerConfigurationError } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { stoppedBeforeSend } from './helpers.js';

const OP = 'records.create';

/** Two sandbox providers (two accounts' worlds), an adapter over each, one memory ledger and runner. */
function twoAccounts(accounts: readonly [string | undefined, string | undefined]) {
  const clock = createVirtualClock();
  const world = () => createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now, sleep: clock.sleep });
  const providers = [world(), world()] as const;
  const adapters = providers.map((provider, i) => {
    const account = accounts[i];
    return createSandboxAdapter({ provider, ...(account !== undefined ? { account } : {}) });
  });
  const ledger = createMemoryLedger();
  const runner = createRunner({ ledger, clock, random: () => 0.5 });
  return { clock, providers, adapters: adapters as [(typeof adapters)[0], (typeof adapters)[0]], ledger, runner };
}

describe('account: part of an operation’s identity', () => {
  it('the same params from accounts a and b are two operations: each provider holds one record', async () => {
    const { providers, adapters, runner } = twoAccounts(['a', 'b']);
    const params = { ref: 'acct-1' };
    const first = await runner.run(adapters[0], OP, { params });
    const second = await runner.run(adapters[1], OP, { params });
    expect(first).toMatchObject({ status: 'done', adopted: false });
    expect(second).toMatchObject({ status: 'done', adopted: false });
    expect(first.businessOperationId).not.toBe(second.businessOperationId);
    expect(providers.map((p) => p.count())).toEqual([1, 1]);
    // A repeat on each account adopts its own result.
    const again = [await runner.run(adapters[0], OP, { params }), await runner.run(adapters[1], OP, { params })];
    expect(again).toMatchObject([
      { status: 'done', adopted: true, businessOperationId: first.businessOperationId },
      { status: 'done', adopted: true, businessOperationId: second.businessOperationId },
    ]);
    expect(providers.map((p) => p.count())).toEqual([1, 1]);
  });

  it('the caller’s own id from another account is an intent conflict, never an adoption', async () => {
    const { providers, adapters, runner } = twoAccounts(['a', 'b']);
    const call = { params: { ref: 'acct-2' }, businessOperationId: 'order-42:send' };
    await runner.run(adapters[0], OP, call);
    await expect(runner.run(adapters[1], OP, call)).rejects.toMatchObject({ name: 'ConflictError', field: 'intent' });
    expect(providers.map((p) => p.count())).toEqual([1, 0]);
  });

  it('the stored record carries the account; without one, ids and records are as before', async () => {
    const { adapters, ledger, runner } = twoAccounts(['a', undefined]);
    const withAccount = await runner.run(adapters[0], OP, { params: { ref: 'acct-3' } });
    const without = await runner.run(adapters[1], OP, { params: { ref: 'acct-3' } });
    expect((await ledger.get(withAccount.businessOperationId))!.account).toBe('a');
    expect(Object.hasOwn((await ledger.get(without.businessOperationId))!, 'account')).toBe(false);
    expect(without.businessOperationId).toBe(businessOperationId('sandbox.records.create', { ref: 'acct-3' }));
  });

  it('without account on either adapter, the second is adopted (documented: one account per provider per ledger)', async () => {
    const { providers, adapters, runner } = twoAccounts([undefined, undefined]);
    const params = { ref: 'acct-4' };
    await runner.run(adapters[0], OP, { params });
    expect(await runner.run(adapters[1], OP, { params })).toMatchObject({ status: 'done', adopted: true });
    expect(providers.map((p) => p.count())).toEqual([1, 0]);
  });

  it('an account that is empty, too long or has control characters is a typed error', () => {
    const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
    for (const account of ['', 'x'.repeat(201), 'a\nb'])
      expect(() => createSandboxAdapter({ provider, account })).toThrow(AdapterConfigurationError);
  });
});

describe('recover(): a stored operation goes through its own account’s adapter', () => {
  it('an operation of b left claimed is sent through b’s provider, with [a, b] given', async () => {
    const { clock, providers, adapters, ledger, runner } = twoAccounts(['a', 'b']);
    const stopped = createRunner({ ledger, clock, random: () => 0.5 });
    const signal = stoppedBeforeSend();
    await expect(stopped.run(adapters[1], OP, { params: { ref: 'acct-5' }, signal })).rejects.toSatisfy(
      LedgerError.isInstance,
    );
    clock.advance(120_000);
    const reports = await runner.recover({ adapters: [adapters[0], adapters[1]] });
    expect(reports).toMatchObject([{ action: 'completed', to: 'succeeded' }]);
    expect(providers.map((p) => p.count())).toEqual([0, 1]);
  });

  it('two adapters that both match a record, without accounts: refused, nothing sent, the record left as it is', async () => {
    const { clock, providers, adapters, ledger, runner } = twoAccounts([undefined, undefined]);
    const stopped = createRunner({ ledger, clock, random: () => 0.5 });
    const signal = stoppedBeforeSend();
    await expect(stopped.run(adapters[1], OP, { params: { ref: 'acct-6' }, signal })).rejects.toSatisfy(
      LedgerError.isInstance,
    );
    clock.advance(120_000);
    const [report] = await runner.recover({ adapters: [adapters[0], adapters[1]] });
    expect(report).toMatchObject({ action: 'failed', to: 'claimed', error: { name: 'RunnerConfigurationError' } });
    expect(report!.error!.message).toMatch(/sandbox.*records\.create.*own `account`/s);
    expect(providers.map((p) => p.count())).toEqual([0, 0]);
    // The same adapter given twice is one adapter, not two.
    expect(await runner.recover({ adapters: [adapters[1], adapters[1]] })).toMatchObject([{ action: 'completed' }]);
    expect(providers.map((p) => p.count())).toEqual([0, 1]);
  });

  it('resolve() with two matching adapters refuses with RunnerConfigurationError', async () => {
    const { adapters, runner } = twoAccounts([undefined, undefined]);
    const done = await runner.run(adapters[0], OP, { params: { ref: 'acct-7' } });
    await expect(
      runner.resolve(
        done.businessOperationId,
        { action: 'resend-with', params: { ref: 'acct-7', x: 1 } },
        {
          adapters: [adapters[0], adapters[1]],
        },
      ),
    ).rejects.toSatisfy(RunnerConfigurationError.isInstance);
  });
});
