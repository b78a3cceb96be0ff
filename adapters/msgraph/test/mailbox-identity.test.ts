// One mailbox spelled three ways (`me`, the signed-in user's UPN, its object id) is one mailbox at Graph: a retry an
// agent respells must be the same operation, never a second mail. Two users stay two mailboxes.
import { ConflictError, InvalidIntentError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { type Fault, startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { lookupContext } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { createMsGraphAdapter } from '../src/index.js';
import { SANDBOX_SIGNED_IN_USER, startMsGraphSandbox } from '../src/sandbox/index.js';
import { closedPortUrl, eventParams, mailParams, TOKEN, taskParams } from './helpers.js';

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

  it('Graph cannot say who a UPN is (no answer) ⇒ IntentLookupError before the claim: no row, nothing sent', async () => {
    const ledger = createMemoryLedger();
    const adapter = createMsGraphAdapter({ accessToken: TOKEN, baseUrl: await closedPortUrl() });
    const clock = createVirtualClock();
    const run = createRunner({ ledger, clock, random: () => 0.5 }).run(adapter, 'mail.send', {
      params: mailParams(3, 'ann@contoso.test'),
    });
    await expect(run).rejects.toMatchObject({ name: 'IntentLookupError', path: 'mailbox' });
    expect(await ledger.list({})).toEqual([]);
  });
});

// The id names the user the UPN resolved to when the operation began: a retry after the UPN passed to another user
// must not send from that user's mailbox.
describe('mail.send: a retry after the UPN passed to another user', () => {
  it('a 429, then the UPN is given to another user ⇒ nothing sent from that mailbox: handed off saying why', async () => {
    const { sandbox, adapter } = await rig();
    const clock = createVirtualClock();
    const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
    sandbox.setFaults('mail.send', (n) => {
      if (n > 1) return 'pass';
      sandbox.assignUser('ann@contoso.test', '00000000-0000-4000-8000-0000000000aa');
      return { kind: 'status', status: 429, retryAfterS: 1 };
    });
    const result = await runner.run(adapter, 'mail.send', { params: mailParams(4, 'ann@contoso.test') });
    expect(sandbox.count('mail.send')).toBe(0);
    expect(result).toMatchObject({ status: 'handed-off', packet: { lastKnown: { message: /another object/ } } });
  });
});

// The UPN read, then given to another user before the send (the claim lies between), or before a lookup: both go to the
// user the read named (ctx.target), never to the mailbox the UPN names by then.
describe('a UPN given to another user between the read and the request', () => {
  const OTHER = '00000000-0000-4000-8000-0000000000bb';
  const cases = [
    ['mail.send', mailParams(7, 'ann@contoso.test')],
    ['events.create', eventParams(7, 'ann@contoso.test')],
    ['todo.tasks.create', taskParams(7, 'tasks', 'ann@contoso.test')],
  ] as const;

  for (const [operation, params] of cases)
    it(`${operation}: created in the mailbox of the user the id names`, async () => {
      const { sandbox, adapter, runner } = await rig();
      const ann = sandbox.userId('ann@contoso.test');
      const moving: typeof adapter = {
        ...adapter,
        async doResolveIntent(...args) {
          const read = await adapter.doResolveIntent!(...args);
          sandbox.assignUser('ann@contoso.test', OTHER);
          return read;
        },
      };
      expect(await runner.run(moving, operation, { params })).toMatchObject({ status: 'done' });
      expect(sandbox.records().map((r) => r.user)).toEqual([ann]);
    });

  for (const [operation, params] of cases)
    it(`${operation}: the lookup reads the mailbox of the user the id names`, async () => {
      const { sandbox, adapter, runner } = await rig();
      const ann = sandbox.userId('ann@contoso.test');
      const { businessOperationId: id } = await runner.run(adapter, operation, { params });
      sandbox.assignUser('ann@contoso.test', OTHER);
      const ctx = lookupContext(adapter, operation, id, params, { target: { ...params, mailbox: ann } });
      expect(await adapter.doLookup(operation, ctx)).toMatchObject({ kind: 'found' });
    });
});

