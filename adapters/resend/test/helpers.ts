import type { BatchSendParams, EmailsSendParams } from '../src/index.js';

export const API_KEY = 're_test_sandbox';

/** Valid params, or invalid ones through `overrides` (typed as the operation's params, as a caller would pass them). */
export function emailParams(ref: string, overrides: Record<string, unknown> = {}): EmailsSendParams {
  return {
    emailRef: ref,
    from: 'Acme <billing@acme.test>',
    to: ['customer@example.test'],
    subject: `Invoice ${ref}`,
    text: 'Please find your invoice attached.',
    ...overrides,
  } as EmailsSendParams;
}

export function batchParams(ref: string): BatchSendParams {
  const email = (n: number) => ({
    from: 'Acme <billing@acme.test>',
    to: [`c${n}@example.test`],
    subject: `Invoice ${ref}/${n}`,
    text: 'Please find your invoice attached.',
  });
  return { batchRef: ref, emails: [email(1), email(2)] };
}
