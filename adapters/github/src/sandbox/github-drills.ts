import type { DrillOperation, DrillSetup } from '@retrysafe/contract';
import { createGitHubAdapter } from '../github-adapter.js';
import { startGitHubSandbox } from './github-sandbox.js';

/**
 * Drill setups are the contract's `DrillSetup`: the conformance kit (`runConformance`) and the CLI's
 * `retrysafe drill` run what this file exports, and this package depends on the contract alone.
 */
export type GitHubDrill = DrillSetup;

/** A token the sandbox checks; not a secret. */
export const DRILL_TOKEN = 'drill-token-not-a-secret';
export const DRILL_OWNER = 'acme';
export const DRILL_REPO = 'widgets';

const docs = 'https://docs.github.com/rest';
export const gitHubDrillFaults: DrillOperation['faults'] = {
  permanent: {
    kind: 'status',
    status: 422,
    body: {
      message: 'Validation Failed',
      errors: [{ resource: 'Issue', code: 'invalid', field: 'labels' }],
      documentation_url: docs,
    },
  },
  transient: { kind: 'status', status: 429, body: { message: 'API rate limit exceeded', documentation_url: docs } },
  rateLimited: {
    kind: 'status',
    status: 403,
    retryAfterS: 2,
    body: { message: 'You have exceeded a secondary rate limit.', documentation_url: docs },
  },
};

export const drillIssueParams = (i: number) => ({
  owner: DRILL_OWNER,
  repo: DRILL_REPO,
  title: `Flaky test ${i}`,
  body: `Seen in nightly run ${i}.`,
});
export const drillCommentParams = (i: number) => ({
  owner: DRILL_OWNER,
  repo: DRILL_REPO,
  issue_number: 1,
  body: `Still failing in run ${i}.`,
});

export const gitHubDrill: GitHubDrill = {
  name: 'github',
  timeoutMs: 2_000,
  createAdapter: ({ baseUrl, timeoutMs }) => createGitHubAdapter({ auth: DRILL_TOKEN, baseUrl, timeoutMs }),
  startSandbox: async ({ clock }) => {
    const s = await startGitHubSandbox({
      token: DRILL_TOKEN,
      now: () => clock.now(),
      seed: [{ owner: DRILL_OWNER, repo: DRILL_REPO, title: 'Nightly build failures' }],
    });
    return { url: s.url, count: (op) => s.count(op), close: () => s.close() };
  },
  operations: {
    'issues.create': {
      params: drillIssueParams,
      changeIntent: (p) => ({ ...(p as object), title: 'changed' }),
      faults: gitHubDrillFaults,
    },
    'issues.createComment': {
      params: drillCommentParams,
      changeIntent: (p) => ({ ...(p as object), body: 'changed' }),
      faults: gitHubDrillFaults,
    },
  },
};

/** The name the CLI reads. */
export const drills: readonly GitHubDrill[] = [gitHubDrill];
