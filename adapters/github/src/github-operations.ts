import type { Octokit } from '@octokit/rest';
import type { BusinessOperationId, FrameOperation, JsonSchema } from '@retrysafe/contract';
import { issuesCreateCard, issuesCreateCommentCard } from './github-cards.js';
import type { GitHubAnswer } from './github-errors.js';

/** What both creates name: the repository and the Markdown body. */
export interface RepoText {
  readonly owner: string;
  readonly repo: string;
  readonly body: string;
}

/** `issues.create` params: the repository and the issue's text, plus optional labels and assignees. */
export interface IssuesCreateParams extends RepoText {
  readonly title: string;
  readonly labels?: readonly string[];
  readonly assignees?: readonly string[];
  readonly milestone?: number;
}

/** `issues.createComment` params: one comment on one issue or pull request. */
export interface IssuesCreateCommentParams extends RepoText {
  readonly issue_number: number;
}

export interface CommentResult {
  readonly id: number;
  readonly htmlUrl: string | null;
  readonly createdAt: string | null;
}

export interface IssueResult extends CommentResult {
  readonly number: number;
}

/** Each GitHub operation's params and what a `done` result holds (runner.run checks a call against them). */
export type GitHubOperationTypes = {
  readonly 'issues.create': { readonly params: IssuesCreateParams; readonly result: IssueResult };
  readonly 'issues.createComment': { readonly params: IssuesCreateCommentParams; readonly result: CommentResult };
};

/** One item of a lookup page, as GitHub lists it. */
export interface ListedItem {
  readonly body?: string | null;
  readonly created_at?: string;
  readonly pull_request?: unknown;
  readonly user?: { readonly login?: string } | null;
  readonly [field: string]: unknown;
}

/** The request options the adapter passes on every SDK call (the abort signal). */
export interface CallOptions {
  readonly request: { readonly signal: AbortSignal };
}

/** An operation as the adapter runs it: the contract spec plus its SDK call, its lookup list and how to read them. */
export interface GitHubOperation extends FrameOperation {
  /** Sends the create through the SDK with the marker in the body, to the repository `target` names when given. */
  create(octokit: Octokit, params: unknown, id: BusinessOperationId, options: Sent): Promise<GitHubAnswer>;
  /** One page of the lookup list: items updated at or after `since`. */
  list(octokit: Octokit, params: unknown, since: string, page: number, options: Sent): Promise<GitHubAnswer>;
  /** The list is newest first by creation, so the walk stops at the first item created before the cutoff. */
  readonly newestFirst: boolean;
  /** Reads a created item (a 201 body or a lookup match); null when it is not one. */
  read(item: unknown): { result: IssueResult | CommentResult; providerRef: string } | null;
}

/** The call's options and the intent the runner resolved (`ctx.target`: the repository's id in `repo`), if it did. */
type Sent = CallOptions & { readonly target?: Readonly<Record<string, unknown>> | undefined };

/** The repository's route and its path parameters: by the id the runner read when it did (a name may have passed to
 * another repository since: GitHub's own pagination links address a repository as /repositories/{id}), else by name. */
function where({ owner, repo }: Pick<RepoText, 'owner' | 'repo'>, target: Sent['target']) {
  return target
    ? { route: '/repositories/{repository_id}', at: { repository_id: String(target.repo) } }
    : { route: '/repos/{owner}/{repo}', at: { owner, repo } };
}

export const PER_PAGE = 100;
const MARKER_PREFIX = '<!-- retrysafe:op=';

/** The hidden marker: an HTML comment GitHub keeps in the body and does not render. Ids never contain `>`, so it cannot close early. */
export function markerFor(id: BusinessOperationId): string {
  return `${MARKER_PREFIX}${id} -->`;
}

export function withMarker(body: string, id: BusinessOperationId): string {
  return body.length > 0 ? `${body}\n\n${markerFor(id)}` : markerFor(id);
}

