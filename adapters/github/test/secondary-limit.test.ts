// GitHub's secondary rate limit names no wait: "wait for at least one minute", then "an exponentially increasing
// amount of time" while it goes on. The row is counted once per answer, over the token (this adapter), and a
// refused connection or a documented wait is no part of it.
import { Octokit } from '@octokit/rest';
import { asBusinessOperationId } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { lookupContext } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { createGitHubAdapter } from '../src/index.js';
import { startGitHubSandbox } from '../src/sandbox/index.js';
import { issueParams, SEED, startRig, TOKEN } from './helpers.js';

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

  it('a create GitHub accepted ends the row: the next operation limited once waits one minute again', async () => {
    const rig = await startRig([], { faults: { 'issues.create': [secondary, secondary] } }, { maxAttempts: 2 });
    expect(await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(45) })).toMatchObject({
      status: 'handed-off',
    });
    // Still limited: the row goes on into the next operation (a third answer asks for four minutes, past the cap).
    rig.sandbox.setFaults('issues.create', [secondary, 'pass', secondary]);
    expect(await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(46) })).toMatchObject({
      status: 'handed-off',
    });
    expect(rig.sandbox.count('issues.create')).toBe(0);
    expect(await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(47) })).toMatchObject({
      status: 'done',
      attempts: 1,
    });
    const start = rig.clock.now();
    expect(await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(48) })).toMatchObject({
      status: 'done',
      attempts: 2,
    });
    expect(rig.clock.now() - start).toBeLessThan(120_000);
  });
});
