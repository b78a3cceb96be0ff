// Every GitHub answer the adapter can meet, classified into one outcome; rate limits retried by the
// runner only (one request per attempt, the documented wait honoured); permanent errors are rejections
// naming the field; the lookup walks the list newest first and stops where the card says.
import { Octokit } from '@octokit/rest';
import { asBusinessOperationId } from '@retrysafe/contract';
import { createRedactor } from '@retrysafe/core/internal';
import { startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { lookupContext } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { outcomeFromAnswer, outcomeFromError, rateLimitWaitMs } from '../src/github-errors.js';
import { markerFor } from '../src/github-operations.js';
import { createGitHubAdapter } from '../src/index.js';
import { type GitHubSandboxOptions, type SandboxFault, startGitHubSandbox } from '../src/sandbox/index.js';
import { commentParams, execute, issueParams, OWNER, REPO, SEED, startRig, TOKEN, timedCreate } from './helpers.js';

/** One limited create, then the runner's retry: done in two attempts, one issue, after at least `waitMs`. */
async function createdAfterLimit(fault: SandboxFault, n: number, waitMs: number) {
  const rig = await startRig([], { faults: { 'issues.create': [fault] } });
  const { r, tookMs } = await timedCreate(rig, n);
  expect(r).toMatchObject({ status: 'done', attempts: 2 });
  expect(tookMs).toBeGreaterThanOrEqual(waitMs);
  expect(rig.sandbox.count('issues.create')).toBe(1);
  return rig;
}

async function adapterOn(options: GitHubSandboxOptions = {}) {
  const sandbox = closeAfterTest(await startGitHubSandbox({ token: TOKEN, seed: SEED, ...options }));
  return { sandbox, adapter: createGitHubAdapter({ auth: TOKEN, baseUrl: sandbox.url }) };
}

describe('rate limits (403/429) are not-applied with the documented wait', () => {
  it('403 with retry-after ⇒ not-applied, retryAfterMs from the header, nothing created', async () => {
    const { sandbox, adapter } = await adapterOn({
      faults: { 'issues.create': [{ kind: 'rate-limited', status: 403, retryAfterS: 7 }] },
    });
    const out = await execute(adapter, 'issues.create', issueParams(1), 'op-ra');
    expect(out).toMatchObject({ kind: 'not-applied', retryAfterMs: 7_000, status: 403 });
    expect(out.requestId).toMatch(/^[0-9A-F-]{36}$/);
    expect(sandbox.count('issues.create')).toBe(0);
  });

  it('429 with x-ratelimit-remaining 0 ⇒ wait until x-ratelimit-reset', () => {
    const now = Date.parse('2026-12-04T10:00:00Z');
    const headers = { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(now / 1000 + 90) };
    expect(rateLimitWaitMs({ status: 429, headers, data: {} }, now)).toBe(90_000);
    expect(
      outcomeFromAnswer({ status: 403, headers, data: { message: 'API rate limit exceeded' } }, now),
    ).toMatchObject({ kind: 'not-applied', retryAfterMs: 90_000 });
  });

  it("x-ratelimit-reset is read on GitHub's clock (its Date header): a local clock ahead still waits", () => {
    const github = Date.parse('2026-12-04T10:00:00Z');
    const headers = {
      date: new Date(github).toUTCString(),
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': String(github / 1000 + 90),
    };
    expect(rateLimitWaitMs({ status: 403, headers, data: {} }, github + 120_000)).toBe(90_000);
  });

  it('the runner waits until x-ratelimit-reset on the sandbox clock, not on this machine: 2 POSTs, 1 issue', async () => {
    await createdAfterLimit({ kind: 'rate-limited', status: 403, resetInS: 30 }, 7, 29_000);
  });

  it('remaining 0 with an empty x-ratelimit-reset ⇒ at least a minute, never no wait', async () => {
    const { sandbox, adapter } = await adapterOn({
      faults: { 'issues.create': [{ kind: 'rate-limited', status: 429, resetInS: '' }] },
    });
    const out = await execute(adapter, 'issues.create', issueParams(1), 'op-empty-reset');
    expect(out).toMatchObject({ kind: 'not-applied', status: 429, retryAfterMs: 60_000 });
    expect(sandbox.count('issues.create')).toBe(0);
  });

  it('a 403 with remaining 0 is a primary rate limit whatever its message says, never a permission refusal', () => {
    const headers = { 'x-ratelimit-remaining': '0' };
    expect(outcomeFromAnswer({ status: 403, headers, data: { message: 'Forbidden' } })).toMatchObject({
      kind: 'not-applied',
      retryAfterMs: 60_000,
    });
  });

  it('a secondary-rate-limit message without headers ⇒ at least a minute; 429 alone likewise', () => {
    expect(
      rateLimitWaitMs({ status: 403, headers: {}, data: { message: 'You have exceeded a secondary rate limit.' } }),
    ).toBe(60_000);
    expect(rateLimitWaitMs({ status: 429, headers: {}, data: {} })).toBe(60_000);
  });

  it('a secondary limit that goes on is waited on exponentially longer: a minute, then two (GitHub: "exponentially increasing")', async () => {
    const secondary = { kind: 'rate-limited', status: 403 } as const;
    const rig = await startRig([], { faults: { 'issues.create': [secondary, secondary] } });
    const { r, tookMs } = await timedCreate(rig, 4);
    expect(r).toMatchObject({ status: 'done', attempts: 3 });
    expect(tookMs).toBeGreaterThanOrEqual(180_000);
    expect(rig.sandbox.count('issues.create')).toBe(1);
  });

  it('so are reads: the repository GET before the claim, limited twice, is asked again after a minute, then two', async () => {
    const secondary = { kind: 'rate-limited', status: 429 } as const;
    const rig = await startRig([], { faults: { repo: [secondary, secondary] } });
    const { r, tookMs } = await timedCreate(rig, 5);
    expect(r).toMatchObject({ status: 'done', attempts: 1 });
    expect(tookMs).toBeGreaterThanOrEqual(180_000);
    expect(rig.sandbox.count('issues.create')).toBe(1);
  });

  it('a 403 in the older words for a secondary limit (abuse detection) ⇒ at least a minute, not a permission refusal', () => {
    const message = 'You have triggered an abuse detection mechanism. Please wait a few minutes before you try again.';
    expect(outcomeFromAnswer({ status: 403, headers: {}, data: { message } })).toMatchObject({
      kind: 'not-applied',
      retryAfterMs: 60_000,
    });
  });

  it('a 403 without any rate-limit sign is a permission rejection', async () => {
    const { adapter } = await adapterOn({ faults: { 'issues.create': [{ kind: 'status', status: 403 }] } });
    expect(await execute(adapter, 'issues.create', issueParams(2), 'op-403')).toMatchObject({
      kind: 'rejected',
      reason: 'permission',
      status: 403,
    });
  });

  it('the runner retries a secondary rate limit after the retry-after wait, one request per attempt: 2 POSTs, 1 issue', async () => {
    const rig = await createdAfterLimit({ kind: 'rate-limited', status: 403, retryAfterS: 30 }, 3, 30_000);
    expect(rig.sandbox.requestCount('issues.create')).toBe(2);
  });
});

describe('content created too quickly (422) is a secondary rate limit, not a validation error', () => {
  const tooQuickly = {
    message: 'Validation Failed',
    errors: [{ resource: 'Issue', code: 'custom', field: 'body', message: 'was submitted too quickly' }],
  };

  it('⇒ not-applied, waiting retry-after, else at least a minute', () => {
    expect(outcomeFromAnswer({ status: 422, headers: {}, data: tooQuickly })).toMatchObject({
      kind: 'not-applied',
      status: 422,
      retryAfterMs: 60_000,
    });
    expect(rateLimitWaitMs({ status: 422, headers: { 'retry-after': '90' }, data: tooQuickly })).toBe(90_000);
  });

  it('the runner sends again after the wait, not a handoff: one issue', async () => {
    const rig = await startRig([{ kind: 'status', status: 422, body: tooQuickly }]);
    const { r, tookMs } = await timedCreate(rig, 6);
    expect(r).toMatchObject({ status: 'done', attempts: 2 });
    expect(tookMs).toBeGreaterThanOrEqual(60_000);
    expect(rig.sandbox.count('issues.create')).toBe(1);
  });
});

describe('permanent errors are rejections', () => {
  it("422 names GitHub's errors[].field", () => {
    const out = outcomeFromAnswer({
      status: 422,
      headers: {},
      data: { message: 'Validation Failed', errors: [{ resource: 'Issue', code: 'invalid', field: 'assignees' }] },
    });
    expect(out).toMatchObject({
      kind: 'rejected',
      reason: 'validation',
      fields: [{ path: 'assignees', message: 'invalid' }],
    });
    expect(out.kind === 'rejected' && out.message).toMatch(/assignees: invalid/);
  });

  it('the runner hands a 422 off after one attempt, with the field in the packet', async () => {
    const rig = await startRig([
      {
        kind: 'status',
        status: 422,
        body: { message: 'Validation Failed', errors: [{ resource: 'Issue', code: 'invalid', field: 'labels' }] },
      },
    ]);
    const r = await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(4) });
    expect(r).toMatchObject({ status: 'handed-off' });
    expect(rig.sandbox.requestCount('issues.create')).toBe(0);
    expect(JSON.stringify(rig.packets)).toMatch(/labels/);
  });

  it('bad credentials ⇒ authentication; a missing issue ⇒ not-found; issues disabled (410) ⇒ other', async () => {
    const { sandbox, adapter } = await adapterOn();
    const wrong = createGitHubAdapter({ auth: 'wrong', baseUrl: sandbox.url });
    expect(await execute(wrong, 'issues.create', issueParams(5), 'op-401')).toMatchObject({
      kind: 'rejected',
      reason: 'authentication',
      status: 401,
    });
    expect(await execute(adapter, 'issues.createComment', commentParams(5, 99), 'op-404')).toMatchObject({
      kind: 'rejected',
      reason: 'not-found',
      status: 404,
    });
    expect(
      outcomeFromAnswer({ status: 410, headers: {}, data: { message: 'Issues are disabled for this repo' } }),
    ).toMatchObject({ kind: 'rejected', reason: 'other' });
  });

  it('params the schema refuses are rejected by the frame, naming the field, and nothing is sent', async () => {
    const { sandbox, adapter } = await adapterOn();
    const out = await execute(adapter, 'issues.create', { ...issueParams(6), title: '' }, 'op-bad');
    expect(out).toMatchObject({ kind: 'rejected', reason: 'validation', fields: [{ path: 'title' }] });
    const marked = await execute(
      adapter,
      'issues.createComment',
      { ...commentParams(6), body: `x ${markerFor('other' as never)}` },
      'op-marker',
    );
    expect(marked).toMatchObject({ kind: 'rejected', fields: [{ path: 'body' }] });
    expect(sandbox.requestCount('issues.create') + sandbox.requestCount('issues.createComment')).toBe(0);
  });

  it.each([
    ['repo', '..'],
    ['owner', '.'],
  ])(
    'a dot segment as %s (%s) is refused before anything is sent: the URL would resolve to another path',
    async (field, value) => {
      const { sandbox } = await adapterOn();
      const paths: string[] = [];
      const proxy = closeAfterTest(
        await startFaultProxy({ target: sandbox.url, faults: (_n, req) => (paths.push(req.path), 'pass') }),
      );
      const adapter = createGitHubAdapter({ auth: TOKEN, baseUrl: proxy.url });
      const out = await execute(adapter, 'issues.create', { ...issueParams(7), [field]: value }, 'op-dots');
      expect(out).toMatchObject({ kind: 'rejected', reason: 'validation', fields: [{ path: field }] });
      expect(paths).toEqual([]);
    },
  );

  it('a 503 with Retry-After is unknown and keeps its wait, so the runner looks up no sooner; one request', async () => {
    const { adapter, proxy } = await startRig([{ kind: 'status', status: 503, retryAfterS: 30 }]);
    expect(await execute(adapter, 'issues.create', issueParams(7), 'op-503')).toMatchObject({
      kind: 'unknown',
      cause: 'server-error',
      retryAfterMs: 30_000,
    });
    expect(proxy.requests).toHaveLength(1);
  });

  it('a 5xx is unknown, a refused connection not-applied', async () => {
    expect(outcomeFromAnswer({ status: 503, headers: {}, data: {} })).toMatchObject({
      kind: 'unknown',
      cause: 'server-error',
    });
    const closed = await startGitHubSandbox();
    const url = closed.url;
    await closed.close();
    const adapter = createGitHubAdapter({ auth: TOKEN, baseUrl: url });
    expect(await execute(adapter, 'issues.create', issueParams(7), 'op-refused')).toMatchObject({
      kind: 'not-applied',
    });
  });
});

