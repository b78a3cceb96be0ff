import type { FieldError, Outcome, RejectReason } from '@retrysafe/contract';
import { parseRetryAfter } from '@retrysafe/contract/provider';
import type { ResendAnswer } from './resend-operations.js';

/**
 * Maps Resend's answers (https://resend.com/docs/api-reference/errors) into outcomes. The SDK never
 * throws: every answer is `{ data, error, headers }`, and an error without a status code means no
 * answer arrived at all (timeout, reset, refused: the SDK cannot tell them apart), so it is `unknown`.
 */

/** Resend's names for the fields of the send body, as this adapter's params spell them. */
const FIELD_NAMES: Readonly<Record<string, string>> = { reply_to: 'replyTo', scheduled_at: 'scheduledAt' };

/** The fields Resend's message names in backticks (its messages read "The `to` field is required"). */
export function fieldsOf(message: string): FieldError[] {
  const names = [...message.matchAll(/`([A-Za-z_][A-Za-z0-9_.[\]]*)`/g)].map((m) => FIELD_NAMES[m[1]!] ?? m[1]!);
  return [...new Set(names)].map((path) => ({ path, message }));
}

/** Milliseconds to wait: `retry-after`, else `ratelimit-reset` (seconds until the window resets), read by the contract's one parser. */
export function retryAfterMsOf(headers: ResendAnswer['headers']): number | undefined {
  return (
    parseRetryAfter(headers?.['retry-after'], headers?.date) ??
    parseRetryAfter(headers?.['ratelimit-reset'], headers?.date)
  );
}

function rejectReason(status: number, name: string): RejectReason {
  if (name === 'invalid_idempotent_request') return 'conflict';
  if (status === 401 || name === 'invalid_api_key') return 'authentication';
  if (status === 403)
    return name === 'validation_error' || name === 'invalid_from_address' ? 'validation' : 'permission';
  if (status === 404) return 'not-found';
  if (status === 400 || status === 422) return name === 'invalid_idempotency_key' ? 'configuration' : 'validation';
  if (status === 405) return 'configuration';
  return 'other';
}

/**
 * One answer as an outcome. `timedOut`: the adapter's own timeout fired, so a missing answer is a
 * timeout rather than some other lost connection.
 */
export function classifyAnswer(
  answer: ResendAnswer,
  read: (data: unknown) => { result: unknown; providerRef: string } | null,
  timedOut: boolean,
): Outcome {
  const { error } = answer;
  if (error === null) {
    const ok = read(answer.data);
    if (ok) return { kind: 'succeeded', result: ok.result, providerRef: ok.providerRef };
    return {
      kind: 'unknown',
      cause: 'truncated-response',
      message: 'Resend answered 2xx without the email id: it was sent, but which email it is was lost',
    };
  }
  const status = error.statusCode;
  const code = typeof error.name === 'string' ? error.name : 'unknown_error';
  const message = `${code}: ${error.message}`;
  if (status === null) {
    return {
      kind: 'unknown',
      cause: timedOut ? 'timeout' : 'other',
      code,
      message: `no answer from Resend (${timedOut ? 'timed out' : error.message}): the email may have been sent`,
    };
  }
  const retryAfterMs = retryAfterMsOf(answer.headers);
  const wait = retryAfterMs !== undefined ? { retryAfterMs } : {};
  // An error body that is not Resend's (a gateway's `{ message }`): the SDK keeps no HTTP status, so it may be a 5xx.
  if (typeof status !== 'number') {
    const why = `${code}: an error answer without Resend's statusCode`;
    return { kind: 'unknown', cause: 'other', code, message: why, ...wait };
  }
  if (status === 409 && code === 'concurrent_idempotent_requests')
    return { kind: 'in-progress', status, code, message, ...wait };
  if (status === 429 && code !== 'daily_quota_exceeded' && code !== 'monthly_quota_exceeded') {
    // Refused by the rate limiter; and a re-send carries the same key, so even a 429 that had sent folds into it.
    return { kind: 'not-applied', status, code, message, ...wait };
  }
  if (status >= 500) return { kind: 'unknown', cause: 'server-error', status, code, message, ...wait };
  if (status === 409 && code === 'invalid_idempotent_request') {
    return {
      kind: 'rejected',
      reason: 'conflict',
      status,
      code,
      message: `${message} (the key was first used with another payload, and that request may have sent an email)`,
    };
  }
  const fields = fieldsOf(error.message);
  return {
    kind: 'rejected',
    reason: rejectReason(status, code),
    status,
    code,
    message,
    ...(fields.length > 0 ? { fields } : {}),
  };
}
