import { asBusinessOperationId, type OperationName } from '@retrysafe/contract';
import { executeContext } from '@retrysafe/testkit/conformance';
import type { BatchSendParams, EmailsSendParams, ResendAdapter } from '../src/index.js';

export const API_KEY = 're_test_sandbox';

/** One doExecute with the context the runner would build for the business-operation id `id`. */
export const execute = (adapter: ResendAdapter, operation: OperationName<ResendAdapter>, params: unknown, id: string) =>
  adapter.doExecute(operation, params, executeContext(adapter, operation, asBusinessOperationId(id)));

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