describe('the lookup lists, newest first, back to the first dispatch', () => {
  it('skips pull requests carrying the marker; finds the issue', async () => {
    const { sandbox, adapter } = await adapterOn();
    const id = asBusinessOperationId('op-pr-and-two');
    sandbox.addPullRequest(OWNER, REPO, 'pr', `x ${markerFor(id)}`);
    const ctx = lookupContext(adapter, 'issues.create', id, issueParams(8));
    // Nothing but the pull request: a miss, which proves nothing while the card bounds no delay (cannot-tell).
    expect(await adapter.doLookup('issues.create', ctx)).toMatchObject({ kind: 'cannot-tell' });
    await execute(adapter, 'issues.create', issueParams(8), id);
    const found = await adapter.doLookup('issues.create', ctx);
    expect(found).toMatchObject({
      kind: 'found',
      outcome: { kind: 'succeeded', result: { number: 3 }, providerRef: '3' },
    });
  });

  it('stops at the first issue created before the first dispatch minus the clock-skew margin, though `since` (updated_at) lets older ones through', async () => {
    const { sandbox, adapter } = await adapterOn();
    for (let i = 0; i < 150; i++) await execute(adapter, 'issues.create', issueParams(100 + i), `old-${i}`);
    sandbox.advance(10 * 60_000);
    for (let n = 2; n <= 151; n++) sandbox.touch(OWNER, REPO, n); // labelled by a bot: updated now, created long ago
    const dispatched = Date.now() + 10 * 60_000;
    await execute(adapter, 'issues.create', issueParams(9), 'op-new');
    const before = sandbox.requestCount('issues.list');
    const lookup = (id: string) =>
      adapter.doLookup(
        'issues.create',
        lookupContext(adapter, 'issues.create', asBusinessOperationId(id), issueParams(9), {
          firstDispatchedAt: dispatched,
        }),
      );
    expect(await lookup('op-new')).toMatchObject({ kind: 'found' });
    // The walk reached the cutoff (not the page bound): a miss, which proves nothing while the card bounds no delay.
    expect(await lookup('op-absent')).toMatchObject({
      kind: 'cannot-tell',
      reason: expect.stringMatching(/no item since/),
    });
    expect(sandbox.requestCount('issues.list') - before).toBe(2);
  });

  it('a match on the first page is not adopted when a later page is not a list, as when it fails: cannot tell', async () => {
    const { sandbox } = await adapterOn();
    const octokit = new Octokit({ auth: TOKEN, baseUrl: sandbox.url });
    // a 200 whose body is no list (a proxy's page): the SDK hands it over as text
    octokit.hook.wrap('request', async (request, options) =>
      options.page === 2
        ? { status: 200, url: '', headers: {}, data: 'Service temporarily unavailable' }
        : request(options),
    );
    const adapter = createGitHubAdapter({ octokit });
    const dispatched = Date.now();
    await execute(adapter, 'issues.create', issueParams(11), 'op-first-page');
    for (let i = 0; i < 99; i++) await execute(adapter, 'issues.create', issueParams(300 + i), `newer-${i}`);
    const ctx = lookupContext(adapter, 'issues.create', asBusinessOperationId('op-first-page'), issueParams(11), {
      firstDispatchedAt: dispatched,
    });
    // page 2 may hold a second issue of ours, which adopting the first would hide
    expect(await adapter.doLookup('issues.create', ctx)).toMatchObject({
      kind: 'cannot-tell',
      reason: expect.stringMatching(/HTTP 200 without a list/),
    });
  });

  it('cannot tell when the page bound is reached before the first dispatch, or when the list is rate limited', async () => {
    const { sandbox } = await adapterOn();
    const bounded = createGitHubAdapter({ auth: TOKEN, baseUrl: sandbox.url, lookupPages: 1 });
    for (let i = 0; i < 101; i++) await execute(bounded, 'issues.create', issueParams(200 + i), `new-${i}`);
    const ctx = lookupContext(bounded, 'issues.create', asBusinessOperationId('op-x'), issueParams(10), {
      firstDispatchedAt: Date.now() - 1_000,
    });
    expect(await bounded.doLookup('issues.create', ctx)).toMatchObject({ kind: 'cannot-tell' });
    sandbox.setFaults('issues.list', [{ kind: 'rate-limited', status: 429, retryAfterS: 5 }]);
    expect(await bounded.doLookup('issues.create', ctx)).toMatchObject({
      kind: 'cannot-tell',
      retryAfterMs: 5_000,
      status: 429,
    });
  });
});

describe('a network error message longer than is kept', () => {
  it('is cut with …, so what the cut left of a token is still blanked in receipts', () => {
    const error = new Error(`${'x'.repeat(276)} proxy refused ghp_R8f2kLm9Qx4Tz7Vb1Nc6Wp3Ys0Ej5Hu2Ga8`);
    const kept = createRedactor().text((outcomeFromError(error) as { message: string }).message);
    expect(kept).toMatch(/…$/);
    expect(kept).not.toContain('ghp_R8f2');
  });
});
