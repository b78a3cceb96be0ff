import type { LookupResult, Outcome, RejectReason } from '@retrysafe/contract';
import { cannotTellFrom as cannotTellFromOutcome, noAnswerOutcome, retryAfterOf } from '@retrysafe/contract/provider';
import { ErrorCode } from '@slack/web-api';

/**
 * Maps every @slack/web-api result and error into exactly one Outcome (the table is in
 * docs/adapters/slack.md). Slack answers most errors as HTTP 200 `{ ok: false, error }`, which the SDK
 * throws as platform errors; a 429 is thrown as a rate-limited error (the client sets `rejectRateLimitedCalls`).
 */

interface Refusal {
  readonly reason: RejectReason;
  /** The param to correct; absent when the fault is not in the params (a token, a scope). */
  readonly field?: string;
}

// Every code below is in the "Errors" table of Slack's method pages (docs.slack.dev/reference/methods/chat.postMessage,
// chat.update): the method-specific refusals, then those listed for every method.
const REFUSALS: Readonly<Record<string, Refusal>> = {
  channel_not_found: { reason: 'not-found', field: 'channel' },
  not_in_channel: { reason: 'permission', field: 'channel' },
  is_archived: { reason: 'permission', field: 'channel' },
  restricted_action: { reason: 'permission', field: 'channel' },
  restricted_action_read_only_channel: { reason: 'permission', field: 'channel' },
  restricted_action_thread_only_channel: { reason: 'permission', field: 'channel' },
  messages_tab_disabled: { reason: 'permission', field: 'channel' },
  msg_too_long: { reason: 'validation', field: 'text' },
  no_text: { reason: 'validation', field: 'text' },
  invalid_blocks: { reason: 'validation', field: 'blocks' },
  invalid_blocks_format: { reason: 'validation', field: 'blocks' },
  invalid_metadata_format: { reason: 'validation', field: 'metadata' },
  invalid_metadata_schema: { reason: 'validation', field: 'metadata' },
  metadata_too_large: { reason: 'validation', field: 'metadata' },
  metadata_must_be_sent_from_app: { reason: 'permission', field: 'metadata' },
  message_not_found: { reason: 'not-found', field: 'ts' },
  cant_update_message: { reason: 'permission', field: 'ts' },
  edit_window_closed: { reason: 'permission', field: 'ts' },
  invalid_arguments: { reason: 'validation' },
  invalid_auth: { reason: 'authentication' },
  not_authed: { reason: 'authentication' },
  account_inactive: { reason: 'authentication' },
  token_revoked: { reason: 'authentication' },
  token_expired: { reason: 'authentication' },
  not_allowed_token_type: { reason: 'authentication' },
  two_factor_setup_required: { reason: 'authentication' },
  missing_scope: { reason: 'permission' },
  no_permission: { reason: 'permission' },
  access_denied: { reason: 'permission' },
  accesslimited: { reason: 'permission' },
  ekm_access_denied: { reason: 'permission' },
  enterprise_is_restricted: { reason: 'permission' },
  team_access_not_granted: { reason: 'permission' },
  // The request the SDK built is malformed or aimed at a retired method: the same request fails again.
  method_deprecated: { reason: 'configuration' },
  deprecated_endpoint: { reason: 'configuration' },
  invalid_arg_name: { reason: 'configuration' },
  invalid_array_arg: { reason: 'configuration' },
  invalid_charset: { reason: 'configuration' },
  invalid_form_data: { reason: 'configuration' },
  invalid_post_type: { reason: 'configuration' },
  missing_post_type: { reason: 'configuration' },
};

const RATE_LIMITED = new Set(['ratelimited', 'rate_limited']);
// Documented as not processed: request_timeout is "the POST data was either missing or truncated" (Slack never
// read the whole call); team_added_to_org and org_login_required: the workspace is migrating, try again after.
const NOT_PROCESSED = new Set(['request_timeout', 'team_added_to_org', 'org_login_required']);
// Slack documents of these two that "some aspect of the operation" may have succeeded.
const MAY_HAVE_HAPPENED = new Set(['internal_error', 'fatal_error']);
// The SDK's words for a 429 whose Retry-After it could not read (it throws a plain Error, no code).
const NO_RETRY_HEADER = /^Retry header did not contain a valid timeout/;

