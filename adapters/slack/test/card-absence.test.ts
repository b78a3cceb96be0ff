import type { RetrySafetyCard } from '@retrysafe/contract';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it, vi } from 'vitest';
import { createSlackAdapter } from '../src/index.js';
import { startSlackSandbox } from '../src/sandbox/index.js';
import { CHANNEL, execute, lookup, postParams, TOKEN } from './helpers.js';

// Whether a history miss proves absence is the card's rule (notFoundIsAuthoritative), and the history window
// reaches as far as the card's late-apply bound: a card that bounds both moves the adapter with the runner.
vi.mock('../src/slack-cards.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/slack-cards.js')>();
  const { boundedLookup } = await import('@retrysafe/testkit/conformance');
  return { ...real, postMessageCard: boundedLookup(real.postMessageCard as RetrySafetyCard, '1m', '5m') };
});

const MIN = 60_000;
const t0 = Date.UTC(2026, 11, 4);

async function setup() {
  let now = t0;
  const sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL], now: () => now }));
  const adapter = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url, timeoutMs: 2000 });
  return { adapter, at: (ms: number) => (now = ms) };
}

describe('chat.postMessage lookup on a card with bounds', () => {
  it('nothing posted: a miss inside late-apply + delay is cannot-tell, past them not-found', async () => {
    const { adapter, at } = await setup();
    const ctx = (now: number) => ({ firstDispatchedAt: t0, lastDispatchedAt: t0, now, clockSkewMarginMs: 30_000 });
    at(t0 + 2 * MIN);
    expect((await lookup(adapter, 'chat.postMessage', postParams(1), 'never-posted', ctx(t0 + 2 * MIN))).kind).toBe(
      'cannot-tell',
    );
    at(t0 + 10 * MIN);
    expect((await lookup(adapter, 'chat.postMessage', postParams(1), 'never-posted', ctx(t0 + 10 * MIN))).kind).toBe(
      'not-found',
    );
  });

  it('a post Slack applied 4 min late (inside the 5 min bound) is found, never called absent', async () => {
    const { adapter, at } = await setup();
    at(t0 + 4 * MIN);
    await execute(adapter, 'chat.postMessage', postParams(2), 'late-one');
    at(t0 + 10 * MIN);
    const out = await lookup(adapter, 'chat.postMessage', postParams(2), 'late-one', {
      firstDispatchedAt: t0,
      lastDispatchedAt: t0,
      now: t0 + 10 * MIN,
      clockSkewMarginMs: 30_000,
    });
    expect(out).toMatchObject({ kind: 'found', outcome: { kind: 'succeeded' } });
  });
});
