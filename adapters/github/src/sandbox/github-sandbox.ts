import { randomUUID } from 'node:crypto';
import {
  type CallScript,
  type ClockSource,
  type Counts,
  createCounts,
  createFaultScripts,
  createSandboxClock,
  type FaultScripts,
  isPlainObject as isObj,
  type LoopbackRequest,
  parseJsonBody,
  type Route,
  routeRequest,
  type SandboxReply,
  startLoopbackServer,
} from '@retrysafe/sandbox-kit';

/**
 * A loopback emulation of the GitHub REST endpoints the adapter uses, as docs.github.com documents
 * them: creating an issue or a comment answers 201 with the object and keeps no idempotency key;
 * the repository's issue list (pull requests included, `state`, `sort`, `direction`, `since` on
 * updated_at, pages) and an issue's comment list show a new item at once; the search endpoint lags
 * behind writes (`searchLagMs`), so a search right after a lost answer misses the issue; scripted
 * rate limits answer 403/429 with `retry-after` or `x-ratelimit-remaining: 0` + `x-ratelimit-reset`,
 * before anything is applied; `owner` and `repo` name one repository in any case, as GitHub reads them, and
 * `/repositories/{id}/…` names it by its id, whatever its name (the URL GitHub's own pagination links give for
 * `/repos/{owner}/{repo}/issues`: https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api).
 * Network faults are the testkit's fault proxy's, in front of it.
 */

export type SandboxKind =
  | 'issues.create'
  | 'issues.createComment'
  | 'issues.list'
  | 'comments.list'
  | 'search.issues'
  | 'user'
  | 'repo';

export type SandboxFault =
  | 'pass'
  /** A rate-limited answer before anything is applied: `retry-after` when `retryAfterS`, else remaining 0 and a reset `resetInS` ahead (an empty reset for `''`), else neither (a "secondary rate limit" message only). */
  | {
      readonly kind: 'rate-limited';
      readonly status: 403 | 429;
      readonly retryAfterS?: number;
      readonly resetInS?: number | '';
    }
  /** This status with a GitHub error body; `commit: true` applies the create first (a 5xx after the effect). */
  | { readonly kind: 'status'; readonly status: number; readonly commit?: boolean };

export type FaultScript = CallScript<SandboxFault>;

export interface GitHubSandboxOptions {
  readonly port?: number;
  /** When set, requests without this token (`token …` or `Bearer …`) get 401 Bad credentials. */
  readonly token?: string;
  /** Other people's tokens and their logins: what they create carries their `user.login`. Anyone else is `retrysafe-bot`. */
  readonly people?: Readonly<Record<string, string>>;
  /** How long after a write the search endpoint shows it (default 60 000 ms). */
  readonly searchLagMs?: number;
  readonly faults?: Partial<Record<SandboxKind, FaultScript>>;
  readonly now?: ClockSource;
  /** Repository ids by full name (any case): two names with one id are a renamed repository. Default: one per name. */
  readonly repositories?: Readonly<Record<string, number>>;
  /** Issues that exist before the test (to comment on); `count('issues.create')` leaves them out. */
  readonly seed?: readonly { readonly owner: string; readonly repo: string; readonly title: string }[];
}

export interface SandboxIssue {
  readonly kind: 'issue' | 'pull-request' | 'seeded';
  readonly repo: string;
  /** The repository's id: its issues follow it through a rename, never to a new repository under its old name. */
  readonly repositoryId: number;
  readonly id: number;
  readonly number: number;
  readonly title: string;
  readonly body: string;
  readonly createdAt: number;
  readonly login: string;
}

export interface SandboxComment {
  readonly repo: string;
  readonly issueNumber: number;
  readonly id: number;
  readonly body: string;
  readonly createdAt: number;
  readonly login: string;
}

export interface GitHubSandbox {
  /** The API root for Octokit's baseUrl, e.g. `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** Records held: `issues.create` counts issues (not pull requests), `issues.createComment` comments. */
  count(kind: string): number;
  /** Requests received of a kind. */
  requestCount(kind: SandboxKind): number;
  issues(): readonly SandboxIssue[];
  /** Marks an issue updated now (a label or an edit by someone else): `since` filters on updated_at, not creation. */
  touch(owner: string, repo: string, number: number): void;
  /** A pull request in the repository (GitHub lists pull requests among issues). */
  addPullRequest(owner: string, repo: string, title: string, body: string): SandboxIssue;
  /** An issue or pull request deleted (an admin can, through GraphQL's deleteIssue): it leaves every list. */
  deleteIssue(owner: string, repo: string, number: number): boolean;
  setFaults(kind: SandboxKind, script: FaultScript | undefined): void;
  /** Gives a full name to the repository `id` (a rename, or a new repository under a name another one left). */
  setRepository(fullName: string, id: number): void;
  advance(ms: number): void;
  close(): Promise<void>;
}

