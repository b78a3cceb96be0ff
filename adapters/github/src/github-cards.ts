import { type Duration, defineCard, fact, type RetrySafetyCard } from '@retrysafe/contract';

/** Where the facts come from: GitHub's public REST documentation. */
const SOURCES = {
  createIssue: 'https://docs.github.com/en/rest/issues/issues#create-an-issue',
  listIssues: 'https://docs.github.com/en/rest/issues/issues#list-repository-issues',
  createComment: 'https://docs.github.com/en/rest/issues/comments#create-an-issue-comment',
  listComments: 'https://docs.github.com/en/rest/issues/comments#list-issue-comments',
  rateLimits: 'https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api',
  bestPractices: 'https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api',
  troubleshooting: 'https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api',
  search: 'https://docs.github.com/en/rest/search/search',
  pagination: 'https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api',
  user: 'https://docs.github.com/en/rest/users/users#get-the-authenticated-user',
} as const;

/** What a GitHub create card says, filled in with what differs between an issue and a comment. */
function gitHubCard(spec: {
  operation: string;
  thing: 'issue' | 'comment';
  createSource: string;
  listSource: string;
  /** What the created thing lives in, for the "404 … not found" refusal. */
  parent: string;
  /** Where a created thing shows up, for the consistency-delay question. */
  listName: string;
  idempotentByNature: string;
  intentRule: string;
  intentFields: string[];
  /** A single-line free text of the intent (the issue title): trimmed. */
  titleField?: string;
  lookupMethod: string;
  reconciler: string;
  handoff: string;
}): RetrySafetyCard {
  const { createSource: create, listSource: list, thing } = spec;
  const nothingStored = `${create}: nothing is stored for a re-send`;
  return {
    cardVersion: 1,
    provider: 'github',
    operation: `github.${spec.operation}`,
    sideEffect: {
      kind: fact('create', create),
      idempotentByNature: fact(false, `${create}: ${spec.idempotentByNature}`),
      rejectionMayCreate: fact<boolean>(
        'unknown',
        `${create} and ${SOURCES.troubleshooting} name each 4xx (422 "Validation failed, or the endpoint has been spammed"), not whether a refused request can still create the ${thing}`,
      ),
    },
    businessOperationId: {
      rule: spec.intentRule,
      intentFields: spec.intentFields,
      // GitHub resolves Octo/Repo and octo/repo to one repository, so an agent's respelling is the same intent.
      normalize: [
        ...(['owner', 'repo'] as const).map((field) => ({
          field,
          steps: ['case-fold' as const],
          source: `${create}: ${field}, "The name is not case sensitive."`,
          evidence: create,
        })),
        ...(spec.titleField === undefined
          ? []
          : [
              {
                field: spec.titleField,
                steps: ['trim' as const],
                source: `${create}: GitHub keeps the title as given and does not deduplicate issues, so the title's equality is retrysafe's: surrounding white space an agent adds is not another issue; case, inner white space and compatibility forms are kept apart (docs/concepts.md, Normalisation)`,
              },
            ]),
      ],
    },
    ids: {
      run: 'receipts only',
      attempt: 'receipts only',
      request: fact('x-github-request-id response header', SOURCES.troubleshooting),
    },
    providerKey: {
      travels: fact('none', `${create}: the request has no idempotency key or client id`),
      name: fact(null, create),
      maxLength: fact(null, create),
      charset: fact(null, create),
      scope: fact(
        'none: the business-operation id travels only as a hidden HTML comment in the body (<!-- retrysafe:op=<id> -->), a lookup tag',
        create,
      ),
    },
    keyReuse: fact(`no key exists: every POST that reaches GitHub is one more ${thing}`, create),
    parameterMatching: fact('none', create),
    storedResult: { semantics: fact('none', nothingStored), includesErrors: fact(false, create) },
    lookup: {
      method: fact(
        'search',
        `${list}: ${spec.lookupMethod}; each item's user.login, compared with the token's login (${SOURCES.user})`,
      ),
      consistencyDelay: fact<Duration | null>(
        'unknown',
        `${list}: no delay between a create and the list is documented`,
      ),
      lateApplyBound: fact<Duration>(
        'unknown',
        `${SOURCES.troubleshooting}: GitHub ends a request that takes more than 10 seconds, but does not say whether a create cut off that way was applied`,
      ),
    },
    retention: { minimum: fact(null, nothingStored) },
    concurrency: fact('duplicates', `${create}: no key, each POST is a new ${thing}`),
    retryableErrors: fact(
      [
        '429, or 403 with retry-after or x-ratelimit-remaining 0 (primary and secondary rate limits: wait for retry-after, else until x-ratelimit-reset, else a minute, doubled for each limit naming no wait the same request (the creates of one operation, one read) got just before, each answer once, until GitHub processes it (a pass or a refusal): "wait for at least one minute", then, if it "continues to fail", "an exponentially increasing amount of time")',
        '422 "was submitted too quickly" (the content-creation limit, "the endpoint has been spammed": nothing created; wait as for a secondary rate limit)',
        'connection refused / DNS failure / a connect that timed out (never sent)',
      ],
      `${SOURCES.troubleshooting}; ${SOURCES.bestPractices}; ${SOURCES.rateLimits}; https://github.com/cli/cli/issues/4801`,
    ),
    nonRetryableErrors: fact(
      [
        '422 validation failed, other than "submitted too quickly" (errors[].field named in the rejection)',
        '400 problems parsing JSON',
        '401 bad credentials',
        '403 without a rate-limit sign (permission)',
        `404 ${spec.parent} not found`,
        '410 gone (issues disabled in the repository)',
        '5xx, timeout, reset, a 2xx whose body was cut off: unknown ⇒ list lookup, never resent',
      ],
      `${SOURCES.troubleshooting}; ${SOURCES.createIssue}; ${SOURCES.createComment}`,
    ),
    backoff: { strategy: 'exponential-full-jitter', base: '1s', cap: '30s', retryAfterCap: '2m' },
    limits: { maxAttempts: 3, maxElapsed: '10m', lookupWindow: '2m' },
    // @octokit/rest 22.0.1 is @octokit/core + request-log + paginate-rest + rest-endpoint-methods; its
    // @octokit/request turns a failed fetch into a RequestError (status 500) without a response.
    retryLayer: {
      layer: 'runner',
      sdkRetries: 'disabled',
      how: 'the plain @octokit/rest Octokit, which has no retry or throttling plugin (an injected client with a retry or throttling plugin is refused with AdapterConfigurationError); a failed fetch comes back as a RequestError without a response, which the adapter maps to unknown. The drill and the SDK test count one POST per attempt at the loopback sandbox.',
    },
    reconciler: spec.reconciler,
    handoff: {
      condition: spec.handoff,
      destination: 'the runner handoff sink (JSONL file or callback), resolved by a person from the CLI',
    },
    duplicateTest:
      'loopback GitHub sandbox (@retrysafe/github/sandbox) with the real @octokit/rest pointed at it (baseUrl), behind the testkit fault proxy; the sandbox counts the issues and comments it holds and the POSTs it received, and its search endpoint lags behind writes',
    receipts:
      'the runner ledger, exported as JSONL; titles and bodies are sensitive fields and never reach receipts or packets',
    unverified: [
      {
        field: 'sideEffect.rejectionMayCreate',
        condition: `whether a request GitHub refuses (403, 404, 410, 422) can still create the ${thing}`,
        source: create,
      },
      {
        field: 'lookup.consistencyDelay',
        condition: `how soon a created ${thing} shows in ${spec.listName} (the loopback sandbox shows it at once)`,
        source: list,
      },
      {
        field: 'lookup.lateApplyBound',
        condition: `whether GitHub may still create the ${thing} after the client gave up, and for how long`,
        source: SOURCES.troubleshooting,
      },
    ],
  };
}

