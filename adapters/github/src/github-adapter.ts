import { Octokit } from '@octokit/rest';
import {
  type AccountOption,
  AdapterConfigurationError,
  defineAdapter,
  type LookupResult,
  type Outcome,
  type TypedAdapter,
} from '@retrysafe/contract';
import {
  checkBaseUrl,
  checkToken,
  goneDuringWalk,
  intentLookupFailure,
  lookupMiss,
  positiveInteger,
} from '@retrysafe/contract/provider';
import { cannotTell, type GitHubAnswer, refsOf, secondaryLimits } from './github-errors.js';
import {
  type CallOptions,
  carriesMarker,
  type GitHubOperation,
  type GitHubOperationTypes,
  gitHubOperations,
  type ListedItem,
  PER_PAGE,
} from './github-operations.js';

export interface GitHubAdapterOptions extends AccountOption {
  /** A token (personal access token, GitHub App installation token). Required unless `octokit` is given. */
  readonly auth?: string;
  /** API root, default `https://api.github.com`; the sandbox URL in tests. */
  readonly baseUrl?: string;
  /** Per-request timeout in ms (default 30 000). A timeout after sending is an unknown outcome. */
  readonly timeoutMs?: number;
  /** An Octokit you built. One with the retry or throttling plugin is refused: the runner is the one retrying layer. */
  readonly octokit?: Octokit;
  /** Pages of 100 items a lookup reads at most before it says "cannot tell" (default 5). */
  readonly lookupPages?: number;
  /** The login the token acts as (an app installation token: `<app-slug>[bot]`); default: read once with GET /user. */
  readonly login?: string;
}

export interface GitHubAdapter extends TypedAdapter<GitHubOperationTypes> {
  readonly provider: 'github';
  /** The Octokit in use (no retry or throttling plugin). */
  readonly octokit: Octokit;
}

const PROVIDER = 'github';
/** Plugins that resend requests on their own (@octokit/plugin-retry, @octokit/plugin-throttling). */
const RETRYING_PLUGINS = new Set(['retry', 'throttling']);
// Keys of the requests whose secondary limits are counted (github-errors.ts): GET /user, a repository's GET.
const USER = 'GET /user';
const repoKey = (owner: string, repo: string) => `GET /repos/${owner}/${repo}`.toLowerCase();
const SILENT = { debug: () => {}, info: () => {}, warn: console.warn, error: () => {} };

/** Refuses an Octokit built with a plugin that resends: with plugin-retry a lost answer becomes a second issue. */
function assertNoSdkRetries(octokit: Octokit): void {
  const plugins = (octokit.constructor as { plugins?: readonly { name?: string }[] }).plugins ?? [];
  const found = plugins.map((p) => p.name ?? '').filter((n) => RETRYING_PLUGINS.has(n));
  if (found.length > 0 || 'retry' in octokit) {
    throw new AdapterConfigurationError(
      PROVIDER,
      `the injected Octokit has a plugin that resends requests (${found.join(', ') || 'retry'}); build it from @octokit/rest alone`,
    );
  }
}

function buildOctokit(options: GitHubAdapterOptions): Octokit {
  if (options.octokit) {
    if (options.auth !== undefined || options.baseUrl !== undefined)
      throw new AdapterConfigurationError(PROVIDER, 'pass either octokit, or auth/baseUrl to build one, not both');
    assertNoSdkRetries(options.octokit);
    return options.octokit;
  }
  checkToken(PROVIDER, 'auth', options.auth);
  const baseUrl = options.baseUrl ?? 'https://api.github.com';
  checkBaseUrl(PROVIDER, baseUrl);
  return new Octokit({ auth: options.auth, baseUrl: baseUrl.replace(/\/+$/, ''), log: SILENT });
}

/**
 * GitHub adapter: `issues.create` and `issues.createComment` on the official @octokit/rest, which never
 * retries on its own. No idempotency key exists: the body carries a hidden marker with the
 * business-operation id, and an unknown outcome is reconciled by listing, never by GitHub's search.
 */
