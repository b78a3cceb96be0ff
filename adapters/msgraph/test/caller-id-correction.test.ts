import { ConflictError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { expect, it } from 'vitest';
import { createMsGraphAdapter } from '../src/index.js';
import { startMsGraphSandbox } from '../src/sandbox/index.js';
import { eventParams, TOKEN } from './helpers.js';

// A caller that names the event with its own business-operation id and then moves it: the id names one event, so the
// corrected slot is refused as a conflict that says which field differs, never a second event.
it('a caller’s own id, done, then the event’s start corrected ⇒ a ConflictError naming it, one event', async () => {
  const s = closeAfterTest(await startMsGraphSandbox({ accessToken: TOKEN }));
  const runner = createRunner({ ledger: createMemoryLedger(), clock: createVirtualClock(Date.now()) });
  const a = createMsGraphAdapter({ accessToken: TOKEN, baseUrl: s.url, timeoutMs: 5_000 });
  const first = eventParams(1);
  const moved = { ...first, event: { ...first.event, start: { dateTime: '2026-12-02T09:30:00', timeZone: 'UTC' } } };
  const run = (params: typeof first) => runner.run(a, 'events.create', { businessOperationId: 'review-1', params });
  expect(await run(first)).toMatchObject({ status: 'done' });
  const err = await run(moved).catch((e: unknown) => e);
  expect(ConflictError.isInstance(err) && err.paths).toEqual(['event.start.dateTime']);
  expect(s.count('events.create')).toBe(1);
});
