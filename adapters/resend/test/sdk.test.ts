import { type AddressInfo, createServer } from 'node:net';
import { asBusinessOperationId, UnsupportedCapabilityError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { executeContext, lookupContext } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { createResendAdapter } from '../src/index.js';
import { RESEND_RETENTION_MS, startResendSandbox } from '../src/sandbox/index.js';
import { API_KEY, batchParams, emailParams, execute } from './helpers.js';

// The runner (@retrysafe/core) + the real resend SDK + the fault proxy + the loopback sandbox.

/** A loopback URL on which nothing listens (connection refused). */
async function closedPortUrl(): Promise<string> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return `http://127.0.0.1:${port}`;
}

async function setup(faults: Parameters<typeof startFaultProxy>[0]['faults'] = []) {
  const sandbox = closeAfterTest(await startResendSandbox());
  const proxy = closeAfterTest(await startFaultProxy({ target: sandbox.url, faults }));
  const adapter = createResendAdapter({ apiKey: API_KEY, baseUrl: proxy.url, timeoutMs: 1000 });
  const runner = createRunner({
    ledger: createMemoryLedger(),
    clock: createVirtualClock(Date.UTC(2026, 11, 4)),
    random: () => 0.5,
  });
  return { sandbox, proxy, adapter, runner };
}

describe('a lost answer through the real resend SDK', () => {
  it('emails.send: the answer is dropped after Resend sent the email ⇒ one email, adopted by a same-key re-send', async () => {
    const { sandbox, proxy, adapter, runner } = await setup(['drop-response']);
    const result = await runner.run(adapter, 'emails.send', { params: emailParams('invoice-ready/A-17') });
    expect(result).toMatchObject({ status: 'done', providerRef: sandbox.emails()[0]!.id });
    expect(sandbox.count('emails.send')).toBe(1);
    // one dispatch (answer lost) + one re-send with the same key, which Resend answers from its key store
    expect(proxy.requests).toHaveLength(2);
    expect(new Set(proxy.requests.map((r) => r.headers['idempotency-key']))).toEqual(
      new Set(['rs-email-' + result.businessOperationId]),
    );
    expect(sandbox.requests().map((r) => r.result)).toEqual(['executed', 'replayed']);
  });

  it('batch.send: the answer is dropped ⇒ one batch of two emails, the same ids adopted', async () => {
    const { sandbox, proxy, adapter, runner } = await setup(['drop-response']);
    const result = await runner.run(adapter, 'batch.send', { params: batchParams('invoices/2026-12') });
    expect(sandbox.emails()).toHaveLength(2);
    expect(result.status === 'done' && result.result).toEqual({ ids: sandbox.emails().map((e) => e.id) });
    expect(sandbox.count('batch.send')).toBe(1);
    expect(proxy.requests).toHaveLength(2);
  });

  it('the client times out while Resend sends ⇒ unknown (timeout) after one request, then one email in the end', async () => {
    const { sandbox, proxy, adapter, runner } = await setup([{ kind: 'delay', ms: 3000 }]);
    const result = await runner.run(adapter, 'emails.send', { params: emailParams('timeout/1') });
    expect(result.status).toBe('done');
    expect(sandbox.count('emails.send')).toBe(1);
    expect(proxy.requests[0]!.clientGaveUp).toBe(true);
    expect(sandbox.requests().map((r) => r.result)).toEqual(['executed', 'replayed']);
  });
});

describe('one intent', () => {
  // The ref is the caller's own name, not Resend's (it reaches Resend only inside the key): white space an agent adds
  // at its ends is formatting, as for every shipped card's caller reference (docs/concepts.md, Normalisation).
  it.each([
    ['emails.send', emailParams('welcome-user/123'), 'emailRef', 'welcome-user/123'],
    ['batch.send', batchParams('invoices/2026-12'), 'batchRef', 'invoices/2026-12'],
  ] as const)(
    '%s: the ref with white space at its ends is the same operation ⇒ one send, adopted',
    async (op, params, ref, value) => {
      const { sandbox, adapter, runner } = await setup();
      const first = await runner.run(adapter, op, { params } as never);
      const padded = { ...params, [ref]: ` ${value}\n` };
      const again = await runner.run(adapter, op, { params: padded } as never);
      expect(first).toMatchObject({ status: 'done', adopted: false });
      expect(again).toMatchObject({ status: 'done', adopted: true, businessOperationId: first.businessOperationId });
      expect(sandbox.count(op)).toBe(1);
    },
  );

  it('a blank ref names nothing: refused before anything is claimed or sent', async () => {
    const { sandbox, adapter, runner } = await setup();
    await expect(runner.run(adapter, 'emails.send', { params: emailParams(' \t ') })).rejects.toMatchObject({
      name: 'InvalidParamsError',
    });
    expect(sandbox.requests()).toHaveLength(0);
  });

  it('another case or inner white space is another ref ⇒ another email', async () => {
    const { sandbox, adapter, runner } = await setup();
    const params = emailParams('welcome-user/123');
    const first = await runner.run(adapter, 'emails.send', { params });
    const other = await runner.run(adapter, 'emails.send', { params: { ...params, emailRef: 'Welcome-user/123' } });
    const inner = await runner.run(adapter, 'emails.send', { params: { ...params, emailRef: 'welcome-user /123' } });
    expect(new Set([first, other, inner].map((r) => r.businessOperationId)).size).toBe(3);
    expect(sandbox.count('emails.send')).toBe(3);
  });
});

