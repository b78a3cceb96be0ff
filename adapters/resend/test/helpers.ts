import { afterEach } from 'vitest';
import type { BatchSendParams, EmailsSendParams } from '../src/index.js';

const open: { close(): Promise<unknown> }[] = [];
// Registered in each test file that imports this module.
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

/** Closed after the test that opened it, the last opened first. */
export function closeAfterTest<T extends { close(): Promise<unknown> }>(thing: T): T {
  open.push(thing);
  return thing;
}

export { execCtx, lookupCtx } from '../../github/test/contexts.js';

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