type SdkError = Error & {
  code?: unknown;
  data?: { error?: unknown; response_metadata?: unknown };
  retryAfter?: unknown;
  statusCode?: unknown;
  headers?: Record<string, string>;
  original?: unknown;
};

/** Slack's error code, cut short: an unreadable body comes back from the SDK as its raw text. */
function codeOf(error: SdkError): string {
  const raw = typeof error.data?.error === 'string' ? error.data.error : 'unknown_error';
  return /^[a-z_]{1,64}$/.test(raw) ? raw : 'unreadable_response';
}

/** One outcome for a Slack error code (an ok:false answer). */
export function outcomeFromCode(code: string): Outcome {
  if (RATE_LIMITED.has(code)) return { kind: 'not-applied', code, message: `rate limited: ${code}` };
  const refusal = REFUSALS[code];
  if (refusal) {
    const fields = refusal.field ? [{ path: refusal.field, message: `refused by Slack: ${code}` }] : undefined;
    return {
      kind: 'rejected',
      reason: refusal.reason,
      code,
      message: refusal.field ? `${code} (field ${refusal.field})` : code,
      ...(fields ? { fields } : {}),
    };
  }
  if (NOT_PROCESSED.has(code))
    return { kind: 'not-applied', code, message: `${code}: Slack documents that the call was not processed` };
  if (MAY_HAVE_HAPPENED.has(code))
    return {
      kind: 'unknown',
      cause: 'server-error',
      code,
      message: `${code}: Slack documents that part of the operation may have happened`,
    };
  // service_unavailable ("temporarily unavailable") says nothing of whether the call was applied.
  if (code === 'service_unavailable')
    return {
      kind: 'unknown',
      cause: 'server-error',
      code,
      message: `${code}: Slack does not say whether it was applied`,
    };
  return {
    kind: 'unknown',
    cause: 'other',
    code,
    message: `${code}: not a refusal Slack documents for this method; it may have been applied`,
  };
}

/** The SDK's parseInt of Retry-After (seconds), read again by the contract's one parser: a negative one asks no wait. */
const sdkWait = (seconds: unknown) =>
  retryAfterOf(typeof seconds === 'number' ? String(seconds) : undefined, undefined);

/** Classifies whatever the SDK threw for one call. */
export function outcomeFromError(error: unknown): Outcome {
  const e = error as SdkError;
  switch (e?.code) {
    case ErrorCode.RateLimitedError:
      return {
        kind: 'not-applied',
        status: 429,
        code: 'ratelimited',
        message: 'rate limited (HTTP 429)',
        ...sdkWait(e.retryAfter),
      };
    case ErrorCode.PlatformError: {
      // Slack also answers a rate limit as HTTP 200 `{ ok: false, error: 'ratelimited' }` with Retry-After, which the
      // SDK keeps as `response_metadata.retryAfter`.
      const out = outcomeFromCode(codeOf(e));
      const wait = sdkWait((e.data?.response_metadata as { retryAfter?: unknown } | undefined)?.retryAfter);
      return out.kind === 'not-applied' || out.kind === 'unknown' ? { ...out, ...wait } : out;
    }
    case ErrorCode.HTTPError: {
      const status = typeof e.statusCode === 'number' ? e.statusCode : 0;
      const requestId = e.headers?.['x-slack-req-id'];
      const refs = { status, ...(requestId ? { requestId } : {}) };
      if (status >= 500)
        return {
          kind: 'unknown',
          cause: 'server-error',
          message: `HTTP ${status}`,
          ...refs,
          ...retryAfterOf(e.headers?.['retry-after'], e.headers?.date),
        };
      return { kind: 'rejected', reason: 'other', message: `HTTP ${status}`, ...refs };
    }
    case ErrorCode.RequestError:
      return noAnswerOutcome(e.original ?? e);
  }
  if (e instanceof Error && NO_RETRY_HEADER.test(e.message))
    return {
      kind: 'not-applied',
      status: 429,
      code: 'ratelimited',
      message: 'rate limited (HTTP 429 without a readable Retry-After)',
    };
  // Not an SDK error: the body failed mid-read, or something below fetch.
  return noAnswerOutcome(error);
}

/** A lookup call that failed: never "not found" (absence proves nothing here). */
export function cannotTellFrom(error: unknown, what: string): LookupResult {
  const o = outcomeFromError(error);
  return cannotTellFromOutcome(o, `${what} failed: ${'message' in o ? o.message : o.kind}`);
}
