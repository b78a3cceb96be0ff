import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import {
  asAttemptId,
  asBusinessOperationId,
  asRunId,
  type ExecuteContext,
  type LookupContext,
  type ProviderKey,
} from '@retrysafe/contract';

export const TOKEN = 'test-token-not-a-secret';

export function mailParams(i = 0, mailbox = 'me') {
  return {
    mailbox,
    message: {
      subject: `Invoice ${i} reminder`,
      body: { contentType: 'text' as const, content: `Please pay invoice ${i}.` },
      toRecipients: [{ emailAddress: { address: `customer${i}@example.test` } }],
    },
  };
}

export function eventParams(i = 0, mailbox = 'me') {
  return {
    mailbox,
    event: {
      subject: `Review ${i}`,
      start: { dateTime: `2026-12-0${(i % 9) + 1}T10:00:00`, timeZone: 'UTC' },
      end: { dateTime: `2026-12-0${(i % 9) + 1}T11:00:00`, timeZone: 'UTC' },
    },
  };
}

export function taskParams(i = 0, listId = 'tasks', mailbox = 'me') {
  return { mailbox, listId, task: { title: `Call customer ${i}` } };
}

export function execCtx(id: string, providerKey: ProviderKey | null = null): ExecuteContext {
  return {
    businessOperationId: asBusinessOperationId(id),
    providerKey,
    runId: asRunId('run_test'),
    attemptId: asAttemptId('att_test'),
    attempt: 1,
    statusRef: null,
  };
}

export function lookupCtx(id: string, params: unknown, providerKey: ProviderKey | null = null): LookupContext {
  return {
    businessOperationId: asBusinessOperationId(id),
    providerKey,
    params,
    runId: asRunId('run_test'),
    attemptId: asAttemptId('att_lookup'),
    statusRef: null,
    firstDispatchedAt: Date.now(),
    now: Date.now(),
  };
}

/** A loopback URL on which nothing listens (connection refused). */
export async function closedPortUrl(): Promise<string> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return `http://127.0.0.1:${port}/`;
}
