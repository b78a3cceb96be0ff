import { asBusinessOperationId, type RetrySafetyCard } from '@retrysafe/contract';
import { lookupContext } from '@retrysafe/testkit/conformance';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createMsGraphAdapter, type MsGraphAdapter } from '../src/index.js';
import { type MsGraphSandbox, startMsGraphSandbox } from '../src/sandbox/index.js';
import { mailParams, TOKEN } from './helpers.js';

// Whether a miss proves absence is the card's rule (the contract's notFoundIsAuthoritative), not the adapter's:
// a mail.send card that bounds its delays makes a miss past them not-found, as the runner would judge it.
vi.mock('../src/msgraph-cards.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/msgraph-cards.js')>();
  const { boundedLookup } = await import('@retrysafe/testkit/conformance');
  return { ...real, mailSendCard: boundedLookup(real.mailSendCard as RetrySafetyCard, '1m', '1m') };
});

const MIN = 60_000;
let sandbox: MsGraphSandbox;
let adapter: MsGraphAdapter;

beforeEach(async () => {
  sandbox = await startMsGraphSandbox({ accessToken: TOKEN, users: ['alice@contoso.test'] });
  adapter = createMsGraphAdapter({ accessToken: TOKEN, baseUrl: sandbox.url, timeoutMs: 5_000 });
});
afterEach(async () => {
  await sandbox.close();
});

const missAt = (firstDispatchedAt: number, now: number) =>
  adapter.doLookup(
    'mail.send',
    lookupContext(adapter, 'mail.send', asBusinessOperationId('mail-never-sent'), mailParams(1), {
      firstDispatchedAt,
      now,
    }),
  );

describe("mail.send lookup: a miss is judged by the card's bounds", () => {
  it('inside late-apply + consistency delay ⇒ cannot-tell; past them ⇒ not-found', async () => {
    const t0 = Date.now();
    expect((await missAt(t0, t0 + MIN)).kind).toBe('cannot-tell');
    expect((await missAt(t0, t0 + 3 * MIN)).kind).toBe('not-found');
  });
});
