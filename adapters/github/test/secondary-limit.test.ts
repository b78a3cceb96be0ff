// GitHub's secondary rate limit names no wait: "wait for at least one minute", then, if the request "continues to fail",
// "an exponentially increasing amount of time". Each request counts its own limits (an operation's creates, one GET),
// once per answer; a refused connection or a documented wait is no part of the count.
import { Octokit } from '@octokit/rest';
import { asBusinessOperationId } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { lookupContext } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { createGitHubAdapter } from '../src/index.js';
import { startGitHubSandbox } from '../src/sandbox/index.js';
import { issueParams, SEED, startRig, TOKEN, timedCreate } from './helpers.js';

const secondary = { kind: 'rate-limited', status: 429 } as const;

describe('a secondary rate limit is counted once per answer', () => {
  it('three creates in one repository share one limited repository GET: each waits a minute, none is refused', async () => {
    const rig = await startRig([], { faults: { repo: [secondary] } });
    const runs = [1, 2, 3].map((i) => rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(40 + i) }));
    for (const r of await Promise.all(runs)) expect(r).toMatchObject({ status: 'done', attempts: 1 });
    expect(rig.sandbox.count('issues.create')).toBe(3);
  });

  it('three lookups share one limited GET /user: each is asked to wait the one minute', async () => {
    const sandbox = closeAfterTest(
      await startGitHubSandbox({ token: TOKEN, seed: SEED, faults: { user: [secondary] } }),
    );
    const adapter = createGitHubAdapter({ auth: TOKEN, baseUrl: sandbox.url });
    const lookup = (id: string) =>
      adapter.doLookup(
        'issues.create',
        lookupContext(adapter, 'issues.create', asBusinessOperationId(id), issueParams()),
      );
    const results = await Promise.all(['op-a', 'op-b', 'op-c'].map(lookup));
    expect(sandbox.requestCount('user')).toBe(1);
    for (const r of results) expect(r).toMatchObject({ kind: 'cannot-tell', status: 429, retryAfterMs: 60_000 });
  });

  it('GET /user asked anew by one lookup after another: within a wait each gets it, after it twice it, hours later or after a refusal a minute', async () => {
    const clock = createVirtualClock();
    const refused = { kind: 'status', status: 401 } as const;
    const faults = { user: [secondary, secondary, secondary, secondary, secondary, secondary, refused, secondary] };
    const sandbox = closeAfterTest(
      await startGitHubSandbox({ token: TOKEN, now: () => clock.now(), seed: SEED, faults }),
    );
    const adapter = createGitHubAdapter({ auth: TOKEN, baseUrl: sandbox.url });
    const waitAsked = async () => {
      const context = lookupContext(adapter, 'issues.create', asBusinessOperationId('op-user'), issueParams());
      const r = await adapter.doLookup('issues.create', context);
      return (r as { retryAfterMs?: number }).retryAfterMs;
    };
    expect([await waitAsked(), await waitAsked(), await waitAsked()]).toEqual([60_000, 60_000, 60_000]);
    clock.advance(60_000);
    expect(await waitAsked()).toBe(120_000);
    clock.advance(6 * 3_600_000);
    expect(await waitAsked()).toBe(60_000);
    // A refusal is an answer GitHub processed: the count ends there.
    clock.advance(60_000);
    expect(await waitAsked()).toBe(120_000);
    clock.advance(120_000);
    expect(await waitAsked()).toBeUndefined();
    expect(await waitAsked()).toBe(60_000);
    expect(sandbox.requestCount('user')).toBe(8);
  });

  it('a connect that failed is no limited answer: failed, limited, limited, created waits 1 + 2 minutes', async () => {
    const clock = createVirtualClock();
    const sandbox = closeAfterTest(
      await startGitHubSandbox({
        token: TOKEN,
        now: () => clock.now(),
        seed: SEED,
        faults: { 'issues.create': [secondary, secondary] },
      }),
    );
    let posts = 0;
    const refusedOnce: typeof fetch = async (input, init) => {
      if (init?.method === 'POST' && posts++ === 0)
        throw new TypeError('fetch failed', {
          cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
        });
      return fetch(input, init);
    };
    const octokit = new Octokit({ auth: TOKEN, baseUrl: sandbox.url, request: { fetch: refusedOnce } });
    const adapter = createGitHubAdapter({ octokit, timeoutMs: 2_000 });
    const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5, policy: { maxAttempts: 4 } });
    const start = clock.now();
    expect(await runner.run(adapter, 'issues.create', { params: issueParams(44) })).toMatchObject({
      status: 'done',
      attempts: 4,
    });
    expect(clock.now() - start).toBeGreaterThanOrEqual(180_000);
    expect(sandbox.count('issues.create')).toBe(1);
  });

  it('three concurrent creates, each POST limited once: each waits a minute and is created, none handed off', async () => {
    const rig = await startRig([], { faults: { 'issues.create': [secondary, secondary, secondary] } });
    const runs = [41, 42, 43].map((i) => rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(i) }));
    for (const r of await Promise.all(runs)) expect(r).toMatchObject({ status: 'done', attempts: 2 });
    expect(rig.sandbox.count('issues.create')).toBe(3);
  });

  it('one create limited on and on waits a minute, then two, then is handed off (four minutes is past the cap)', async () => {
    const rig = await startRig(
      [],
      { faults: { 'issues.create': [secondary, secondary, secondary] } },
      { maxAttempts: 4 },
    );
    const { r, tookMs } = await timedCreate(rig, 44);
    expect(r).toMatchObject({ status: 'handed-off', attempts: 3 });
    expect(tookMs).toBeGreaterThanOrEqual(180_000);
    expect(rig.packets[0]).toMatchObject({ reason: 'retry-exhausted' });
    expect(rig.sandbox.requestCount('issues.create')).toBe(3);
  });

  /** The next operation, limited once, is created after one minute's wait, not a doubled one. */
  async function nextWaitsAMinute(rig: Awaited<ReturnType<typeof startRig>>, n: number) {
    rig.sandbox.setFaults('issues.create', [secondary, 'pass']);
    const { r, tookMs } = await timedCreate(rig, n);
    expect(r).toMatchObject({ status: 'done', attempts: 2 });
    expect(tookMs).toBeLessThan(120_000);
  }

  it('an operation handed off after its limits leaves no count behind: hours later the next one waits a minute', async () => {
    const rig = await startRig([], { faults: { 'issues.create': [secondary, secondary, secondary] } });
    expect(await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(45) })).toMatchObject({
      status: 'handed-off',
    });
    rig.clock.advance(6 * 3_600_000);
    await nextWaitsAMinute(rig, 46);
  });

  it('a create refused 422 after a limit got through: the next operation limited once waits a minute', async () => {
    const rig = await startRig([], { faults: { 'issues.create': [secondary, { kind: 'status', status: 422 }] } });
    expect(await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(47) })).toMatchObject({
      status: 'handed-off',
      attempts: 2,
    });
    await nextWaitsAMinute(rig, 48);
  });
});
