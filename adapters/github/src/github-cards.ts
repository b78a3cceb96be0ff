import { type Duration, defineCard, fact, type RetrySafetyCard } from '@retrysafe/contract';

/** Where the facts come from: GitHub's public REST documentation, and the installed SDK's source. */
export const SOURCES = {
  issues: 'https://docs.github.com/en/rest/issues/issues',
  createIssue: 'https://docs.github.com/en/rest/issues/issues#create-an-issue',
  listIssues: 'https://docs.github.com/en/rest/issues/issues#list-repository-issues',
  comments: 'https://docs.github.com/en/rest/issues/comments',
  createComment: 'https://docs.github.com/en/rest/issues/comments#create-an-issue-comment',
  listComments: 'https://docs.github.com/en/rest/issues/comments#list-issue-comments',
  rateLimits: 'https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api',
  bestPractices: 'https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api',
  troubleshooting: 'https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api',
  pagination: 'https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api',
  search: 'https://docs.github.com/en/rest/search/search',
  sdk: '@octokit/rest 22.0.1 = @octokit/core + request-log + paginate-rest + rest-endpoint-methods (no retry or throttling plugin); @octokit/request 10 fetch-wrapper.js turns a failed fetch into RequestError status 500 without a response',
} as const;

const REQUEST_ID = fact('x-github-request-id response header', SOURCES.troubleshooting);

const RETRY_LAYER = {
  layer: 'runner',
  sdkRetries: 'disabled',
  how: 'the plain @octokit/rest Octokit, which has no retry or throttling plugin (an injected client with a retry or throttling plugin is refused with AdapterConfigurationError); a failed fetch comes back as a RequestError without a response, which the adapter maps to unknown. The drill and the SDK test count one POST per attempt at the loopback sandbox.',
} as const;

const RETRYABLE = fact(
  [
    '429, or 403 with retry-after or x-ratelimit-remaining 0 (primary and secondary rate limits: wait for retry-after, else until x-ratelimit-reset, else at least a minute)',
    'connection refused / DNS failure (never sent)',
  ],
  `${SOURCES.troubleshooting}; ${SOURCES.bestPractices}; ${SOURCES.rateLimits}`,
);

const NON_RETRYABLE = (what: string) =>
  fact(
    [
      '422 validation failed (errors[].field named in the rejection)',
      '400 problems parsing JSON',
      '401 bad credentials',
      '403 without a rate-limit sign (permission)',
      `404 ${what} not found`,
      '410 gone (issues disabled in the repository)',
      '5xx, timeout, reset, a 2xx whose body was cut off: unknown ⇒ list lookup, never resent',
    ],
    `${SOURCES.troubleshooting}; ${SOURCES.createIssue}; ${SOURCES.createComment}`,
  );

const BACKOFF = { strategy: 'exponential-full-jitter', base: '1s', cap: '30s', retryAfterCap: '2m' } as const;
const HANDOFF_DESTINATION = 'the runner handoff sink (JSONL file or callback), resolved by a person from the CLI';
const RECEIPTS =
  'the runner ledger, exported as JSONL; titles and bodies are sensitive fields and never reach receipts or packets';
const DUPLICATE_TEST =
  'loopback GitHub sandbox (@retrysafe/github/sandbox) with the real @octokit/rest pointed at it (baseUrl), behind the testkit fault proxy; the sandbox counts the issues and comments it holds and the POSTs it received, and its search endpoint lags behind writes';
const LIMITS = { maxAttempts: 3, maxElapsed: '10m', lookupWindow: '2m' } as const;

const NO_KEY = (source: string) => ({
  travels: fact('none' as const, `${source}: the request has no idempotency key or client id`),
  name: fact(null, source),
  maxLength: fact(null, source),
  charset: fact(null, source),
  scope: fact(
    'none: the business-operation id travels only as a hidden HTML comment in the body (<!-- retrysafe:op=<id> -->), a lookup tag',
    source,
  ),
});

