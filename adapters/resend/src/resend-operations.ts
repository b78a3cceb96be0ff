import type { FieldError, FrameOperation, JsonSchema } from '@retrysafe/contract';
import type { CreateBatchOptions, CreateEmailOptions, Resend } from 'resend';
import { BATCH_SEND_KEY_RULE, batchSendCard, EMAILS_SEND_KEY_RULE, emailsSendCard } from './resend-cards.js';

/** What one SDK call answers: Resend's `{ data, error, headers }`, never a throw. */
export interface ResendAnswer {
  readonly data: unknown;
  readonly error: { readonly message: string; readonly statusCode: number | null; readonly name: string } | null;
  readonly headers: Readonly<Record<string, string>> | null;
}

/** An operation as the adapter runs it: the frame's spec plus the SDK call and how to read its data. */
export interface ResendOperation extends FrameOperation {
  send(
    client: Resend,
    params: Record<string, unknown>,
    options: { idempotencyKey: string; signal: AbortSignal },
  ): Promise<ResendAnswer>;
  /** The result and the provider reference of a 2xx answer, or null when the body is not what Resend documents. */
  read(data: unknown): { readonly result: unknown; readonly providerRef: string } | null;
}

const address: JsonSchema = { type: 'string', minLength: 3, maxLength: 320 };
// Resend: "For multiple addresses, send as an array of strings. Max 50." (send-email reference)
const addresses: JsonSchema = { anyOf: [address, { type: 'array', items: address, minItems: 1, maxItems: 50 }] };
// Not blank: the id trims the ref, so a blank one would name nothing.
const ref: JsonSchema = { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' };

const emailProperties = {
  from: address,
  to: addresses,
  subject: { type: 'string', minLength: 1 },
  html: { type: 'string' },
  text: { type: 'string' },
  cc: addresses,
  bcc: addresses,
  replyTo: addresses,
  headers: { type: 'object', additionalProperties: { type: 'string' } },
} as const;

const emailSchema: JsonSchema = {
  type: 'object',
  required: ['from', 'to', 'subject'],
  additionalProperties: false,
  properties: emailProperties,
};

/** A body is required: Resend's SDK types require html, text, react or a template, and this adapter passes html or text. */
function bodyErrors(email: Record<string, unknown>, at: string): FieldError[] {
  return email.html === undefined && email.text === undefined
    ? [{ path: at ? `${at}.html` : 'html', message: 'html or text is required' }]
    : [];
}

/** The SDK's camelCase email (it maps replyTo to reply_to itself). */
function toEmail(p: Record<string, unknown>): CreateEmailOptions {
  const out: Record<string, unknown> = {};
  for (const field of Object.keys(emailProperties)) if (p[field] !== undefined) out[field] = p[field];
  return out as unknown as CreateEmailOptions;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const emailsSend: ResendOperation = {
  name: 'emails.send',
  description:
    'Send one email through Resend (POST /emails) with an Idempotency-Key derived from emailRef: a re-send inside 24 h returns the first answer (the same email id) instead of a second email.',
  card: emailsSendCard,
  sensitiveFields: ['to', 'cc', 'bcc', 'replyTo', 'subject', 'html', 'text', 'headers'],
  paramsSchema: {
    ...emailSchema,
    required: ['emailRef', 'from', 'to', 'subject'],
    properties: { emailRef: ref, ...emailProperties },
  },
  checkParams: (params) => (isObj(params) ? bodyErrors(params, '') : []),
  keyRule: EMAILS_SEND_KEY_RULE,
  send: (client, params, options) => client.emails.send(toEmail(params), options) as Promise<ResendAnswer>,
  read: (data) =>
    isObj(data) && typeof data.id === 'string' ? { result: { id: data.id }, providerRef: data.id } : null,
};

export const batchSend: ResendOperation = {
  name: 'batch.send',
  description:
    'Send up to 100 emails in one Resend request (POST /emails/batch, strict validation: all or none) with an Idempotency-Key derived from batchRef: a re-send inside 24 h returns the first answer (the same email ids).',
  card: batchSendCard,
  sensitiveFields: ['emails'],
  paramsSchema: {
    type: 'object',
    required: ['batchRef', 'emails'],
    additionalProperties: false,
    properties: { batchRef: ref, emails: { type: 'array', items: emailSchema, minItems: 1, maxItems: 100 } },
  },
  checkParams: (params) =>
    isObj(params) && Array.isArray(params.emails)
      ? params.emails.flatMap((e, i) => (isObj(e) ? bodyErrors(e, `emails[${i}]`) : []))
      : [],
  keyRule: BATCH_SEND_KEY_RULE,
  send: (client, params, options) =>
    client.batch.send((params.emails as Record<string, unknown>[]).map(toEmail) as CreateBatchOptions, {
      ...options,
      batchValidation: 'strict',
    }) as Promise<ResendAnswer>,
  read(data) {
    const list = isObj(data) ? data.data : undefined;
    if (!Array.isArray(list) || list.length === 0 || !list.every((e) => isObj(e) && typeof e.id === 'string'))
      return null;
    const ids = list.map((e) => (e as { id: string }).id);
    return { result: { ids }, providerRef: ids[0]! };
  },
};

export const resendOperations: Readonly<Record<string, ResendOperation>> = {
  [emailsSend.name]: emailsSend,
  [batchSend.name]: batchSend,
};