export function createGitHubAdapter(options: GitHubAdapterOptions): GitHubAdapter {
  const timeoutMs = positiveInteger(PROVIDER, 'timeoutMs', options.timeoutMs, 30_000);
  const lookupPages = positiveInteger(PROVIDER, 'lookupPages', options.lookupPages, 5);
  const octokit = buildOctokit(options);
  const limits = secondaryLimits();

  const callOptions = (signal: AbortSignal): CallOptions => ({
    request: { signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) },
  });
  // Only items this login wrote are ours: anyone may copy a body with its marker. A failed read is asked again.
  let login: Promise<string> | undefined;
  const me = (signal: AbortSignal) => {
    login ??= options.login
      ? Promise.resolve(options.login)
      : octokit.rest.users.getAuthenticated({ ...callOptions(signal) }).then((a) => limits.ok(a, USER).data.login);
    login.catch(() => (login = undefined));
    return login;
  };

  // Calls that ask for one repository at once share one GET (its answer is not kept: a name can change hands).
  const asking = new Map<string, Promise<string>>();
  const repositoryId = (owner: string, repo: string, signal: AbortSignal) => {
    const name = repoKey(owner, repo);
    let id = asking.get(name);
    if (id === undefined) {
      id = octokit.rest.repos
        .get({ owner, repo, ...callOptions(signal) })
        .then((r) => String(limits.ok(r, name).data.id));
      asking.set(name, id);
      void id.finally(() => asking.delete(name)).catch(() => {});
    }
    return id;
  };

  return defineAdapter(
    {
      provider: PROVIDER,
      account: options.account,
      operations: gitHubOperations,
      // A renamed repository answers under its old name, and a new one may take a name another left: the id reads
      // the repository GET /repos resolves the name to (its id), never the name.
      async resolveIntent(_op, intent, signal) {
        const { owner, repo } = intent as { owner: string; repo: string };
        try {
          return { ...intent, owner: 'repository', repo: await repositoryId(owner, repo, signal) };
        } catch (error) {
          const what = `GitHub could not say which repository ${owner}/${repo} is, so the operation's id cannot be told`;
          throw intentLookupFailure('repo', what, limits.failed(error, repoKey(owner, repo)));
        }
      },
      async execute(op, params, ctx) {
        let answer: GitHubAnswer;
        try {
          const sent = { ...callOptions(ctx.signal), target: ctx.target };
          const created = await op.create(octokit, params, ctx.businessOperationId, sent);
          answer = limits.ok(created, ctx.businessOperationId);
        } catch (error) {
          return limits.failed(error, ctx.businessOperationId);
        }
        const read = op.read(answer.data);
        const refs = refsOf(answer);
        // The status line arrived but not the object (a body cut off): applied, its id lost.
        if (!read) {
          const message = `HTTP ${answer.status} without the created object`;
          return { kind: 'unknown', cause: 'truncated-response', message, ...refs };
        }
        return { kind: 'succeeded', result: read.result, ...refs, providerRef: read.providerRef };
      },

      /**
       * Walks the list from the newest item back to the first dispatch minus the clock-skew margin, a bounded
       * number of pages. Only a walk that got back there adopts its one match; none is `not-found` only by the card's
       * rule, the runner's too (notFoundIsAuthoritative: never while the consistency delay or late-apply bound is unknown).
       */
      async lookup(op, ctx) {
        const what = `${op.name} lookup`;
        if (ctx.firstDispatchedAt === null)
          return { kind: 'not-found', reason: 'never dispatched: nothing was sent to GitHub' };
        const cutoff = ctx.firstDispatchedAt - ctx.clockSkewMarginMs;
        const since = new Date(cutoff).toISOString();
        let author: string;
        try {
          author = (await me(ctx.signal)).toLowerCase();
        } catch (error) {
          return cannotTell(limits.failed(error, USER), `${what}: GET /user (give \`login\` for a token it refuses)`);
        }
        const list = `list ${ctx.businessOperationId}`;
        const walk = () =>
          walkBack(
            op,
            lookupPages,
            cutoff,
            (error) => limits.failed(error, list),
            (page) =>
              op
                .list(octokit, ctx.params, since, page, { ...callOptions(ctx.signal), target: ctx.target })
                .then((a) => limits.ok(a, list)),
          );
        const pages = await walk();
        if (!Array.isArray(pages)) return pages;
        // Pages are numbered: an item deleted from a page already read moves the first of the next one onto it, unread
        // (a second of ours hidden, or ours missed). A second walk must still list all the first read before its last page.
        if (pages.length > 1) {
          const again = await walk();
          if (!Array.isArray(again)) return again;
          const gone = goneDuringWalk(pages, again, (i) => i.id);
          if (gone > 0)
            return { kind: 'cannot-tell', reason: `${what}: ${gone} items gone from the list during the walk` };
        }
        const ours = (i: ListedItem) =>
          i.pull_request === undefined &&
          i.user?.login?.toLowerCase() === author &&
          carriesMarker(i, ctx.businessOperationId);
        return (
          found(op, pages.flat().filter(ours)) ??
          lookupMiss(op.card, ctx, `${what}: no item since ${since} carries the marker of this business operation`)
        );
      },
    },
    { octokit },
  ) as GitHubAdapter;
}

/**
 * The list's pages from the newest item back to `cutoff` (or the end of the list), `lookupPages` at most; cannot-tell
 * when a page fails (one not read may hold a second item of ours) or the bound comes first.
 */
async function walkBack(
  op: GitHubOperation,
  lookupPages: number,
  cutoff: number,
  failed: (error: unknown) => Outcome,
  listPage: (page: number) => Promise<GitHubAnswer>,
): Promise<ListedItem[][] | LookupResult> {
  const what = `${op.name} lookup`;
  const pages: ListedItem[][] = [];
  for (let page = 1; page <= lookupPages; page++) {
    let answer: GitHubAnswer;
    try {
      answer = await listPage(page);
    } catch (error) {
      return cannotTell(failed(error), what);
    }
    if (!Array.isArray(answer.data))
      return { kind: 'cannot-tell', reason: `${what}: HTTP ${answer.status} without a list`, ...refsOf(answer) };
    const items = answer.data as ListedItem[];
    pages.push(items);
    const older = items.some((i) => typeof i.created_at === 'string' && new Date(i.created_at).getTime() < cutoff);
    if (items.length < PER_PAGE || (op.newestFirst && older)) return pages;
  }
  const since = new Date(cutoff).toISOString();
  return { kind: 'cannot-tell', reason: `${what}: ${lookupPages} pages read without reaching ${since}` };
}

function found(op: GitHubOperation, matches: readonly ListedItem[]): LookupResult | null {
  // Keyed by id: an item on two pages (newer items moved the list between the reads) is one item, not a duplicate.
  const unique = [...new Map(matches.map((m) => [m.id, m])).values()];
  const reads = unique.map((m) => op.read(m)).filter((r) => r !== null);
  if (reads.length === 0) return null;
  if (reads.length > 1) {
    // A second create of ours or a copy under our login: which one is ours is for a person to say.
    const refs = reads.map((r) => r.providerRef).sort((a, b) => Number(a) - Number(b));
    const reason = `${reads.length} items of ours carry the marker: ${refs.join(', ')}`;
    return { kind: 'cannot-tell', reason, duplicates: refs };
  }
  return {
    kind: 'found',
    outcome: { kind: 'succeeded', result: reads[0]!.result, providerRef: reads[0]!.providerRef },
  };
}