describe('one request per attempt: the SDK never retries', () => {
  it('a 500 from Resend: one request, outcome unknown (the email may be out), nothing re-sent by the SDK', async () => {
    const { sandbox, adapter } = await setup();
    sandbox.failNext({ status: 500, name: 'internal_server_error', message: 'Unexpected error' });
    const out = await execute(adapter, 'emails.send', emailParams('five-hundred/1'), 'five-hundred-1');
    expect(out).toMatchObject({ kind: 'unknown', cause: 'server-error', status: 500, code: 'internal_server_error' });
    expect(sandbox.requestCount({ method: 'POST' })).toBe(1);
  });

  it.each([
    [{ statusCode: 503, name: 'internal_server_error', message: 'Service unavailable' }],
    [{ message: 'upstream unavailable' }],
  ])('a 503 with Retry-After (%j): one request, unknown, its wait kept for the runner', async (body) => {
    const { proxy, adapter } = await setup([{ kind: 'status', status: 503, retryAfterS: 30, body }]);
    const out = await execute(adapter, 'emails.send', emailParams('busy/1'), 'busy-1');
    expect(out).toMatchObject({ kind: 'unknown', retryAfterMs: 30_000 });
    expect(proxy.requests).toHaveLength(1);
  });

  it('a reset before anything arrived: the SDK answers statusCode null, one request, outcome unknown', async () => {
    const { sandbox, proxy, adapter } = await setup(['reset-before']);
    const out = await execute(adapter, 'emails.send', emailParams('reset/1'), 'reset-1');
    expect(out).toMatchObject({ kind: 'unknown', cause: 'other', code: 'application_error' });
    expect(proxy.requests).toHaveLength(1);
    expect(sandbox.requestCount()).toBe(0);
  });

  it('a refused connection (a closed port) answers exactly as a lost answer: the SDK drops the cause, so it stays unknown', async () => {
    // resend's fetchRequest catches every fetch failure bare and answers one fixed application_error, statusCode null:
    // a request that never left cannot be told from one that sent the email, so neither is classified never-sent.
    const { sandbox, adapter } = await setup(['drop-response']);
    const lost = await execute(adapter, 'emails.send', emailParams('refused/1'), 'refused-1');
    expect(sandbox.requestCount()).toBe(1);
    const nowhere = createResendAdapter({ apiKey: API_KEY, baseUrl: await closedPortUrl(), timeoutMs: 1000 });
    const refused = await execute(nowhere, 'emails.send', emailParams('refused/1'), 'refused-1');
    expect(refused).toEqual(lost);
    expect(refused).toMatchObject({ kind: 'unknown', cause: 'other', code: 'application_error' });
  });
});

describe("Resend's key store", () => {
  it('two workers without a shared ledger: the second gets 409 concurrent_idempotent_requests, re-sends later and adopts the same email', async () => {
    const sandbox = closeAfterTest(await startResendSandbox());
    const release = sandbox.hold();
    const adapter = createResendAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 5000 });
    const policy = { baseMs: 20, capMs: 100, lookupWindowMs: 30_000 };
    const params = emailParams('two-workers/1');
    const runs = Promise.all(
      ['machine-a', 'machine-b'].map((owner) =>
        createRunner({ ledger: createMemoryLedger(), policy, owner }).run(adapter, 'emails.send', { params }),
      ),
    );
    await sandbox.waitFor((log) => log.some((r) => r.result === 'in-flight'));
    release();
    const results = await runs;
    expect(results.map((r) => r.status)).toEqual(['done', 'done']);
    expect(new Set(results.map((r) => r.status === 'done' && r.providerRef)).size).toBe(1);
    expect(sandbox.count('emails.send')).toBe(1);
    expect(sandbox.requests().filter((r) => r.result === 'executed')).toHaveLength(1);
  });

  it('the same key with another payload: 409 invalid_idempotent_request is a rejection (conflict), no second email', async () => {
    const { sandbox, adapter } = await setup();
    const ctx = executeContext(adapter, 'emails.send', asBusinessOperationId('reused-key'));
    expect((await adapter.doExecute('emails.send', emailParams('reused'), ctx)).kind).toBe('succeeded');
    const out = await adapter.doExecute('emails.send', emailParams('reused', { subject: 'another subject' }), ctx);
    expect(out).toMatchObject({
      kind: 'rejected',
      reason: 'conflict',
      status: 409,
      code: 'invalid_idempotent_request',
    });
    expect(sandbox.count('emails.send')).toBe(1);
  });

  it('there is no lookup (Resend finds an email only by its id): doLookup is refused and sends nothing', async () => {
    const { sandbox, adapter } = await setup();
    const now = Date.now();
    await expect(
      adapter.doLookup(
        'emails.send',
        lookupContext(adapter, 'emails.send', asBusinessOperationId('no-lookup'), emailParams('no-lookup'), {
          firstDispatchedAt: now - 60_000,
          now,
        }),
      ),
    ).rejects.toSatisfy((e: unknown) => UnsupportedCapabilityError.isInstance(e));
    expect(sandbox.requestCount()).toBe(0);
  });

  it('the sandbox forgets a key after 24 h: the same key then sends again (why the adapter never relies on it past retention)', async () => {
    const { sandbox, adapter } = await setup();
    const ctx = executeContext(adapter, 'emails.send', asBusinessOperationId('forgotten'));
    await adapter.doExecute('emails.send', emailParams('forgotten'), ctx);
    sandbox.advance(RESEND_RETENTION_MS);
    await adapter.doExecute('emails.send', emailParams('forgotten'), ctx);
    expect(sandbox.count('emails.send')).toBe(2);
  });
});