/** How the id reads owner and repo: the repository GitHub resolves them to (a renamed one answers under its old name),
 * and where the create and its lookup then go: that id, which a name passing to another repository does not move. */
const repository = (thing: string) =>
  `owner and repo (as the id of the repository GET /repos resolves them to before the claim and before every later send or lookup; the create and its lookup go to /repositories/{id}/…, the address GitHub's own pagination links give a repository (${SOURCES.pagination}; the REST reference lists only /repos/{owner}/{repo}/…, so a refusal of the address would be a 404 handed off, never a second ${thing}), so a name that passes to another repository in between never gets the ${thing}; to /repos/{owner}/{repo}/… only under an intent the caller gives)`;

export const issuesCreateCard = defineCard(
  gitHubCard({
    operation: 'issues.create',
    thing: 'issue',
    createSource: SOURCES.createIssue,
    listSource: SOURCES.listIssues,
    parent: 'repository',
    listName: 'the repository issue list',
    idempotentByNature: 'every POST creates a new issue with the next number',
    intentRule: `derived from intent fields ${repository('issue')}, title and body (one issue with this text in one repository), or given by the caller`,
    intentFields: ['owner', 'repo', 'title', 'body'],
    titleField: 'title',
    lookupMethod: `GET /repositories/{id}/issues?state=all&sort=created&direction=desc (a list, not the search API, whose index lags: ${SOURCES.search}); pull requests are in the list too and are skipped`,
    reconciler:
      'the runner, through doLookup: GET /repositories/{id}/issues?state=all&sort=created&direction=desc&since=<first dispatch − clock-skew margin>&per_page=100, a bounded number of pages, stopping at the first issue created before that time (a page that fails, or the bound reached first, is "cannot tell"; a walk of several pages is walked again, and an item of its earlier pages gone by then is "cannot tell": the pages are numbered, so a deletion may have moved one unread); the one issue written by the login of the token (GET /user once, or the login option) whose body ends with the marker is adopted, two are "cannot tell"; none is "cannot tell" while the consistency delay or late-apply bound is unknown (notFoundIsAuthoritative), "not found" only past both',
    handoff:
      'rejected; or an unknown outcome (timeout, reset, 5xx, lost 201) whose issue is not found within the lookup window — never resent blindly; or not-applied beyond max attempts / max elapsed',
  }),
);

