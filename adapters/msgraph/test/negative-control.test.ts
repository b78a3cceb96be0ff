// Negative control: the same sendMail through the SDK's DEFAULT middleware chain (RetryHandler on)
// is resent on 503/504, and every resend is one more delivered mail. Through the adapter's chain
// (no RetryHandler) the same answers give one request and one mail.

import { createRequire } from 'node:module';
import { Client, RetryHandler } from '@microsoft/microsoft-graph-client';
import { AdapterConfigurationError, asBusinessOperationId } from '@retrysafe/contract';
import { executeContext } from '@retrysafe/testkit/conformance';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGraphClient, createMsGraphAdapter } from '../src/index.js';
import { middlewareChain } from '../src/msgraph-client.js';
import { DEFAULT_APPLICATION_NAME, DEFAULT_EXTENDED_PROPERTY_ID, mailSend } from '../src/msgraph-operations.js';
import { type MsGraphSandbox, type SandboxFault, startMsGraphSandbox } from '../src/sandbox/index.js';
import { mailParams, TOKEN } from './helpers.js';

// Graph answered 503/504 after it had already accepted the mail (docs/evidence/msgraph.md, "Retrying
// is NOT safe"). Retry-After: 0 keeps the SDK's own wait at zero.
const AFTER_SENDING: readonly SandboxFault[] = [
  { kind: 'status', status: 503, retryAfterS: 0, commit: true },
  { kind: 'status', status: 504, retryAfterS: 0, commit: true },
  { kind: 'status', status: 504, retryAfterS: 0, commit: true },
];

let sandbox: MsGraphSandbox;
beforeEach(async () => {
  sandbox = await startMsGraphSandbox({ faults: { 'mail.send': AFTER_SENDING } });
});
afterEach(async () => {
  await sandbox.close();
});

function defaultClient(baseUrl: string): Client {
  // The SDK's documented default: Client.init → AuthenticationHandler → RetryHandler → RedirectHandler → TelemetryHandler → HTTPMessageHandler.
  return Client.init({ authProvider: (done) => done(null, TOKEN), baseUrl });
}

describe('negative control: the SDK default RetryHandler resends sendMail', () => {
  it('the default chain holds a RetryHandler; the adapter chain does not', () => {
    expect(middlewareChain(defaultClient(sandbox.url)).some((m) => m instanceof RetryHandler)).toBe(true);
    expect(
      middlewareChain(createGraphClient({ token: TOKEN, baseUrl: sandbox.url })).some((m) => m instanceof RetryHandler),
    ).toBe(false);
  });

  it('default chain: 503, 504, 504 after sending ⇒ 4 POSTs and 4 delivered mails for one intent', async () => {
    const id = asBusinessOperationId('invoice-17-reminder');
    const req = mailSend.build(mailParams(1), {
      businessOperationId: id,
      providerKey: null,
      extendedPropertyId: DEFAULT_EXTENDED_PROPERTY_ID,
      applicationName: DEFAULT_APPLICATION_NAME,
    });
    await defaultClient(sandbox.url).api(req.path).post(req.body); // the 4th try is answered 202
    expect(sandbox.requestCount('mail.send')).toBe(4);
    expect(sandbox.count('mail.send')).toBe(4);
    expect(sandbox.requests().map((r) => r.retryAttempt)).toEqual([null, '1', '2', '3']);
    expect(sandbox.records().every((r) => r.kind === 'mail.send' && r.extendedProperties[0]?.value === id)).toBe(true);
  });

  it('adapter chain: the same answers ⇒ 1 POST, 1 mail, outcome unknown (reconcile, do not resend)', async () => {
    const adapter = createMsGraphAdapter({ accessToken: TOKEN, baseUrl: sandbox.url });
    const out = await adapter.doExecute(
      'mail.send',
      mailParams(1),
      executeContext(adapter, 'mail.send', asBusinessOperationId('invoice-17-reminder')),
    );
    expect(out).toMatchObject({ kind: 'unknown', cause: 'server-error', status: 503 });
    expect(sandbox.requestCount('mail.send')).toBe(1);
    expect(sandbox.count('mail.send')).toBe(1);
  });

  it('the adapter refuses an injected client whose chain has a RetryHandler, and accepts one without', () => {
    let error: unknown;
    try {
      createMsGraphAdapter({ client: defaultClient(sandbox.url) });
    } catch (e) {
      error = e;
    }
    expect(AdapterConfigurationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/RetryHandler/);
    const ok = createMsGraphAdapter({ client: createGraphClient({ token: TOKEN, baseUrl: sandbox.url }) });
    expect(ok.specificationVersion).toBe('v1');
  });

  it('a client built with another copy of the SDK (another version in the app, a bundle) is refused too', () => {
    // A second copy's RetryHandler is another class: instanceof the adapter's own RetryHandler is false.
    const require = createRequire(import.meta.url);
    const entry = require.resolve('@microsoft/microsoft-graph-client');
    const dir = entry.slice(0, entry.lastIndexOf('/lib/') + 1);
    const kept = Object.keys(require.cache).filter((k) => k.startsWith(dir));
    const saved = new Map(kept.map((k) => [k, require.cache[k]]));
    for (const k of kept) delete require.cache[k];
    let other: typeof import('@microsoft/microsoft-graph-client');
    try {
      other = require('@microsoft/microsoft-graph-client');
    } finally {
      for (const [k, m] of saved) require.cache[k] = m;
    }
    expect(other.RetryHandler).not.toBe(RetryHandler);
    const client = other.Client.init({ authProvider: (done) => done(null, TOKEN), baseUrl: sandbox.url });
    expect(() => createMsGraphAdapter({ client: client as unknown as Client })).toThrow(/RetryHandler/);
  });

  it('configuration errors are typed', () => {
    expect(() => createMsGraphAdapter({})).toThrow(/accessToken/);
    expect(() => createMsGraphAdapter({ accessToken: TOKEN, timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => createMsGraphAdapter({ accessToken: TOKEN, extendedPropertyId: 'retrysafe' })).toThrow(
      /extendedPropertyId/,
    );
    expect(() => createMsGraphAdapter({ client: createGraphClient({ token: TOKEN }), accessToken: TOKEN })).toThrow(
      /either client/,
    );
  });
});
