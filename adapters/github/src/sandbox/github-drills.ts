import type { DrillOperation, DrillSetup } from '@retrysafe/contract';
import { createGitHubAdapter } from '../github-adapter.js';
import { startGitHubSandbox } from './github-sandbox.js';

/** A token the sandbox checks; not a secret. */
export const DRILL_TOKEN = 'drill-token-not-a-secret';
const repo = { owner: 'acme', repo: 'widgets' };

const documentation_url = 'https://docs.github.com/rest';
const faults: DrillOperation['faults'] = {
  permanent: {
    kind: 'status',
    status: 422,
    body: {
      message: 'Validation Failed',
      errors: [{ resource: 'Issue', code: 'invalid', field: 'labels' }],
      documentation_url,
    },
  },
  transient: { kind: 'status', status: 429, body: { message: 'API rate limit exceeded', documentation_url } },
  rateLimited: {
    kind: 'status',
    status: 403,
    retryAfterS: 2,
    body: { message: 'You have exceeded a secondary rate limit.', documentation_url },
  },
};

/** What the conformance kit (`runConformance`) and `retrysafe drill --adapter github` run. */
export const gitHubDrill: DrillSetup = {
  name: 'github',
  timeoutMs: 2_000,
  createAdapter: ({ baseUrl, timeoutMs }) => createGitHubAdapter({ auth: DRILL_TOKEN, baseUrl, timeoutMs }),
  startSandbox: async ({ clock }) => {
    const seed = [{ ...repo, title: 'Nightly build failures' }];
    const s = await startGitHubSandbox({ token: DRILL_TOKEN, now: () => clock.now(), seed });
    return { url: s.url, count: (op) => s.count(op), close: () => s.close() };
  },
  operations: {
    'issues.create': {
      params: (i) => ({ ...repo, title: `Flaky test ${i}`, body: `Seen in nightly run ${i}.` }),
      changeIntent: (p) => ({ ...(p as object), title: 'changed' }),
      faults,
    },
    'issues.createComment': {
      params: (i) => ({ ...repo, issue_number: 1, body: `Still failing in run ${i}.` }),
      changeIntent: (p) => ({ ...(p as object), body: 'changed' }),
      faults,
    },
  },
};

export const drills: readonly DrillSetup[] = [gitHubDrill];
