import { createServer } from 'node:net';
import {
  type AdapterV1,
  asBusinessOperationId,
  newAttemptId,
  newRunId,
  type Outcome,
  UnsupportedCapabilityError,
} from '@retrysafe/contract';
import {
  createSandboxAdapter,
  createSandboxProvider,
  REPLAYING_BEHAVIOUR,
  type SandboxBehaviour,
  type SandboxServer,
  startSandboxServer,
} from '@retrysafe/sandbox';
import { afterEach, describe, expect, it } from 'vitest';

// Replays for 24 h, 422 on a mismatch, 409 while in flight, lookup by key.
const behaviour = REPLAYING_BEHAVIOUR;
const id = asBusinessOperationId('http-op-1');
let server: SandboxServer | null = null;
/** The lookup context of a call whose key holds nothing, first dispatched at `firstDispatchedAt`. */
const missing = (firstDispatchedAt: number, now: number) => ({
  businessOperationId: id,
  providerKey: 'rs-missing' as never,
  params: { ref: 'a' },
  runId: newRunId(),
  attemptId: newAttemptId(),
  statusRef: null,
  firstDispatchedAt,
  now,
});
afterEach(async () => {
  await server?.close();
  server = null;
});

function exec(
  adapter: AdapterV1,
  params: unknown,
  key = adapter.deriveProviderKey('records.create', id),
): Promise<Outcome> {
  return adapter.doExecute('records.create', params, {
    businessOperationId: id,
    providerKey: key,
    runId: newRunId(),
    attemptId: newAttemptId(),
    attempt: 1,
    statusRef: null,
  });
}

