// The lookup adopts only an item the adapter's own identity wrote with the marker at the end of its body: a copy of
// that body by someone else (a person duplicating the issue, a bot quoting it) is never taken for ours.
import { Octokit } from '@octokit/rest';
import { asBusinessOperationId } from '@retrysafe/contract';
import { startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { lookupContext } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { withMarker } from '../src/github-operations.js';
import { createGitHubAdapter } from '../src/index.js';
import { startGitHubSandbox } from '../src/sandbox/index.js';
import { commentParams, execute, issueParams, OWNER, REPO, SEED, TOKEN } from './helpers.js';

const id = asBusinessOperationId('op-copied');

async function setup(login?: string) {
  const sandbox = closeAfterTest(
    await startGitHubSandbox({ token: TOKEN, seed: SEED, people: { 'their-token': 'octocat' } }),
  );
  const adapter = createGitHubAdapter({ auth: TOKEN, baseUrl: sandbox.url, ...(login ? { login } : {}) });
  const theirs = new Octokit({ auth: 'their-token', baseUrl: sandbox.url });
  const mine = new Octokit({ auth: TOKEN, baseUrl: sandbox.url });
  const look = (op: 'issues.create' | 'issues.createComment', params: unknown) =>
    adapter.doLookup(op, lookupContext(adapter, op, id, params, { firstDispatchedAt: Date.now() - 1000 }));
  return { sandbox, adapter, theirs, mine, look };
}

describe('a lookup adopts only what this identity wrote', () => {
  it("someone else's copy of the body, marker and all, is not adopted (issue and comment); ours then is", async () => {
    const { adapter, theirs, look } = await setup();
    const issue = issueParams(1);
    const comment = commentParams(1);
    await theirs.rest.issues.create({ owner: OWNER, repo: REPO, title: issue.title, body: withMarker(issue.body, id) });
    await theirs.rest.issues.createComment({ ...comment, body: withMarker(comment.body, id) });
    expect(await look('issues.create', issue)).toMatchObject({ kind: 'cannot-tell' });
    expect(await look('issues.createComment', comment)).toMatchObject({ kind: 'cannot-tell' });
    await execute(adapter, 'issues.create', issue, id);
    await execute(adapter, 'issues.createComment', comment, id);
    expect(await look('issues.create', issue)).toMatchObject({ kind: 'found', outcome: { providerRef: '3' } });
    expect(await look('issues.createComment', comment)).toMatchObject({ kind: 'found' });
  });

  it('our own quote of the marker, not at the end of the body, is not adopted', async () => {
    const { mine, look } = await setup();
    const comment = commentParams(2);
    const quoted = `> ${withMarker(comment.body, id)}\n\nStill seen today.`;
    await mine.rest.issues.createComment({ ...comment, body: quoted });
    expect(await look('issues.createComment', comment)).toMatchObject({ kind: 'cannot-tell' });
  });

  it('two items of ours carry the marker: cannot tell, naming both, never one picked', async () => {
    const { adapter, look } = await setup();
    await execute(adapter, 'issues.create', issueParams(3), id);
    await execute(adapter, 'issues.create', issueParams(3), id);
    expect(await look('issues.create', issueParams(3))).toMatchObject({
      kind: 'cannot-tell',
      reason: expect.stringMatching(/2 items .* 2, 3$/),
      duplicates: ['2', '3'],
    });
  });

  it('ours on the pages read and a later page not read (it failed, or past the page bound): cannot tell, not adopted', async () => {
    // 100 items after the first dispatch and ours: ours is on page 1, and page 2 is where a second of ours could be.
    const seed = Array.from({ length: 100 }, (_, i) => ({ owner: OWNER, repo: REPO, title: `Filler ${i}` }));
    const sandbox = closeAfterTest(await startGitHubSandbox({ token: TOKEN, seed }));
    const failPage2 = closeAfterTest(
      await startFaultProxy({
        target: sandbox.url,
        faults: (_n, req) => (req.path.includes('page=2') ? { kind: 'status', status: 503 } : 'pass'),
      }),
    );
    const ctx = { firstDispatchedAt: Date.now() - 1000 };
    const look = (baseUrl: string, lookupPages?: number) => {
      const adapter = createGitHubAdapter({ auth: TOKEN, baseUrl, ...(lookupPages ? { lookupPages } : {}) });
      return adapter.doLookup('issues.create', lookupContext(adapter, 'issues.create', id, issueParams(4), ctx));
    };
    await execute(createGitHubAdapter({ auth: TOKEN, baseUrl: sandbox.url }), 'issues.create', issueParams(4), id);
    expect(await look(failPage2.url)).toMatchObject({ kind: 'cannot-tell', status: 503 });
    expect(await look(sandbox.url, 1)).toMatchObject({ kind: 'cannot-tell', reason: expect.stringMatching(/1 pages/) });
    expect(await look(sandbox.url)).toMatchObject({ kind: 'found', outcome: { providerRef: '101' } });
  });

  it('ours on page 1, and again on page 2 because a newer item arrived between the reads: one item, adopted', async () => {
    const sandbox = closeAfterTest(await startGitHubSandbox({ token: TOKEN, seed: SEED }));
    const adapter = createGitHubAdapter({ auth: TOKEN, baseUrl: sandbox.url });
    await execute(adapter, 'issues.create', issueParams(6), id);
    // 99 newer items: ours is the last of page 1 (newest first).
    for (let i = 0; i < 99; i++) sandbox.addPullRequest(OWNER, REPO, `PR ${i}`, '');
    let moved = false;
    const proxy = closeAfterTest(
      await startFaultProxy({
        target: sandbox.url,
        faults: (_n, req) => {
          if (req.path.includes('page=2') && !moved) moved = !!sandbox.addPullRequest(OWNER, REPO, 'newer', '');
          return 'pass';
        },
      }),
    );
    const viaProxy = createGitHubAdapter({ auth: TOKEN, baseUrl: proxy.url });
    const ctx = lookupContext(viaProxy, 'issues.create', id, issueParams(6), { firstDispatchedAt: Date.now() - 1000 });
    expect(await viaProxy.doLookup('issues.create', ctx)).toMatchObject({ kind: 'found' });
    expect(moved).toBe(true);
  });

  it('two of ours, one of them skipped because an item was deleted as page 2 was asked: never the other adopted', async () => {
    const sandbox = closeAfterTest(await startGitHubSandbox({ token: TOKEN, seed: SEED }));
    const adapter = createGitHubAdapter({ auth: TOKEN, baseUrl: sandbox.url });
    await execute(adapter, 'issues.create', issueParams(7), id);
    // The second of ours and 99 newer items: the first of ours is the first item of page 2 (newest first).
    await execute(adapter, 'issues.create', issueParams(7), id);
    const fillers = Array.from({ length: 99 }, (_, i) => sandbox.addPullRequest(OWNER, REPO, `PR ${i}`, ''));
    let deleted = false;
    const proxy = closeAfterTest(
      await startFaultProxy({
        target: sandbox.url,
        faults: (_n, req) => {
          // A filler on page 1 goes as page 2 is asked: the list moves up one, and the first of ours onto page 1.
          if (req.path.includes('page=2') && !deleted) deleted = sandbox.deleteIssue(OWNER, REPO, fillers[0]!.number);
          return 'pass';
        },
      }),
    );
    const viaProxy = createGitHubAdapter({ auth: TOKEN, baseUrl: proxy.url });
    const ctx = lookupContext(viaProxy, 'issues.create', id, issueParams(7), { firstDispatchedAt: Date.now() - 1000 });
    expect(await viaProxy.doLookup('issues.create', ctx)).toMatchObject({ kind: 'cannot-tell' });
    expect(deleted).toBe(true);
    // The list holds still: the next lookup names both.
    const both = sandbox.issues().flatMap((i) => (i.kind === 'issue' ? [String(i.number)] : []));
    expect(both).toHaveLength(2);
    expect(await viaProxy.doLookup('issues.create', ctx)).toMatchObject({ kind: 'cannot-tell', duplicates: both });
  });

  it('the identity is read once with GET /user, or not at all when `login` is given', async () => {
    const asked = await setup();
    await look3(asked.look);
    expect(asked.sandbox.requestCount('user')).toBe(1);
    const given = await setup('RetrySafe-Bot');
    await execute(given.adapter, 'issues.create', issueParams(4), id);
    expect(await given.look('issues.create', issueParams(4))).toMatchObject({ kind: 'found' });
    expect(given.sandbox.requestCount('user')).toBe(0);
  });
});

async function look3(look: (op: 'issues.create', params: unknown) => Promise<unknown>) {
  for (let i = 0; i < 3; i++) await look('issues.create', issueParams(5));
}
