import { type AccountOption, defineAdapter, type Outcome, type TypedAdapter } from '@retrysafe/contract';
import { checkBaseUrl, checkToken, positiveInteger } from '@retrysafe/contract/provider';
import { Resend } from 'resend';
import { classifyAnswer } from './resend-errors.js';
import { type ResendOperation, resendOperations } from './resend-operations.js';
import type { ResendOperationTypes } from './resend-types.js';

export interface ResendAdapterOptions extends AccountOption {
  /** A Resend API key (`re_…`). Required: the SDK's fallback to RESEND_API_KEY is not used. */
  readonly apiKey: string;
  /** Where the API lives, e.g. `http://127.0.0.1:4242` for a loopback sandbox. Default https://api.resend.com (RESEND_BASE_URL is not read). */
  readonly baseUrl?: string;
  /** Client timeout per attempt. Default 30 000 ms (the SDK has none). A timeout after sending is an unknown outcome. */
  readonly timeoutMs?: number;
}

/** Typed: `runner.run(resend, 'emails.send', { params })` is checked against ResendOperationTypes. */
export interface ResendAdapter extends TypedAdapter<ResendOperationTypes> {
  readonly provider: 'resend';
}

const PROVIDER = 'resend';
const DEFAULT_BASE_URL = 'https://api.resend.com';
const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * The retrysafe adapter for Resend: `emails.send` and `batch.send`. Every send carries an
 * Idempotency-Key derived from the business-operation id; after an unknown outcome the runner re-sends
 * the same request with the same key inside Resend's 24 h retention (the card's rule), and hands off after it. The SDK
 * has no retries of its own, so each attempt is exactly one request.
 */
export function createResendAdapter(options: ResendAdapterOptions): ResendAdapter {
  checkToken(PROVIDER, 'apiKey', options?.apiKey);
  const timeoutMs = positiveInteger(PROVIDER, 'timeoutMs', options.timeoutMs, DEFAULT_TIMEOUT_MS);
  // https, or plain http only to a loopback sandbox: the API key never travels in clear.
  const baseUrl = checkBaseUrl(PROVIDER, options.baseUrl ?? DEFAULT_BASE_URL).href.replace(/\/$/, '');
  const client = new Resend(options.apiKey, { baseUrl });

  /** One SDK call (one request), classified. The timeout and the caller's signal both cancel the fetch. */
  async function send(op: ResendOperation, params: unknown, key: string, signal: AbortSignal): Promise<Outcome> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const answer = await op.send(client, params as Record<string, unknown>, {
      idempotencyKey: key,
      signal: AbortSignal.any([signal, timeout]),
    });
    return classifyAnswer(answer, op.read, timeout.aborted);
  }

  return defineAdapter({
    provider: PROVIDER,
    account: options.account,
    operations: resendOperations,

    execute: (op, params, ctx) => send(op, params, ctx.providerKey!, ctx.signal),

    // The card says lookup.method none, so the frame refuses doLookup before this is reached: an unknown
    // outcome is reconciled by the runner re-sending with the same key inside retention, or handed off.
    lookup: async () => ({ kind: 'cannot-tell', reason: 'Resend has no lookup without the email id' }),

    // close: the SDK uses the global fetch and holds nothing of its own.
  }) as ResendAdapter;
}
