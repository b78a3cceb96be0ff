// The real @octokit/rest against the loopback sandbox: a lost answer ends as one issue / one comment
// (found by the list lookup, while GitHub's lagging search would not show it yet), and the SDK sends
// exactly one request per attempt (it has no retry of its own).
import { Octokit } from '@octokit/rest';
import { AdapterConfigurationError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { markerFor } from '../src/github-operations.js';
import { createGitHubAdapter } from '../src/index.js';
import { startGitHubSandbox } from '../src/sandbox/index.js';
import { commentParams, execute, issueParams, OWNER, REPO, SEED, startRig, TOKEN } from './helpers.js';

/** A sandbox whose first create answers 502 after it is applied. */
const start502 = async () =>
  closeAfterTest(
    await startGitHubSandbox({
      seed: SEED,
      faults: { 'issues.create': [{ kind: 'status', status: 502, commit: true }] },
    }),
  );

describe('a network error after the POST was written is unknown, never "not sent"', () => {
  // The host became unreachable while the answer was awaited: Node reports `read EHOSTUNREACH` on the
  // established socket. The fetch below sends the real request to the sandbox, then fails that way.
  it('read EHOSTUNREACH after the create landed ⇒ the list lookup adopts it: one POST, one issue', async () => {
    const clock = createVirtualClock();
    const sandbox = closeAfterTest(await startGitHubSandbox({ token: TOKEN, now: () => clock.now(), seed: SEED }));
    const unreachableAfterSend: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (init?.method !== 'POST') return res;
      await res.arrayBuffer();
      const cause = Object.assign(new Error('read EHOSTUNREACH'), {
        code: 'EHOSTUNREACH',
        syscall: 'read',
        errno: -113,
      });
      throw new TypeError('fetch failed', { cause });
    };
    const octokit = new Octokit({ auth: TOKEN, baseUrl: sandbox.url, request: { fetch: unreachableAfterSend } });
    const adapter = createGitHubAdapter({ octokit, timeoutMs: 2_000 });
    const runner = createRunner({
      ledger: createMemoryLedger(),
      clock,
      random: () => 0.5,
      policy: { lookupWindowMs: 60_000 },
    });
    const r = await runner.run(adapter, 'issues.create', { params: issueParams(7) });
    expect(sandbox.count('issues.create')).toBe(1);
    expect(sandbox.requestCount('issues.create')).toBe(1);
    expect(r).toMatchObject({ status: 'done', adopted: true, attempts: 1 });
  });
});

describe('a connect that timed out sent nothing: the runner sends again', () => {
  // What Node 22's fetch throws when every address of the host timed out while connecting (happy eyeballs):
  // an AggregateError [ETIMEDOUT] of `connect ETIMEDOUT` errors. The first attempt fails so, without sending.
  it('connect ETIMEDOUT on the first attempt ⇒ not-applied ⇒ the second attempt creates the one issue', async () => {
    const clock = createVirtualClock();
    const sandbox = closeAfterTest(await startGitHubSandbox({ token: TOKEN, now: () => clock.now(), seed: SEED }));
    let posts = 0;
    const connectTimesOutOnce: typeof fetch = async (input, init) => {
      if (init?.method === 'POST' && posts++ === 0) {
        const attempt = (address: string) =>
          Object.assign(new Error(`connect ETIMEDOUT ${address}:443`), { code: 'ETIMEDOUT', syscall: 'connect' });
        const cause = Object.assign(new AggregateError([attempt('10.0.0.1'), attempt('10.0.0.2')]), {
          code: 'ETIMEDOUT',
        });
        throw new TypeError('fetch failed', { cause });
      }
      return fetch(input, init);
    };
    const octokit = new Octokit({ auth: TOKEN, baseUrl: sandbox.url, request: { fetch: connectTimesOutOnce } });
    const adapter = createGitHubAdapter({ octokit, timeoutMs: 2_000 });
    const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
    const r = await runner.run(adapter, 'issues.create', { params: issueParams(8) });
    expect(r).toMatchObject({ status: 'done', attempts: 2 });
    expect(sandbox.count('issues.create')).toBe(1);
  });
});