/** Where `withMarker` puts it, at the very end: a quote or a copy with words after it is not our item. */
export function carriesMarker(item: ListedItem, id: BusinessOperationId): boolean {
  return typeof item.body === 'string' && item.body.endsWith(markerFor(id));
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

// Not `.` or `..`: a dot segment in the URL path resolves to another path.
const name: JsonSchema = { type: 'string', minLength: 1, maxLength: 100, pattern: '^(?!\\.\\.?$)[A-Za-z0-9_.-]+$' };
const body: JsonSchema = {
  type: 'string',
  description: 'Markdown; a hidden marker carrying the business-operation id is appended',
};

/** Params in one repository: owner, repo, the operation's own fields; no others. */
const inRepo = (required: string[], properties: Record<string, JsonSchema>): JsonSchema => ({
  type: 'object',
  required: ['owner', 'repo', ...required],
  additionalProperties: false,
  properties: { owner: name, repo: name, ...properties },
});

/** A body that already holds a marker would make two operations look alike to the lookup. */
function markerInBody(params: unknown) {
  return isObj(params) && typeof params.body === 'string' && params.body.includes(MARKER_PREFIX)
    ? [{ path: 'body', message: 'must not contain a retrysafe marker (<!-- retrysafe:op=…): the adapter adds its own' }]
    : [];
}

export const issuesCreate: GitHubOperation = {
  name: 'issues.create',
  description:
    "Open an issue in a GitHub repository (POST /repositories/{id}/issues, the id GET /repos/{owner}/{repo} reads). No provider idempotency: the body carries a hidden marker with the business-operation id, and an unknown outcome is reconciled by listing the repository's newest issues — never resent blindly.",
  card: issuesCreateCard,
  sensitiveFields: ['title', 'body'],
  keyRule: null,
  // The id reads the repository GET /repos resolves owner/repo to (github-adapter.ts).
  resolvesIntent: true,
  paramsSchema: inRepo(['title', 'body'], {
    title: { type: 'string', minLength: 1 },
    body,
    labels: { type: 'array', items: { type: 'string', minLength: 1 } },
    assignees: { type: 'array', items: { type: 'string', minLength: 1 } },
    milestone: { type: 'integer', minimum: 1 },
  }),
  checkParams: markerInBody,
  newestFirst: true,
  // The frame has checked params against the schema, so they go to GitHub as given, with the marker added.
  create(octokit, params, id, { target, ...options }) {
    const { owner, repo, ...p } = params as IssuesCreateParams;
    const { route, at } = where({ owner, repo }, target);
    return octokit.request(`POST ${route}/issues`, { ...at, ...p, body: withMarker(p.body, id), ...options });
  },
  list(octokit, params, since, page, { target, ...options }) {
    const { route, at } = where(params as IssuesCreateParams, target);
    const order = { state: 'all', sort: 'created', direction: 'desc' } as const;
    return octokit.request(`GET ${route}/issues`, { ...at, ...order, since, per_page: PER_PAGE, page, ...options });
  },
  read(item) {
    if (!isObj(item) || typeof item.number !== 'number' || typeof item.id !== 'number') return null;
    const result: IssueResult = {
      number: item.number,
      id: item.id,
      htmlUrl: str(item.html_url),
      createdAt: str(item.created_at),
    };
    return { result, providerRef: String(item.number) };
  },
};

export const issuesCreateComment: GitHubOperation = {
  name: 'issues.createComment',
  description:
    "Comment on a GitHub issue or pull request (POST /repositories/{id}/issues/{issue_number}/comments, the id GET /repos/{owner}/{repo} reads). No provider idempotency: the body carries a hidden marker with the business-operation id, and an unknown outcome is reconciled by listing the issue's comments since the first dispatch — never resent blindly.",
  card: issuesCreateCommentCard,
  sensitiveFields: ['body'],
  keyRule: null,
  resolvesIntent: true,
  paramsSchema: inRepo(['issue_number', 'body'], {
    issue_number: { type: 'integer', minimum: 1 },
    body: { ...body, minLength: 1 },
  }),
  checkParams: markerInBody,
  newestFirst: false,
  create(octokit, params, id, { target, ...options }) {
    const p = params as IssuesCreateCommentParams;
    const { route, at } = where(p, target);
    const sent = { ...at, issue_number: p.issue_number, body: withMarker(p.body, id), ...options };
    return octokit.request(`POST ${route}/issues/{issue_number}/comments`, sent);
  },
  list(octokit, params, since, page, { target, ...options }) {
    const p = params as IssuesCreateCommentParams;
    const { route, at } = where(p, target);
    const query = { ...at, issue_number: p.issue_number, since, per_page: PER_PAGE, page, ...options };
    return octokit.request(`GET ${route}/issues/{issue_number}/comments`, query);
  },
  read(item) {
    if (!isObj(item) || typeof item.id !== 'number') return null;
    const result: CommentResult = { id: item.id, htmlUrl: str(item.html_url), createdAt: str(item.created_at) };
    return { result, providerRef: String(item.id) };
  },
};

export const gitHubOperations: Readonly<Record<string, GitHubOperation>> = {
  [issuesCreate.name]: issuesCreate,
  [issuesCreateComment.name]: issuesCreateComment,
};