const DOCS = 'https://docs.github.com/rest';
const NAME = '[A-Za-z0-9_.-]+';
/** A repository by owner/name (m[1], m[2]) or by its id (m[3]). */
const REPO = `(?:/repos/(${NAME})/(${NAME})|/repositories/(\\d+))`;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors?: readonly unknown[],
  ) {
    super(message);
  }
}

/** GitHub's timestamps have whole seconds. */
const secondOf = (ms: number) => Math.floor(ms / 1000) * 1000;
const iso = (ms: number) => new Date(secondOf(ms)).toISOString().replace('.000Z', 'Z');

function commentJson(c: SandboxComment) {
  return {
    id: c.id,
    body: c.body,
    user: { login: c.login, type: 'User' },
    html_url: `https://github.test/${c.repo}/issues/${c.issueNumber}#issuecomment-${c.id}`,
    created_at: iso(c.createdAt),
    updated_at: iso(c.createdAt),
  };
}

function readBody(req: LoopbackRequest): Record<string, unknown> {
  const parsed = parseJsonBody(req.rawBody);
  if (!parsed.ok || !isObj(parsed.value)) throw new HttpError(400, 'Problems parsing JSON');
  return parsed.value;
}
const missing = (resource: string, field: string) =>
  new HttpError(422, 'Validation Failed', [{ resource, code: 'missing_field', field }]);

/** One page of a list, GitHub's `page` / `per_page` (max 100). */
function page<T>(items: readonly T[], q: URLSearchParams): T[] {
  const per = Math.min(100, Math.max(1, Number(q.get('per_page') ?? '30') || 30));
  const n = Math.max(1, Number(q.get('page') ?? '1') || 1);
  return items.slice((n - 1) * per, n * per);
}
const sinceOf = (q: URLSearchParams) => (q.get('since') ? new Date(q.get('since')!).getTime() : -Infinity);

type Handler = (req: LoopbackRequest, m: RegExpExecArray, fault: SandboxFault) => SandboxReply;
const repoOf = (m: RegExpExecArray) => `${m[1]}/${m[2]}`;
/**
 * GitHub's REST reference says of both `owner` and `repo` "The name is not case sensitive."
 * (https://docs.github.com/en/rest/issues/issues#create-an-issue): Acme/Widgets is acme/widgets.
 */
const sameRepo = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

const route = (method: string, re: string, kind: SandboxKind): Route<{ kind: SandboxKind; m: RegExpExecArray }> => ({
  method,
  path: new RegExp(`^${re}$`),
  handle: (_req, m) => ({ kind, m: m! }),
});
const ROUTES = [
  route('POST', `${REPO}/issues`, 'issues.create'),
  route('GET', `${REPO}/issues`, 'issues.list'),
  route('POST', `${REPO}/issues/(\\d+)/comments`, 'issues.createComment'),
  route('GET', `${REPO}/issues/(\\d+)/comments`, 'comments.list'),
  route('GET', '/search/issues', 'search.issues'),
  route('GET', '/user', 'user'),
  route('GET', `/repos/(${NAME})/(${NAME})`, 'repo'),
];

function rateLimited(f: Extract<SandboxFault, { kind: 'rate-limited' }>, nowMs: number): SandboxReply {
  const headers: Record<string, string> = {};
  if (f.retryAfterS !== undefined) headers['retry-after'] = String(f.retryAfterS);
  else if (f.resetInS !== undefined)
    Object.assign(headers, {
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': f.resetInS === '' ? '' : String(Math.ceil(nowMs / 1000) + f.resetInS),
    });
  const body = {
    message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
    documentation_url: `${DOCS}/using-the-rest-api/rate-limits-for-the-rest-api`,
  };
  return { status: f.status, headers, body };
}

const tokenOf = (req: LoopbackRequest) => /^(?:token|Bearer) (.+)$/.exec(req.headers.authorization ?? '')?.[1];

interface Serving {
  readonly token: string | undefined;
  readonly people: Readonly<Record<string, string>>;
  readonly now: () => number;
  readonly requests: Counts<SandboxKind | 'other'>;
  readonly faults: FaultScripts<SandboxKind, SandboxFault>;
  readonly handlers: Record<SandboxKind, Handler>;
}