export const issuesCreateCommentCard = defineCard(
  gitHubCard({
    operation: 'issues.createComment',
    thing: 'comment',
    createSource: SOURCES.createComment,
    listSource: SOURCES.listComments,
    parent: 'repository or issue',
    listName: "the issue's comment list",
    idempotentByNature: 'every POST adds one more comment',
    intentRule: `derived from intent fields ${repository('comment')}, issue_number and body (one comment with this text on one issue or pull request), or given by the caller`,
    intentFields: ['owner', 'repo', 'issue_number', 'body'],
    lookupMethod:
      'GET /repositories/{id}/issues/{issue_number}/comments?since=… (a list ordered by ascending id, not the search API)',
    reconciler:
      'the runner, through doLookup: GET /repositories/{id}/issues/{issue_number}/comments?since=<first dispatch − clock-skew margin>&per_page=100 (since filters on updated_at, which is never before created_at), a bounded number of pages (a page that fails, or the bound reached with more to read, is "cannot tell"; a walk of several pages is walked again, and an item of its earlier pages gone by then is "cannot tell": the pages are numbered, so a deletion may have moved one unread); the one comment written by the login of the token whose body ends with the marker is adopted, two are "cannot tell"; none is "cannot tell" while the consistency delay or late-apply bound is unknown (notFoundIsAuthoritative), "not found" only past both',
    handoff:
      'rejected; or an unknown outcome whose comment is not found within the lookup window — never resent blindly; or not-applied beyond max attempts / max elapsed',
  }),
);

export const gitHubCards = {
  'issues.create': issuesCreateCard,
  'issues.createComment': issuesCreateCommentCard,
} as const;