export const issuesCreateCard = defineCard({
  cardVersion: 1,
  provider: 'github',
  operation: 'github.issues.create',
  sideEffect: {
    kind: fact('create', SOURCES.createIssue),
    idempotentByNature: fact(false, `${SOURCES.createIssue}: every POST creates a new issue with the next number`),
  },
  businessOperationId: {
    rule: 'derived from intent fields owner, repo, title and body (one issue with this text in one repository), or given by the caller',
    intentFields: ['owner', 'repo', 'title', 'body'],
  },
  ids: { run: 'receipts only', attempt: 'receipts only', request: REQUEST_ID },
  providerKey: NO_KEY(SOURCES.createIssue),
  keyReuse: fact('no key exists: every POST that reaches GitHub is one more issue', SOURCES.createIssue),
  parameterMatching: fact('none', SOURCES.createIssue),
  storedResult: {
    semantics: fact('none', `${SOURCES.createIssue}: nothing is stored for a re-send`),
    includesErrors: fact(false, SOURCES.createIssue),
  },
  lookup: {
    method: fact(
      'search',
      `${SOURCES.listIssues}: GET /repos/{owner}/{repo}/issues?state=all&sort=created&direction=desc (a list, not the search API, whose index lags: ${SOURCES.search}); pull requests are in the list too and are skipped`,
    ),
    consistencyDelay: fact<Duration | null>(
      'unknown',
      `${SOURCES.listIssues}: no delay between a create and the list is documented`,
    ),
    lateApplyBound: fact<Duration>(
      'unknown',
      `${SOURCES.troubleshooting}: GitHub ends a request that takes more than 10 seconds, but does not say whether a create cut off that way was applied`,
    ),
  },
  retention: { minimum: fact(null, `${SOURCES.createIssue}: nothing is stored for a re-send`) },
  concurrency: fact('duplicates', `${SOURCES.createIssue}: no key, each POST is a new issue`),
  retryableErrors: RETRYABLE,
  nonRetryableErrors: NON_RETRYABLE('repository'),
  backoff: BACKOFF,
  limits: LIMITS,
  retryLayer: RETRY_LAYER,
  reconciler:
    'the runner, through doLookup: GET /repos/{owner}/{repo}/issues?state=all&sort=created&direction=desc&since=<first dispatch − clock-skew margin>&per_page=100, a bounded number of pages, stopping at the first issue created before that time; an issue whose body carries the marker is adopted; none is "not found", which proves nothing while the consistency delay and late-apply bound are unknown',
  handoff: {
    condition:
      'rejected; or an unknown outcome (timeout, reset, 5xx, lost 201) whose issue is not found within the lookup window — never resent blindly; or not-applied beyond max attempts / max elapsed',
    destination: HANDOFF_DESTINATION,
  },
  duplicateTest: DUPLICATE_TEST,
  receipts: RECEIPTS,
  unverified: [
    {
      field: 'lookup.consistencyDelay',
      condition: 'how soon a created issue shows in the repository issue list (the loopback sandbox shows it at once)',
      source: SOURCES.listIssues,
    },
    {
      field: 'lookup.lateApplyBound',
      condition: 'whether GitHub may still create the issue after the client gave up, and for how long',
      source: SOURCES.troubleshooting,
    },
  ],
} as const satisfies RetrySafetyCard);

export const issuesCreateCommentCard = defineCard({
  cardVersion: 1,
  provider: 'github',
  operation: 'github.issues.createComment',
  sideEffect: {
    kind: fact('create', SOURCES.createComment),
    idempotentByNature: fact(false, `${SOURCES.createComment}: every POST adds one more comment`),
  },
  businessOperationId: {
    rule: 'derived from intent fields owner, repo, issue_number and body (one comment with this text on one issue or pull request), or given by the caller',
    intentFields: ['owner', 'repo', 'issue_number', 'body'],
  },
  ids: { run: 'receipts only', attempt: 'receipts only', request: REQUEST_ID },
  providerKey: NO_KEY(SOURCES.createComment),
  keyReuse: fact('no key exists: every POST that reaches GitHub is one more comment', SOURCES.createComment),
  parameterMatching: fact('none', SOURCES.createComment),
  storedResult: {
    semantics: fact('none', `${SOURCES.createComment}: nothing is stored for a re-send`),
    includesErrors: fact(false, SOURCES.createComment),
  },
  lookup: {
    method: fact(
      'search',
      `${SOURCES.listComments}: GET /repos/{owner}/{repo}/issues/{issue_number}/comments?since=… (a list ordered by ascending id, not the search API)`,
    ),
    consistencyDelay: fact<Duration | null>(
      'unknown',
      `${SOURCES.listComments}: no delay between a create and the list is documented`,
    ),
    lateApplyBound: fact<Duration>(
      'unknown',
      `${SOURCES.troubleshooting}: GitHub ends a request that takes more than 10 seconds, but does not say whether a create cut off that way was applied`,
    ),
  },
  retention: { minimum: fact(null, `${SOURCES.createComment}: nothing is stored for a re-send`) },
  concurrency: fact('duplicates', `${SOURCES.createComment}: no key, each POST is a new comment`),
  retryableErrors: RETRYABLE,
  nonRetryableErrors: NON_RETRYABLE('repository or issue'),
  backoff: BACKOFF,
  limits: LIMITS,
  retryLayer: RETRY_LAYER,
  reconciler:
    'the runner, through doLookup: GET /repos/{owner}/{repo}/issues/{issue_number}/comments?since=<first dispatch − clock-skew margin>&per_page=100 (since filters on updated_at, which is never before created_at), a bounded number of pages; a comment whose body carries the marker is adopted; none is "not found", which proves nothing while the consistency delay and late-apply bound are unknown',
  handoff: {
    condition:
      'rejected; or an unknown outcome whose comment is not found within the lookup window — never resent blindly; or not-applied beyond max attempts / max elapsed',
    destination: HANDOFF_DESTINATION,
  },
  duplicateTest: DUPLICATE_TEST,
  receipts: RECEIPTS,
  unverified: [
    {
      field: 'lookup.consistencyDelay',
      condition: "how soon a created comment shows in the issue's comment list (the loopback sandbox shows it at once)",
      source: SOURCES.listComments,
    },
    {
      field: 'lookup.lateApplyBound',
      condition: 'whether GitHub may still create the comment after the client gave up, and for how long',
      source: SOURCES.troubleshooting,
    },
  ],
} as const satisfies RetrySafetyCard);

export const gitHubCards = {
  'issues.create': issuesCreateCard,
  'issues.createComment': issuesCreateCommentCard,
} as const;
