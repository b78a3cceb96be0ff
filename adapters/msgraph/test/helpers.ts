import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { type Fault, type FaultProxy, startFaultProxy } from '@retrysafe/testkit';
import { graphRequestKind, type SandboxKind } from '../src/sandbox/index.js';

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

/** A loopback URL on which nothing listens (connection refused). */
export async function closedPortUrl(): Promise<string> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return `http://127.0.0.1:${port}/`;
}

/** Network faults per sandbox kind, each an array (one per call of that kind) or a function of the call number. */
export type NetworkFaults = Partial<Record<SandboxKind, readonly Fault[] | ((call: number) => Fault)>>;

/**
 * The testkit's fault proxy in front of `target` (a Graph sandbox), faulting requests by sandbox kind:
 * the n-th call of a kind gets that kind's n-th fault (past the end: `'pass'`); other requests pass.
 */
export function startGraphFaultProxy(target: string, faults: NetworkFaults): Promise<FaultProxy> {
  const calls = new Map<SandboxKind, number>();
  return startFaultProxy({
    target,
    faults: (_n, request) => {
      const kind = graphRequestKind(request.method, request.path);
      const script = kind === null ? undefined : faults[kind];
      if (kind === null || script === undefined) return 'pass';
      const call = (calls.get(kind) ?? 0) + 1;
      calls.set(kind, call);
      return typeof script === 'function' ? script(call) : (script[call - 1] ?? 'pass');
    },
  });
}