describe('events.create: a timeZone is read as spelled', () => {
  it('UTC, then Etc/UTC under the first businessOperationId ⇒ an intent conflict, one event (the card says so)', async () => {
    const { sandbox, adapter, runner } = await rig();
    const first = eventParams(4);
    const zoned = (timeZone: string) => ({ ...first.event, start: { ...first.event.start, timeZone } });
    const run = (timeZone: string) =>
      runner.run(adapter, 'events.create', {
        params: { ...first, event: zoned(timeZone) },
        businessOperationId: 'review-4',
      });
    expect(await run('UTC')).toMatchObject({ status: 'done' });
    expect(await run('Etc/UTC').catch((e: unknown) => e)).toMatchObject({ name: 'ConflictError', field: 'intent' });
    expect(sandbox.count('events.create')).toBe(1);
  });
});

/** The runner → the Graph client → the fault proxy, whose GET /users/… (the look-up before the claim) meets `faults`. */
async function faultedRig(faults: readonly Fault[]) {
  const sandbox = closeAfterTest(await startMsGraphSandbox({ accessToken: TOKEN }));
  let n = 0;
  const lookup = (r: { method: string; path: string }) => r.method === 'GET' && r.path.includes('/users/');
  const proxy = closeAfterTest(
    await startFaultProxy({ target: sandbox.url, faults: (_c, r) => (lookup(r) ? (faults[n++] ?? 'pass') : 'pass') }),
  );
  const adapter = createMsGraphAdapter({ accessToken: TOKEN, baseUrl: `${proxy.url}/` });
  const ledger = createMemoryLedger();
  const runner = createRunner({ ledger, clock: createVirtualClock(), random: () => 0.5 });
  const send = (i: number) => runner.run(adapter, 'mail.send', { params: mailParams(i, 'ann@contoso.test') });
  return { sandbox, ledger, send, lookups: () => proxy.requests.filter(lookup).length };
}

// The look-up is a read: Graph throttling it or failing now is asked again within the retry policy, and one still
// failing says "try again later" (nothing claimed or sent), never that the caller's mailbox is invalid.
describe('mail.send: the mailbox look-up before the claim', () => {
  it('a 429 with Retry-After, then an answer ⇒ asked again: one operation, one mail', async () => {
    const { sandbox, send, lookups } = await faultedRig([{ kind: 'status', status: 429, retryAfterS: 3 }]);
    expect(await send(4)).toMatchObject({ status: 'done' });
    expect([lookups(), sandbox.count('mail.send')]).toEqual([2, 1]);
  });

  it('a 503 every time ⇒ IntentLookupError once the policy’s attempts are used: no row, nothing sent', async () => {
    const { sandbox, ledger, send, lookups } = await faultedRig(Array(10).fill({ kind: 'status', status: 503 }));
    const e = await send(5).catch((x: unknown) => x);
    expect(e).toMatchObject({ name: 'IntentLookupError', path: 'mailbox' });
    expect(InvalidIntentError.isInstance(e)).toBe(false);
    expect([lookups(), sandbox.count('mail.send'), await ledger.list({})]).toEqual([3, 0, []]);
  });

  it('a user Graph does not know (404) ⇒ InvalidIntentError at once: asked once, no row, nothing sent', async () => {
    const { sandbox, ledger, send, lookups } = await faultedRig([{ kind: 'status', status: 404 }]);
    await expect(send(6)).rejects.toThrow(InvalidIntentError);
    expect([lookups(), sandbox.count('mail.send'), await ledger.list({})]).toEqual([1, 0, []]);
  });
});

describe('white space an agent adds around a subject is not another mail or meeting', () => {
  it('mail.send as "Invoice 4 reminder", then again as "Invoice 4 reminder " ⇒ one operation, one mail', async () => {
    const { sandbox, adapter, runner } = await rig();
    const first = await runner.run(adapter, 'mail.send', { params: mailParams(4) });
    const padded = mailParams(4);
    const params = { ...padded, message: { ...padded.message, subject: `${padded.message.subject} ` } };
    expect(await runner.run(adapter, 'mail.send', { params })).toMatchObject({
      status: 'done',
      adopted: true,
      businessOperationId: first.businessOperationId,
    });
    expect(sandbox.count('mail.send')).toBe(1);
  });

  it('created as "Review 3", then again as " Review 3 " ⇒ one operation, answered with the one event', async () => {
    const { sandbox, adapter, runner } = await rig();
    const first = await runner.run(adapter, 'events.create', { params: eventParams(3) });
    const padded = eventParams(3);
    const params = { ...padded, event: { ...padded.event, subject: ' Review 3 ' } };
    expect(await runner.run(adapter, 'events.create', { params })).toMatchObject({
      status: 'done',
      adopted: true,
      businessOperationId: first.businessOperationId,
    });
    expect(sandbox.count('events.create')).toBe(1);
  });
});
