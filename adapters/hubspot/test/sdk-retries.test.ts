import { Client } from '@hubspot/api-client';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { HubSpotSandbox } from '../src/sandbox/index.js';
import { adapter, execute, sandbox, seen, TOKEN, ticket } from './helpers.js';

// @hubspot/api-client 14.0.1 keeps its retry decorator in a process-wide singleton
// (lib/src/services/ApiDecoratorService.js): every `new Client()` replaces it, and a client's API
// objects are decorated when its discovery (`client.crm.tickets`) is first read. These tests count
// requests at the sandbox to show (1) the SDK's retry duplicates creates, (2) how it leaks from one
// client into another, and (3) that the adapter makes exactly one request per attempt anyway.

let s: HubSpotSandbox;
beforeEach(async () => {
  s = await sandbox();
  // the RetryDecorator logs every retry with console.error
  vi.spyOn(console, 'error').mockImplementation(() => {});
});
afterEach(async () => {
  vi.restoreAllMocks();
  await s.close();
});

const rawTicket = (subject: string) => ({
  properties: { subject, hs_pipeline: '0', hs_pipeline_stage: '1' },
  associations: [],
});

describe('negative controls: what the SDK does on its own', () => {
  it('numberOfApiCallRetries: 3 re-sends a POST create after a 500 that committed ⇒ 3 tickets for one call', async () => {
    const client = new Client({ accessToken: TOKEN, basePath: s.url, numberOfApiCallRetries: 3 });
    s.failNext(2, { status: 500, commit: true });
    await client.crm.tickets.basicApi.create(rawTicket('one intent'));
    expect(seen(s, 'create', 'tickets')).toBe(3);
    expect(s.count('tickets')).toBe(3);
  });

  it('numberOfApiCallRetries is the TOTAL number of attempts (6 ⇒ 6 requests, not 7)', async () => {
    const client = new Client({ accessToken: TOKEN, basePath: s.url, numberOfApiCallRetries: 6 });
    s.failNext(10, { status: 500 });
    await expect(client.crm.tickets.basicApi.create(rawTicket('six'))).rejects.toMatchObject({ code: 500 });
    expect(seen(s, 'create', 'tickets')).toBe(6);
  }, 20_000);

  it('leak: a client built with 0 retries, whose tickets API is first read after another client set 3, retries 3 times', async () => {
    const quiet = new Client({ accessToken: TOKEN, basePath: s.url, numberOfApiCallRetries: 0 });
    new Client({ accessToken: TOKEN, basePath: s.url, numberOfApiCallRetries: 3 });
    s.failNext(10, { status: 500 });
    await expect(quiet.crm.tickets.basicApi.create(rawTicket('quiet'))).rejects.toMatchObject({ code: 500 });
    expect(seen(s, 'create', 'tickets')).toBe(3);
  });

  it('…while an API object read BEFORE the other client was built keeps its (lack of) retries: decoration happens at first read', async () => {
    const quiet = new Client({ accessToken: TOKEN, basePath: s.url, numberOfApiCallRetries: 0 });
    const api = quiet.crm.tickets.basicApi;
    new Client({ accessToken: TOKEN, basePath: s.url, numberOfApiCallRetries: 3 });
    s.failNext(10, { status: 500 });
    await expect(api.create(rawTicket('early'))).rejects.toMatchObject({ code: 500 });
    expect(seen(s, 'create', 'tickets')).toBe(1);
  });

  it('and the reverse: building a 0-retry client strips retries from a client that asked for them, if its API is read later', async () => {
    const wanted = new Client({ accessToken: TOKEN, basePath: s.url, numberOfApiCallRetries: 3 });
    new Client({ accessToken: TOKEN, basePath: s.url });
    s.failNext(10, { status: 500 });
    await expect(wanted.crm.tickets.basicApi.create(rawTicket('wanted'))).rejects.toMatchObject({ code: 500 });
    expect(seen(s, 'create', 'tickets')).toBe(1);
  });
});

describe('the adapter is immune to the process-wide retry setting', () => {
  it('with retrying clients built before and after it, one doExecute = one request, on 5xx and on 429 TEN_SECONDLY_ROLLING', async () => {
    new Client({ accessToken: TOKEN, basePath: s.url, numberOfApiCallRetries: 6 });
    const a = adapter(s.url);
    const noisy = new Client({ accessToken: TOKEN, basePath: s.url, numberOfApiCallRetries: 6 });

    // Each fault scripted 10 times: a retrying layer would send more than one request per doExecute.
    const cases = [
      { ref: 'immune-500', fault: () => s.failNext(10, { status: 500 }), expected: { kind: 'unknown', status: 500 } },
      {
        ref: 'immune-429',
        fault: () => {
          s.failNext(0);
          s.throttle(10, 'TEN_SECONDLY_ROLLING');
        },
        expected: { kind: 'not-applied', status: 429 },
      },
    ];
    for (const [i, { ref, fault, expected }] of cases.entries()) {
      fault();
      expect(await execute(a, 'tickets.create', ticket(ref))).toMatchObject(expected);
      expect(seen(s, 'create', 'tickets')).toBe(i + 1);
    }

    // positive control: the retry setting really is live in this process
    s.throttle(0);
    s.failNext(2, { status: 503 });
    await noisy.crm.tickets.basicApi.create(rawTicket('noisy'));
    expect(seen(s, 'create', 'tickets')).toBe(5);
  });

  it('through the runner: a second client with 6 retries in the process, 429 on every call ⇒ exactly maxAttempts requests, then handoff', async () => {
    const a = adapter(s.url);
    new Client({ accessToken: TOKEN, basePath: s.url, numberOfApiCallRetries: 6 });
    s.throttle(1000, 'TEN_SECONDLY_ROLLING');
    const clock = createVirtualClock();
    const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
    const r = await runner.run(a, 'tickets.create', { params: ticket('runner-429') });
    const max = a.operations['tickets.create'].card.limits.maxAttempts;
    if (r.status !== 'handed-off') throw new Error(`expected a handoff, got ${r.status}`);
    expect(r.packet.reason).toBe('retry-exhausted');
    expect(seen(s, 'create', 'tickets')).toBe(max);
    expect(r.receipts.filter((x) => x.kind === 'dispatch' || x.kind === 'resend')).toHaveLength(max);
    expect(s.count('tickets')).toBe(0);
    // the runner honoured the 10 s the TEN_SECONDLY_ROLLING policy implies between attempts
    expect(clock.sleeps.filter((ms) => ms >= 10_000)).toHaveLength(max - 1);
  });
});
