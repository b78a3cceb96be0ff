// The history lookup adopts only a message this token's bot posted (its bot_id, read once with auth.test), and only
// one: another app posting the same intent in the channel, or a second post of ours, is never taken for ours.
import { createVirtualClock } from '@retrysafe/core';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { createSlackAdapter } from '../src/index.js';
import { startSlackSandbox } from '../src/sandbox/index.js';
import { CHANNEL, execute, lookup, postParams, TOKEN } from './helpers.js';

const OTHER_APP = 'xoxb-another-retrysafe-app';
const PERSON = 'xoxp-a-person';

async function setup() {
  const clock = createVirtualClock(Date.UTC(2026, 11, 4));
  const sandbox = closeAfterTest(
    await startSlackSandbox({
      token: TOKEN,
      channels: [CHANNEL],
      now: clock.now,
      others: {
        [OTHER_APP]: { userId: 'U0OTHERBOT', botId: 'B0OTHER', appId: 'A0OTHER' },
        [PERSON]: { userId: 'U0PERSON' },
      },
    }),
  );
  const at = (token: string) => createSlackAdapter({ token, baseUrl: sandbox.url });
  const t0 = clock.now();
  const look = (adapter = at(TOKEN), id = 'deploy-1') =>
    lookup(adapter, 'chat.postMessage', postParams(1), id, { firstDispatchedAt: t0, now: clock.now() });
  return { sandbox, at, look };
}

describe('the history lookup checks the poster', () => {
  it("another app's post of the same intent is not ours: not adopted", async () => {
    const { at, look } = await setup();
    await execute(at(OTHER_APP), 'chat.postMessage', postParams(1), 'deploy-1');
    expect((await look()).kind).toBe('cannot-tell');
  });

  it("ours beside another app's post of the same intent: ours is adopted", async () => {
    const { sandbox, at, look } = await setup();
    await execute(at(OTHER_APP), 'chat.postMessage', postParams(1), 'deploy-1');
    const ours = await execute(at(TOKEN), 'chat.postMessage', postParams(1), 'deploy-1');
    expect(await look()).toMatchObject({ kind: 'found', outcome: { providerRef: ours.providerRef } });
    expect(sandbox.calls('auth.test')).toBe(1);
  });

  it('two posts of ours carrying the id: cannot tell, naming both (never the first adopted)', async () => {
    const { at, look } = await setup();
    const adapter = at(TOKEN);
    const one = await execute(adapter, 'chat.postMessage', postParams(1), 'deploy-1');
    const two = await execute(adapter, 'chat.postMessage', postParams(1), 'deploy-1');
    const out = await look(adapter);
    expect(out.kind).toBe('cannot-tell');
    for (const ts of [one.providerRef, two.providerRef]) expect(out.kind === 'cannot-tell' && out.reason).toContain(ts);
  });

  it('a user token (auth.test names no bot): never adopts, as whose post it is cannot be told', async () => {
    const { at, look } = await setup();
    const adapter = at(PERSON);
    await execute(adapter, 'chat.postMessage', postParams(1), 'deploy-1');
    const out = await look(adapter);
    expect(out).toMatchObject({ kind: 'cannot-tell', reason: expect.stringContaining('bot_id') });
  });

  it('auth.test is asked once per adapter, and again after a failed answer', async () => {
    const { sandbox, at, look } = await setup();
    const adapter = at(TOKEN);
    await execute(adapter, 'chat.postMessage', postParams(1), 'deploy-1');
    sandbox.setFaults('auth.test', [{ kind: 'status', status: 500 }]);
    expect((await look(adapter)).kind).toBe('cannot-tell');
    expect((await look(adapter)).kind).toBe('found');
    expect((await look(adapter)).kind).toBe('found');
    expect(sandbox.calls('auth.test')).toBe(2);
  });
});
