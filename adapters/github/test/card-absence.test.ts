import { asBusinessOperationId, type RetrySafetyCard } from '@retrysafe/contract';
import { notFoundIsAuthoritative } from '@retrysafe/contract/rules';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { lookupContext } from '@retrysafe/testkit/conformance';
import { describe, expect, it, vi } from 'vitest';
import { gitHubCards } from '../src/github-cards.js';
import { createGitHubAdapter } from '../src/index.js';
import { startGitHubSandbox } from '../src/sandbox/index.js';
import { commentParams, issueParams, SEED, TOKEN } from './helpers.js';

// Whether a list miss proves absence is the card's rule (the contract's notFoundIsAuthoritative, the runner's too):
// the shipped cards bound neither the list delay nor a late apply, so never; an issues.createComment card that
// bounds both (mocked below) makes a miss past them not-found.
vi.mock('../src/github-cards.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/github-cards.js')>();
  const { boundedLookup } = await import('@retrysafe/testkit/conformance');
  return {
    ...real,
    issuesCreateCommentCard: boundedLookup(real.issuesCreateCommentCard as RetrySafetyCard, '1m', '1m'),
  };
});

const MIN = 60_000;

async function missAt(operation: 'issues.create' | 'issues.createComment', params: unknown, ago: number) {
  const sandbox = closeAfterTest(await startGitHubSandbox({ token: TOKEN, seed: SEED }));
  const adapter = createGitHubAdapter({ auth: TOKEN, baseUrl: sandbox.url });
  const now = Date.now();
  const id = asBusinessOperationId(`never-sent-${operation}`);
  return adapter.doLookup(
    operation,
    lookupContext(adapter, operation, id, params, { firstDispatchedAt: now - ago, now }),
  );
}

describe("list miss: judged by the card's bounds", () => {
  it('issues.create (delay and late apply unknown): a miss a day after the dispatch is cannot-tell', async () => {
    const now = Date.now();
    expect(notFoundIsAuthoritative(gitHubCards['issues.create'], { firstDispatchedAt: now - 1440 * MIN, now })).toBe(
      false,
    );
    expect(await missAt('issues.create', issueParams(1), 1440 * MIN)).toMatchObject({ kind: 'cannot-tell' });
  });

  it('a card bounding both (1 min each): cannot-tell a minute after the dispatch, not-found after two', async () => {
    const comment = commentParams(1);
    expect(await missAt('issues.createComment', comment, MIN)).toMatchObject({
      kind: 'cannot-tell',
      retryAfterMs: MIN,
    });
    expect(await missAt('issues.createComment', comment, 2 * MIN)).toMatchObject({ kind: 'not-found' });
  });
});