/** Routes and authenticates the request, plays its kind's scripted fault, else its handler; every request is logged. */
function serve(req: LoopbackRequest, s: Serving): SandboxReply {
  const matched = routeRequest(ROUTES, req)?.value;
  s.requests.bump(matched?.kind ?? 'other');
  if (!matched) return { status: 404, body: { message: 'Not Found', documentation_url: DOCS } };
  const token = tokenOf(req);
  if (s.token !== undefined && token !== s.token && !(token && Object.hasOwn(s.people, token)))
    return { status: 401, body: { message: 'Bad credentials', documentation_url: DOCS } };
  const { fault } = s.faults.take(matched.kind);
  try {
    if (typeof fault === 'object' && fault.kind === 'rate-limited') return rateLimited(fault, s.now());
    if (typeof fault === 'object' && fault.kind === 'status') {
      if (fault.commit) s.handlers[matched.kind](req, matched.m, fault);
      return {
        status: fault.status,
        body: { message: `Sandbox scripted HTTP ${fault.status}`, documentation_url: DOCS },
      };
    }
    return s.handlers[matched.kind](req, matched.m, fault);
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    return {
      status: error.status,
      body: { message: error.message, ...(error.errors ? { errors: error.errors } : {}), documentation_url: DOCS },
    };
  }
}