describe('a lost answer, through the runner and the real SDK', () => {
  it.each([
    {
      name: 'issues.create: the 201 is lost ⇒ the list lookup finds the issue ⇒ done, one POST, one issue',
      op: 'issues.create',
      fault: 'drop-response',
      params: issueParams(1),
      list: 'issues.list',
      result: { number: 2 },
    },
    {
      name: 'issues.createComment: the 201 is lost ⇒ the comment list since the first dispatch finds it ⇒ one comment',
      op: 'issues.createComment',
      fault: 'drop-response',
      params: commentParams(1),
      list: 'comments.list',
      result: {},
    },
    {
      name: 'the 201 is cut off mid-body ⇒ unknown (applied, number lost) ⇒ the lookup adopts it: one issue',
      op: 'issues.create',
      fault: 'truncate-response',
      params: issueParams(5),
      list: 'issues.list',
      result: { number: 2 },
    },
  ] as const)('$name', async ({ op, fault, params, list, result }) => {
    const rig = await startRig([fault]);
    const r = await rig.runner.run(rig.adapter, op, { params });
    expect(r).toMatchObject({ status: 'done', adopted: true, attempts: 1, result });
    expect(rig.sandbox.requestCount(op)).toBe(1);
    expect(rig.sandbox.count(op)).toBe(1);
    expect(rig.sandbox.requestCount(list)).toBeGreaterThan(0);
    expect(rig.packets).toHaveLength(0);
  });

  it("the issue the list lookup adopted after a lost 201 is not in GitHub's lagging search yet: there, not found proves nothing", async () => {
    const rig = await startRig(['drop-response']);
    const r = await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(1) });
    const octokit = new Octokit({ auth: TOKEN, baseUrl: rig.sandbox.url });
    const id = rig.sandbox
      .issues()
      .find((i) => i.kind === 'issue')!
      .body.match(/retrysafe:op=(\S+)/)![1]!;
    expect(id).toBe(r.businessOperationId);
    const q = `"${markerFor(id as never)}" repo:${OWNER}/${REPO} in:body`;
    const search = await octokit.request('GET /search/issues', { q });
    expect(search.data.total_count).toBe(0);
    rig.clock.advance(60_000);
    expect((await octokit.request('GET /search/issues', { q })).data.total_count).toBe(1);
  });

  it('the request is reset before it arrives ⇒ nothing found, never resent blindly: one POST, no issue, a handoff', async () => {
    const rig = await startRig(['reset-before']);
    const r = await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(2) });
    expect(r.status).toBe('handed-off');
    expect(rig.sandbox.count('issues.create')).toBe(0);
    expect(rig.packets).toHaveLength(1);
  });
});

describe("the policy's clock-skew margin", () => {
  it("reaches the lookup: GitHub's clock 5 min behind ours, a 10 min policy margin ⇒ the lost issue is found, not handed off", async () => {
    const skew = 5 * 60_000;
    const rig = await startRig(['drop-response'], {}, { clockSkewMarginMs: 2 * skew, lookupWindowMs: 5 * skew }, skew);
    const r = await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(12) });
    expect(r).toMatchObject({ status: 'done', adopted: true });
    expect(rig.sandbox.count('issues.create')).toBe(1);
  });
});

describe('one intent', () => {
  it('owner and repo respelt in another case name the same repository (GitHub: "not case sensitive"): one issue, one id', async () => {
    const rig = await startRig([]);
    const first = await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(6) });
    const respelt = { ...issueParams(6), owner: OWNER.toUpperCase(), repo: REPO.toUpperCase() };
    const again = await rig.runner.run(rig.adapter, 'issues.create', { params: respelt });
    expect(first.status).toBe('done');
    expect(again).toMatchObject({ status: 'done', businessOperationId: first.businessOperationId });
    expect(rig.sandbox.requestCount('issues.create')).toBe(1);
    expect(rig.sandbox.count('issues.create')).toBe(1);
  });

  it('a lost 201 in ACME/Widgets is adopted from acme/widgets, one repository as at GitHub; the respelt retry is the same operation: one issue, one POST', async () => {
    const rig = await startRig(['drop-response']);
    const first = await rig.runner.run(rig.adapter, 'issues.create', {
      params: { ...issueParams(7), owner: 'ACME', repo: 'Widgets' },
    });
    // The seeded repository's next issue (#2), not #1 of another repository spelt in capitals.
    expect(first).toMatchObject({ status: 'done', adopted: true, result: { number: 2 } });
    const again = await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(7) });
    expect(again).toMatchObject({
      status: 'done',
      businessOperationId: first.businessOperationId,
      result: { number: 2 },
    });
    expect(rig.sandbox.requestCount('issues.create')).toBe(1);
    expect(rig.sandbox.count('issues.create')).toBe(1);
    const octokit = new Octokit({ auth: TOKEN, baseUrl: rig.sandbox.url });
    const listed = await octokit.rest.issues.listForRepo({ owner: OWNER, repo: REPO, state: 'all' });
    expect(listed.data.map((i) => i.number)).toEqual([2, 1]);
  });

  it('a comment respelt in another case reaches the issue (GitHub answers 201, not 404) and its retry is the same operation: one comment', async () => {
    const rig = await startRig(['drop-response']);
    const respelt = { ...commentParams(8), owner: 'Acme', repo: 'WIDGETS' };
    const first = await rig.runner.run(rig.adapter, 'issues.createComment', { params: respelt });
    expect(first).toMatchObject({ status: 'done', adopted: true });
    const again = await rig.runner.run(rig.adapter, 'issues.createComment', { params: commentParams(8) });
    expect(again).toMatchObject({ status: 'done', businessOperationId: first.businessOperationId });
    expect(rig.sandbox.requestCount('issues.createComment')).toBe(1);
    expect(rig.sandbox.count('issues.createComment')).toBe(1);
  });
});

