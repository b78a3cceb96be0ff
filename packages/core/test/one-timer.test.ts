// A worker's provider calls wait on the heartbeat's one timer: it renews their leases and also ends a call that
// outlives the run's maxElapsed (never-settling-call.test.ts), so a call arms no timer of its own.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { setup } from './helpers.js';

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('timers per call', () => {
  it('fifty operations, one provider call each, arm one timer between them', async () => {
    // Fake timers: the heartbeat does not tick (and stop while idle) between two runs on a slow machine.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const { adapter, runner, provider } = setup();
    const armed = [vi.spyOn(globalThis, 'setTimeout'), vi.spyOn(globalThis, 'setInterval')];
    for (let i = 0; i < 50; i++) {
      const r = await runner.run(adapter, 'records.create', { params: { ref: `timer-${i}` } });
      expect(r.status).toBe('done');
    }
    expect(provider.count()).toBe(50);
    expect(armed.reduce((n, spy) => n + spy.mock.calls.length, 0)).toBe(1);
  });
});