/** Starts the sandbox on 127.0.0.1 (port 0 = any free port). */
export async function startGitHubSandbox(options: GitHubSandboxOptions = {}): Promise<GitHubSandbox> {
  const clock = createSandboxClock(options.now, 'github sandbox');
  const searchLagMs = options.searchLagMs ?? 60_000;
  const faults = createFaultScripts<SandboxKind, SandboxFault>('pass', options.faults);
  const requests = createCounts<SandboxKind | 'other'>();
  const issues: SandboxIssue[] = [];
  const comments: SandboxComment[] = [];
  /** updated_at per issue id, when it differs from created_at. */
  const updatedAt = new Map<number, number>();
  const people = options.people ?? {};
  const loginOf = (req: LoopbackRequest) => people[tokenOf(req) ?? ''] ?? 'retrysafe-bot';
  let nextId = 1000;
  const repositories = new Map(Object.entries(options.repositories ?? {}).map(([n, id]) => [n.toLowerCase(), id]));
  const repositoryId = (name: string) => {
    const key = name.toLowerCase();
    if (!repositories.has(key)) repositories.set(key, 1_000_000 + repositories.size);
    return repositories.get(key)!;
  };
  const named = (spelt: string) => ({ rid: repositoryId(spelt), spelt });
  /** The repository a request names: by owner/name, or by an id some name was given (else 404). */
  const repositoryOf = (m: RegExpExecArray) => {
    if (m[3] === undefined) return named(repoOf(m));
    const rid = Number(m[3]);
    const spelt = [...repositories].find(([, id]) => id === rid)?.[0];
    if (spelt === undefined) throw new HttpError(404, 'Not Found');
    return { rid, spelt };
  };
  for (const s of options.seed ?? []) addIssue(named(`${s.owner}/${s.repo}`), 'seeded', s.title, '', 'retrysafe-bot');

  function addIssue(
    { rid, spelt }: { rid: number; spelt: string },
    kind: SandboxIssue['kind'],
    title: string,
    body: string,
    login: string,
  ) {
    // The repository keeps the name it was first spelt with, as GitHub keeps its own.
    const repo = issues.find((i) => i.repositoryId === rid)?.repo ?? spelt;
    const number = Math.max(0, ...issues.filter((i) => i.repositoryId === rid).map((i) => i.number)) + 1;
    const at = clock.now();
    const issue: SandboxIssue = {
      kind,
      repo,
      repositoryId: rid,
      id: nextId++,
      number,
      title,
      body,
      createdAt: at,
      login,
    };
    issues.push(issue);
    return issue;
  }

  function issueJson(i: SandboxIssue) {
    const url = `https://github.test/${i.repo}/${i.kind === 'pull-request' ? 'pull' : 'issues'}/${i.number}`;
    return {
      id: i.id,
      number: i.number,
      title: i.title,
      body: i.body,
      user: { login: i.login, type: 'User' },
      state: 'open',
      html_url: url,
      created_at: iso(i.createdAt),
      updated_at: iso(updatedAt.get(i.id) ?? i.createdAt),
      ...(i.kind === 'pull-request' ? { pull_request: { html_url: url } } : {}),
    };
  }

  function findIssue(m: RegExpExecArray): SandboxIssue {
    const { rid } = repositoryOf(m);
    const issue = issues.find((i) => i.repositoryId === rid && String(i.number) === m[4]);
    if (!issue) throw new HttpError(404, 'Not Found');
    return issue;
  }

  const handlers: Record<SandboxKind, Handler> = {
    'issues.create': (req, m) => {
      const b = readBody(req);
      if (typeof b.title !== 'string' || b.title === '') throw missing('Issue', 'title');
      const issue = addIssue(repositoryOf(m), 'issue', b.title, typeof b.body === 'string' ? b.body : '', loginOf(req));
      return { status: 201, body: issueJson(issue) };
    },
    'issues.createComment': (req, m) => {
      const issue = findIssue(m);
      const b = readBody(req);
      if (typeof b.body !== 'string' || b.body === '') throw missing('IssueComment', 'body');
      const c: SandboxComment = {
        repo: issue.repo,
        issueNumber: issue.number,
        id: nextId++,
        body: b.body,
        createdAt: clock.now(),
        login: loginOf(req),
      };
      comments.push(c);
      return { status: 201, body: commentJson(c) };
    },
    'issues.list': (req, m) => {
      const q = req.query;
      const state = q.get('state') ?? 'open';
      const since = sinceOf(q);
      const asc = q.get('direction') === 'asc';
      // Every sandbox issue is open; `since` is on updated_at; `sort` is by creation (ids grow with it).
      const { rid } = repositoryOf(m);
      const list = issues.filter(
        (i) =>
          i.repositoryId === rid &&
          (state === 'open' || state === 'all') &&
          secondOf(updatedAt.get(i.id) ?? i.createdAt) >= since,
      );
      const sorted = [...list].sort((a, b) => (asc ? a.id - b.id : b.id - a.id));
      return { status: 200, body: page(sorted, q).map(issueJson) };
    },
    'comments.list': (req, m) => {
      const issue = findIssue(m);
      const since = sinceOf(req.query);
      const list = comments.filter(
        (c) => c.repo === issue.repo && c.issueNumber === issue.number && secondOf(c.createdAt) >= since,
      );
      return { status: 200, body: page(list, req.query).map(commentJson) };
    },
    user: (req) => ({ status: 200, body: { login: loginOf(req), type: 'User' } }),
    repo: (_req, m) => ({ status: 200, body: { id: repositoryId(repoOf(m)), full_name: repoOf(m) } }),
    'search.issues': (req) => {
      // The search index lags behind writes: only items older than the lag are found.
      const terms = (req.query.get('q') ?? '')
        .split(/\s+/)
        .filter((t) => t && !t.includes(':'))
        .map((t) => t.replace(/^"|"$/g, ''));
      const repo = /repo:(\S+)/.exec(req.query.get('q') ?? '')?.[1];
      const visible = issues.filter(
        (i) =>
          clock.now() - i.createdAt >= searchLagMs &&
          (!repo || sameRepo(i.repo, repo)) &&
          terms.every((t) => i.body.includes(t) || i.title.includes(t)),
      );
      return {
        status: 200,
        body: {
          total_count: visible.length,
          incomplete_results: false,
          items: page(visible, req.query).map(issueJson),
        },
      };
    },
  };

  const server = await startLoopbackServer({
    port: options.port ?? 0,
    handle: (req) => serve(req, { token: options.token, people, now: () => clock.now(), requests, faults, handlers }),
    // Every answer carries the sandbox's clock, as GitHub's carry its own: a reset and a wait are read on it.
    headers: () => ({
      date: new Date(clock.now()).toUTCString(),
      'x-github-request-id': randomUUID().toUpperCase(),
      'x-ratelimit-limit': '5000',
      'x-ratelimit-remaining': '4999',
    }),
  });

  return {
    url: server.url,
    count: (kind) =>
      kind === 'issues.create'
        ? issues.filter((i) => i.kind === 'issue').length
        : kind === 'issues.createComment'
          ? comments.length
          : 0,
    requestCount: (kind) => requests.get(kind),
    issues: () => [...issues],
    touch: (owner, repo, number) => {
      const issue = issues.find((i) => sameRepo(i.repo, `${owner}/${repo}`) && i.number === number);
      if (issue) updatedAt.set(issue.id, clock.now());
    },
    addPullRequest: (owner, repo, title, body) =>
      addIssue(named(`${owner}/${repo}`), 'pull-request', title, body, 'retrysafe-bot'),
    deleteIssue: (owner, repo, number) => {
      const at = issues.findIndex((i) => sameRepo(i.repo, `${owner}/${repo}`) && i.number === number);
      return at >= 0 && issues.splice(at, 1).length === 1;
    },
    setFaults: (kind, script) => faults.set(kind, script),
    setRepository: (fullName, id) => void repositories.set(fullName.toLowerCase(), id),
    advance: clock.advance,
    close: server.close,
  };
}