describe('the case fold goes no further than GitHub', () => {
  // JavaScript's case mapping folds ſ (long s) to s, K (Kelvin) to k and ı to i; GitHub names are ASCII, so the
  // schema refuses such a name before anything is claimed instead of the id reading it as the repository it folds to.
  it.each(['widget\u017f', 'WIDGET\u017f'])('repo %s is refused, never answered with widgets’ issue', async (repo) => {
    const rig = await startRig([]);
    const first = await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(9) });
    expect(first.status).toBe('done');
    await expect(
      rig.runner.run(rig.adapter, 'issues.create', { params: { ...issueParams(9), repo } }),
    ).rejects.toMatchObject({ name: 'InvalidParamsError' });
    expect(rig.sandbox.requestCount('issues.create')).toBe(1);
  });
});

describe('the SDK sends one request per attempt', () => {
  it('plain @octokit/rest on a 502: one request, the RequestError carries the answer', async () => {
    const sandbox = await start502();
    const octokit = new Octokit({
      auth: TOKEN,
      baseUrl: sandbox.url,
      log: { debug() {}, info() {}, warn() {}, error() {} },
    });
    const error = await octokit.rest.issues
      .create({ owner: OWNER, repo: REPO, title: 't', body: 'b' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 502, response: { status: 502 } });
    expect(sandbox.requestCount('issues.create')).toBe(1);
  });

  it('through the adapter: a 502 after the create is unknown, one request, one issue', async () => {
    const sandbox = await start502();
    const adapter = createGitHubAdapter({ auth: TOKEN, baseUrl: sandbox.url });
    const out = await execute(adapter, 'issues.create', issueParams(3), 'op-502');
    expect(out).toMatchObject({ kind: 'unknown', cause: 'server-error', status: 502 });
    expect(sandbox.requestCount('issues.create')).toBe(1);
    expect(sandbox.count('issues.create')).toBe(1);
  });

  it('a lost answer reaches the adapter as a RequestError without a response (status 500 made up by the SDK) and maps to unknown', async () => {
    const rig = await startRig(['drop-response']);
    const out = await execute(rig.adapter, 'issues.create', issueParams(4), 'op-lost');
    expect(out).toMatchObject({ kind: 'unknown', cause: 'connection-reset' });
    expect(out.status).toBeUndefined();
    expect(rig.sandbox.requestCount('issues.create')).toBe(1);
  });

  it('a 201 cut off mid-body reaches the adapter with its status and no object: unknown (truncated-response)', async () => {
    const rig = await startRig(['truncate-response']);
    const out = await execute(rig.adapter, 'issues.create', issueParams(6), 'op-cut');
    expect(out).toMatchObject({ kind: 'unknown', cause: 'truncated-response', status: 201 });
  });

  it('refuses an Octokit built with a retry or throttling plugin, and one built from @octokit/rest alone is accepted', () => {
    const retry = Object.assign(() => ({}), {});
    Object.defineProperty(retry, 'name', { value: 'retry' });
    const WithRetry = Octokit.plugin(retry as never);
    expect(() => createGitHubAdapter({ octokit: new WithRetry({ auth: TOKEN }) })).toThrow(AdapterConfigurationError);
    expect(() => createGitHubAdapter({ octokit: new WithRetry({ auth: TOKEN }) })).toThrow(
      /resends requests \(retry\)/,
    );
    expect(createGitHubAdapter({ octokit: new Octokit({ auth: TOKEN }) }).specificationVersion).toBe('v1');
  });

  it('configuration errors are typed', () => {
    expect(() => createGitHubAdapter({})).toThrow(/auth/);
    expect(() => createGitHubAdapter({ auth: TOKEN, timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => createGitHubAdapter({ auth: TOKEN, baseUrl: 'http://api.example.com' })).toThrow(/loopback/);
    expect(() => createGitHubAdapter({ auth: TOKEN, lookupPages: 0 })).toThrow(/lookupPages/);
    expect(() => createGitHubAdapter({ octokit: new Octokit(), auth: TOKEN })).toThrow(/either octokit/);
  });
});