describe('sandbox over loopback HTTP', () => {
  it('classifies 201, replay, 422, 400, 429 + Retry-After, 500 and 503', async () => {
    const provider = createSandboxProvider(behaviour);
    server = await startSandboxServer({ provider });
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const adapter = createSandboxAdapter({ baseUrl: server.url, behaviour });
    expect(await exec(adapter, { ref: 'a' })).toMatchObject({
      kind: 'succeeded',
      status: 201,
      providerRef: 'rec_0001',
      requestId: 'req_1',
    });
    expect(await exec(adapter, { ref: 'a' })).toMatchObject({ kind: 'replayed', status: 201, providerRef: 'rec_0001' });
    expect(await exec(adapter, { ref: 'b' })).toMatchObject({ kind: 'rejected', reason: 'conflict', status: 422 });
    provider.failNext({ kind: 'rejected' });
    expect(await exec(adapter, { ref: 'a' })).toMatchObject({ kind: 'rejected', reason: 'validation', status: 400 });
    provider.failNext({ kind: 'not-applied', retryAfterMs: 2000 });
    expect(await exec(adapter, { ref: 'a' })).toMatchObject({ kind: 'not-applied', status: 429, retryAfterMs: 2000 });
    provider.failNext({ kind: 'unknown-after-commit' });
    expect(await exec(adapter, { ref: 'z' }, 'rs-other' as never)).toMatchObject({
      kind: 'unknown',
      cause: 'server-error',
      status: 500,
    });
    provider.failNext({ kind: 'unknown-before-commit' });
    expect(await exec(adapter, { ref: 'y' }, 'rs-third' as never)).toMatchObject({ kind: 'unknown', status: 503 });
    expect(provider.count()).toBe(2);
  });

  it('reports in-progress (202 + Location, 409) and looks records up by key', async () => {
    const provider = createSandboxProvider({ ...behaviour, processingMs: 60_000 });
    server = await startSandboxServer({ provider });
    const adapter = createSandboxAdapter({ baseUrl: server.url, behaviour: provider.behaviour });
    expect(await exec(adapter, { ref: 'a' })).toMatchObject({
      kind: 'in-progress',
      status: 202,
      statusRef: '/records/rec_0001',
    });
    expect(await exec(adapter, { ref: 'a' })).toMatchObject({
      kind: 'in-progress',
      status: 409,
      code: 'idempotency_key_in_use',
      retryAfterMs: 60_000,
    });
    const ctx = {
      businessOperationId: id,
      providerKey: adapter.deriveProviderKey('records.create', id),
      params: { ref: 'a' },
      runId: newRunId(),
      attemptId: newAttemptId(),
      statusRef: null,
      firstDispatchedAt: Date.now(),
      now: Date.now(),
    };
    expect(await adapter.doLookup('records.create', ctx)).toMatchObject({
      kind: 'found',
      outcome: { kind: 'in-progress' },
    });
    provider.advance(60_000);
    expect(await adapter.doLookup('records.create', ctx)).toMatchObject({
      kind: 'found',
      outcome: { kind: 'succeeded', providerRef: 'rec_0001' },
    });
    // Nothing under that key; the card bounds no late apply (lateApplyMs unset), so that proves nothing.
    expect(await adapter.doLookup('records.create', { ...ctx, providerKey: 'rs-nothing' as never })).toMatchObject({
      kind: 'cannot-tell',
    });
    provider.failNextLookup(1, 3000);
    expect(await adapter.doLookup('records.create', ctx)).toMatchObject({
      kind: 'cannot-tell',
      status: 503,
      retryAfterMs: 3000,
    });
    expect(provider.count()).toBe(1);
  });

  it('two records under one key (a re-send after the key expired): the lookup names both, in process and over HTTP, never the first adopted', async () => {
    const provider = createSandboxProvider({ ...behaviour, retentionMs: 1000, clock: () => 0 });
    server = await startSandboxServer({ provider });
    const inProcess = createSandboxAdapter({ provider });
    await exec(inProcess, { ref: 'a' });
    provider.advance(1000);
    await exec(inProcess, { ref: 'a' });
    expect(provider.count()).toBe(2);
    const now = provider.now();
    const ctx = { ...missing(now, now), providerKey: inProcess.deriveProviderKey('records.create', id) };
    for (const adapter of [inProcess, createSandboxAdapter({ baseUrl: server.url, behaviour: provider.behaviour })])
      expect(await adapter.doLookup('records.create', ctx)).toMatchObject({
        kind: 'cannot-tell',
        reason: expect.stringContaining('rec_0001, rec_0002'),
        duplicates: ['rec_0001', 'rec_0002'],
      });
  });

  it('a miss is judged by the card: with no late-apply bound (lateApplyMs unset) never not-found, however late', async () => {
    const provider = createSandboxProvider(behaviour);
    server = await startSandboxServer({ provider });
    const adapter = createSandboxAdapter({ baseUrl: server.url, behaviour });
    const now = Date.now();
    const ctx = missing(now - 86_400_000, now);
    expect(await adapter.doLookup('records.create', ctx)).toMatchObject({ kind: 'cannot-tell' });
  });

  it('a miss inside the lookup consistency delay, counted from the LAST dispatch, is cannot-tell; after it, not-found', async () => {
    // lateApplyMs 0: the card bounds the late apply, so only the consistency delay is left to wait out.
    const delayed: SandboxBehaviour = { ...behaviour, lookupDelayMs: 2000, lateApplyMs: 0 };
    const provider = createSandboxProvider(delayed);
    server = await startSandboxServer({ provider });
    const adapter = createSandboxAdapter({ baseUrl: server.url, behaviour: delayed });
    const now = Date.now();
    const ctx = missing(now - 60_000, now);
    // The first dispatch is long past, but a re-send went out 500 ms ago: it may not show yet.
    expect(await adapter.doLookup('records.create', { ...ctx, lastDispatchedAt: now - 500 })).toMatchObject({
      kind: 'cannot-tell',
      retryAfterMs: 1500,
    });
    expect(await adapter.doLookup('records.create', { ...ctx, lastDispatchedAt: now - 2500 })).toMatchObject({
      kind: 'not-found',
    });
    expect(await adapter.doLookup('records.create', ctx)).toMatchObject({ kind: 'not-found' });
  });

  it('connection refused before sending ⇒ not-applied; no answer before the timeout ⇒ unknown', async () => {
    // A port that was just free: nothing listens, the connection is refused.
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const refused = createSandboxAdapter({ baseUrl: `http://127.0.0.1:${port}/`, behaviour });
    expect(await exec(refused, { ref: 'a' })).toMatchObject({ kind: 'not-applied', code: 'ECONNREFUSED' });
    // A server that accepts and never answers.
    const sockets: import('node:net').Socket[] = [];
    const silent = createServer((s) => void sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const slow = createSandboxAdapter({
      baseUrl: `http://127.0.0.1:${(silent.address() as { port: number }).port}/`,
      behaviour,
      timeoutMs: 200,
    });
    expect(await exec(slow, { ref: 'a' })).toMatchObject({ kind: 'unknown', cause: 'timeout' });
    // A server that resets the connection after reading the request.
    const resetter = createServer((s) => s.once('data', () => s.resetAndDestroy()));
    await new Promise<void>((r) => resetter.listen(0, '127.0.0.1', r));
    const reset = createSandboxAdapter({
      baseUrl: `http://127.0.0.1:${(resetter.address() as { port: number }).port}/`,
      behaviour,
    });
    expect(await exec(reset, { ref: 'a' })).toMatchObject({ kind: 'unknown' });
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
    await new Promise((r) => resetter.close(r));
  });

  it('a sandbox without lookup says so with a typed error; the server refuses non-loopback hosts', async () => {
    const provider = createSandboxProvider({ ...behaviour, lookup: 'none' });
    const adapter = createSandboxAdapter({ provider });
    await expect(
      adapter.doLookup('records.create', {
        businessOperationId: id,
        providerKey: 'k' as never,
        params: {},
        runId: newRunId(),
        attemptId: newAttemptId(),
        statusRef: null,
        firstDispatchedAt: null,
        now: 0,
      }),
    ).rejects.toSatisfy(UnsupportedCapabilityError.isInstance);
    await expect(startSandboxServer({ provider, host: '0.0.0.0' })).rejects.toThrow(/loopback/);
  });
});
