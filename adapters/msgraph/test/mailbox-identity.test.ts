// One mailbox spelled three ways (`me`, the signed-in user's UPN, its object id) is one mailbox at Graph: a retry an
// agent respells must be the same operation, never a second mail. Two users stay two mailboxes.
import { ConflictError, InvalidIntentError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { createMsGraphAdapter } from '../src/index.js';
import { SANDBOX_SIGNED_IN_USER, startMsGraphSandbox } from '../src/sandbox/index.js';
import { closedPortUrl, mailParams, TOKEN } from './helpers.js';

async function rig(signedInUser?: null) {
  const sandbox = closeAfterTest(await startMsGraphSandbox({ accessToken: TOKEN, signedInUser }));
  const adapter = createMsGraphAdapter({ accessToken: TOKEN, baseUrl: `${sandbox.url}/` });
  return { sandbox, adapter, runner: createRunner({ ledger: createMemoryLedger(), random: () => 0.5 }) };
}

const { id, userPrincipalName } = SANDBOX_SIGNED_IN_USER;

describe('mail.send: the mailbox is the user Graph resolves it to', () => {
  for (const respelled of [userPrincipalName, userPrincipalName.toUpperCase(), id.toUpperCase()])
    it(`sent from me, then again from ${respelled} ⇒ one operation, one mail`, async () => {
      const { sandbox, adapter, runner } = await rig();
      expect(await runner.run(adapter, 'mail.send', { params: mailParams(1) })).toMatchObject({ status: 'done' });
      const again = await runner
        .run(adapter, 'mail.send', { params: mailParams(1, respelled) })
        .catch((e: unknown) => e);
      expect(ConflictError.isInstance(again) && again.paths).toEqual(['mailbox']);
      expect(sandbox.count('mail.send')).toBe(1);
    });

  it('the same mail from another user ⇒ another operation, a second mail', async () => {
    const { sandbox, adapter, runner } = await rig();
    await runner.run(adapter, 'mail.send', { params: mailParams(1, 'ann@contoso.test') });
    await runner.run(adapter, 'mail.send', { params: mailParams(1, 'bob@contoso.test') });
    await runner.run(adapter, 'mail.send', { params: mailParams(1) });
    expect(sandbox.count('mail.send')).toBe(3);
  });

  it('an app-only token (no signed-in user): a UPN and its object id are one mailbox', async () => {
    const { sandbox, adapter, runner } = await rig(null);
    await runner.run(adapter, 'mail.send', { params: mailParams(2, 'ann@contoso.test') });
    const annId = sandbox.userId('ann@contoso.test');
    await runner.run(adapter, 'mail.send', { params: mailParams(2, annId) }).catch(() => undefined);
    expect(sandbox.count('mail.send')).toBe(1);
  });

  it('Graph cannot say who a UPN is (no answer) ⇒ InvalidIntentError before the claim: no row, nothing sent', async () => {
    const ledger = createMemoryLedger();
    const adapter = createMsGraphAdapter({ accessToken: TOKEN, baseUrl: await closedPortUrl() });
    const run = createRunner({ ledger, random: () => 0.5 }).run(adapter, 'mail.send', {
      params: mailParams(3, 'ann@contoso.test'),
    });
    await expect(run).rejects.toThrow(InvalidIntentError);
    expect(await ledger.list({})).toEqual([]);
  });
});
