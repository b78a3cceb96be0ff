// The worker's heartbeat (src/runner/heartbeat.ts): one timer renews the leases of all provider calls in
// flight, each at least every `every` ms, instead of a timer armed and cleared per call.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Beat, createHeartbeat } from '../src/runner/heartbeat.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** A heartbeat whose renewals are recorded as [item, ms since the test started]. */
function recorded() {
  const t0 = performance.now();
  const renewals: [string, number][] = [];
  const hb = createHeartbeat<string>((item) => renewals.push([item, performance.now() - t0]));
  const beat = (item: string, every: number): Beat<string> => ({ item, every, last: performance.now() });
  return { hb, renewals, beat, at: () => performance.now() - t0 };
}

describe('heartbeat', () => {
  it('renews each call in flight within every `every` ms of its start or last renewal, and no sooner than a quarter of it before', () => {
    const { hb, renewals, beat } = recorded();
    hb.add(beat('a', 1000));
    vi.advanceTimersByTime(400);
    hb.add(beat('b', 2000)); // added at 400
    vi.advanceTimersByTime(5600);
    const times = (item: string) => renewals.filter((r) => r[0] === item).map((r) => r[1]);
    const gaps = (start: number, ts: number[]) => ts.map((t, i) => t - (i === 0 ? start : ts[i - 1]!));
    const a = times('a');
    const b = times('b');
    expect(a.length).toBeGreaterThanOrEqual(6);
    expect(b.length).toBeGreaterThanOrEqual(2);
    for (const g of gaps(0, a)) expect(g).toBeGreaterThanOrEqual(750), expect(g).toBeLessThanOrEqual(1000);
    for (const g of gaps(400, b)) expect(g).toBeGreaterThanOrEqual(1500), expect(g).toBeLessThanOrEqual(2000);
  });

  it('a call that ends is not renewed again; a tick with no call in flight stops the timer, and the next call starts it', () => {
    const { hb, renewals, beat } = recorded();
    const a = beat('a', 400);
    hb.add(a);
    expect(hb.running).toBe(true);
    vi.advanceTimersByTime(450);
    expect(renewals.length).toBe(1);
    hb.delete(a);
    vi.advanceTimersByTime(1000);
    expect(renewals.length).toBe(1);
    expect(hb.running).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    hb.add(beat('c', 400));
    expect(hb.running).toBe(true);
    vi.advanceTimersByTime(400);
    expect(renewals.map((r) => r[0])).toEqual(['a', 'c']);
  });

  it('one timer for many calls, and for a stream of short calls between two ticks', () => {
    const spy = vi.spyOn(globalThis, 'setInterval');
    const { hb, beat } = recorded();
    const beats = Array.from({ length: 100 }, (_, i) => beat(`op${i}`, 7500));
    for (const b of beats) hb.add(b);
    for (const b of beats) hb.delete(b);
    for (let i = 0; i < 50; i++) {
      const b = beat(`short${i}`, 7500);
      hb.add(b);
      hb.delete(b);
    }
    expect(spy).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(1);
    spy.mockRestore();
  });

  it('a call with a shorter renewal period than the timer ticks at makes it tick faster; the slower calls keep their own period', () => {
    const { hb, renewals, beat } = recorded();
    hb.add(beat('slow', 8000)); // ticks every 2000
    vi.advanceTimersByTime(100);
    hb.add(beat('fast', 200)); // now every 50
    vi.advanceTimersByTime(1000);
    const fast = renewals.filter((r) => r[0] === 'fast').map((r) => r[1]);
    expect(fast.length).toBeGreaterThanOrEqual(5);
    for (let i = 1; i < fast.length; i++) expect(fast[i]! - fast[i - 1]!).toBeLessThanOrEqual(200);
    expect(renewals.filter((r) => r[0] === 'slow')).toEqual([]);
    vi.advanceTimersByTime(7000);
    const slow = renewals.filter((r) => r[0] === 'slow').map((r) => r[1]);
    expect(slow.length).toBe(1);
    expect(slow[0]).toBeGreaterThanOrEqual(8000 - 50);
    expect(slow[0]).toBeLessThanOrEqual(8000);
  });

  it('a call whose renewal period is under the 25 ms tick still renews within every period', () => {
    const { hb, renewals, beat } = recorded();
    hb.add(beat('tiny', 15)); // a 60 ms lease renewed every quarter of it
    vi.advanceTimersByTime(300);
    const ts = renewals.map((r) => r[1]);
    expect(ts.length).toBeGreaterThanOrEqual(19);
    for (let i = 0; i < ts.length; i++) expect(ts[i]! - (i === 0 ? 0 : ts[i - 1]!)).toBeLessThanOrEqual(15);
  });

  it('a call with a bound is stopped at the first tick past it, within a quarter of the bound, and no longer renewed', () => {
    const { hb, renewals, at } = recorded();
    const stops: number[] = [];
    const last = performance.now();
    hb.add({ item: 'bounded', every: 7500, last, stop: { at: last + 300, run: () => stops.push(at()) } });
    vi.advanceTimersByTime(20_000);
    expect(stops).toHaveLength(1);
    expect(stops[0]).toBeGreaterThanOrEqual(300);
    expect(stops[0]).toBeLessThanOrEqual(375);
    expect(renewals).toEqual([]);
    expect(hb.running).toBe(false);
  });
});
