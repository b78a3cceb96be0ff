// The drill can fail: two deliberately broken adapters over the same sandbox must FAIL it, with
// messages that name the scenario and the counts.

import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AdapterV1, Outcome, ProviderKey } from '@retrysafe/contract';
import { createSandboxAdapter } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { type ConformanceOptions, runDrill } from '../src/conformance.js';
import { wrapAdapter } from '../src/wrap-adapter.js';
import { forgetful, replaying, sandboxDrill } from './fixtures/sandbox-drill.js';
import { tempDir } from './fixtures/temp-dir.js';

/** Broken: ignores the runner's provider key and sends a new one on every attempt. */
function newKeyEveryAttempt(inner: AdapterV1): AdapterV1 {
  return wrapAdapter(inner, {
    doExecute: (op, params, ctx) =>
      inner.doExecute(op, params, { ...ctx, providerKey: `rs-${randomUUID()}` as ProviderKey }),
    doLookup: (op, ctx) => inner.doLookup(op, { ...ctx, providerKey: `rs-${randomUUID()}` as ProviderKey }),
  });
}

/** Broken: retries on its own (a second retrying layer under the runner), up to 3 tries per attempt. */
function retriesInternally(inner: AdapterV1): AdapterV1 {
  return wrapAdapter(inner, {
    async doExecute(op, params, ctx) {
      let outcome = await inner.doExecute(op, params, ctx);
      for (let i = 1; i < 3 && (outcome.kind === 'unknown' || outcome.kind === 'not-applied'); i += 1)
        outcome = await inner.doExecute(op, params, ctx);
      return outcome;
    },
    doLookup: (op, ctx) => inner.doLookup(op, ctx),
  });
}

/** `inner` whose every doExecute answer is changed by `change` (`again` sends the same call once more). */
function afterExecute(inner: AdapterV1, change: (outcome: Outcome, again: () => Promise<Outcome>) => Outcome) {
  return wrapAdapter(inner, {
    async doExecute(op, params, ctx) {
      return change(await inner.doExecute(op, params, ctx), () => inner.doExecute(op, params, ctx));
    },
    doLookup: (op, ctx) => inner.doLookup(op, ctx),
  });
}

/** Broken: drops the provider's Retry-After from every outcome, so the runner only backs off. */
const dropsRetryAfter = (inner: AdapterV1) =>
  afterExecute(inner, (outcome) => {
    if (!('retryAfterMs' in outcome)) return outcome;
    const { retryAfterMs: _dropped, ...rest } = outcome;
    return rest as typeof outcome;
  });

/** Broken: answers "unknown" at once and sends again on its own a moment later (a detached second layer). */
const resendsInBackground = (inner: AdapterV1) =>
  afterExecute(inner, (outcome, again) => {
    if (outcome.kind === 'unknown') setTimeout(() => void again().catch(() => {}), 20);
    return outcome;
  });

/** Broken as resendsInBackground, on a machine so busy that nothing else runs for a while once it has sent. */
const resendsThenStalls = (inner: AdapterV1) =>
  afterExecute(inner, (outcome, again) => {
    if (outcome.kind === 'unknown')
      setTimeout(() => {
        void again().catch(() => {});
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
      }, 20);
    return outcome;
  });

/** Broken: reads the provider's permanent refusal as "unknown" (maybe applied). */
const unknownForRejected = (inner: AdapterV1) =>
  afterExecute(inner, (outcome) =>
    outcome.kind === 'rejected'
      ? ({ kind: 'unknown', cause: 'server-error', status: 400, message: 'read as unknown' } as const)
      : outcome,
  );

function broken(name: string, wrap: (a: AdapterV1) => AdapterV1, outDir: string, behaviour = replaying) {
  const base = sandboxDrill(name, behaviour, { outDir });
  return { ...base, createAdapter: async (ctx) => wrap(await base.createAdapter(ctx)) } as ConformanceOptions;
}

describe('the drill fails broken adapters', () => {
  it('an adapter that sends a new provider key on every attempt fails with duplicate records', async () => {
    const outDir = tempDir('drill-newkey-');
    const report = await runDrill({
      ...broken('new-key', newKeyEveryAttempt, outDir),
      scenarios: ['lost-response', 'lost-request', 'permanent-error'],
    });
    expect(report.ok).toBe(false);
    const lost = report.results.find((r) => r.scenario === 'lost-response')!;
    expect(lost.status).toBe('failed');
    expect(lost.observed!.providerRecords).toBe(2);
    expect(lost.failures).toContain('new-key records.create lost-response: providerRecords expected 1, observed 2');
    expect(lost.failedCriteria).toContain('providerRecords');
    // a scenario the broken key does not touch still passes: failures are specific, not blanket
    expect(report.results.find((r) => r.scenario === 'permanent-error')!.status).toBe('passed');
    const summary = JSON.parse(readFileSync(join(outDir, 'summary.json'), 'utf8'));
    expect(summary.failed).toBeGreaterThanOrEqual(1);
    expect(summary.failures.map((f: { scenario: string }) => f.scenario)).toContain('lost-response');
  });

  it('an adapter that retries on its own fails the one-layer check and the attempt count', async () => {
    const outDir = tempDir('drill-retries-');
    const report = await runDrill({
      ...broken('sdk-retries', retriesInternally, outDir),
      scenarios: ['transient-beyond-limit', 'lost-request'],
    });
    expect(report.ok).toBe(false);
    const transient = report.results.find((r) => r.scenario === 'transient-beyond-limit')!;
    expect(transient.status).toBe('failed');
    expect(transient.observed!.attemptsAtProxy).toBe(12);
    expect(transient.failures).toContain(
      'sdk-retries records.create transient-beyond-limit: attemptsAtProxy expected exactly 4, observed 12 (doExecute calls 4, requests 12)',
    );
    expect(
      transient.failures.some((f) =>
        /transient-beyond-limit: one retrying layer expected \(1 request per doExecute\), observed 3 request\(s\) for one doExecute call/.test(
          f,
        ),
      ),
    ).toBe(true);
    const onDisk = JSON.parse(readFileSync(transient.receiptFile, 'utf8'));
    expect(onDisk).toMatchObject({
      status: 'failed',
      scenario: 'transient-beyond-limit',
      criteria: { attemptsAtProxy: { exact: 4 } },
      observed: { attemptsAtProxy: 12 },
    });
  });

  it('an adapter that ignores the client timeout fails lost-response-timeout, naming timeoutMs', async () => {
    const outDir = tempDir('drill-notimeout-');
    const base = sandboxDrill('no-timeout', replaying, { outDir, timeoutMs: 100 });
    // broken: builds its client with a 60 s timeout whatever the drill asks for
    const report = await runDrill({
      ...base,
      createAdapter: ({ baseUrl }) => base.createAdapter({ baseUrl, timeoutMs: 60_000 }),
      scenarios: ['lost-response-timeout'],
    });
    expect(report.ok).toBe(false);
    expect(report.results[0]!.failures.join('\n')).toMatch(
      /no-timeout records\.create lost-response-timeout: the client did not time out: the proxy held the response 1500 ms and dropped it itself; createAdapter must pass timeoutMs \(100 ms\)/,
    );
  });

  it('an adapter that drops Retry-After fails rate-limited whether the fault sends it as retryAfterS or as its own header', async () => {
    const base = broken('no-retry-after', dropsRetryAfter, tempDir('drill-noretryafter-'));
    const op = base.operations['records.create']!;
    const body = { error: { code: 'rate_limited', message: 'slow down' } };
    const faults = [
      { kind: 'status', status: 429, retryAfterS: 2, body },
      { kind: 'status', status: 429, headers: { 'Retry-After': '2' }, body },
    ] as const;
    for (const rateLimited of faults) {
      const report = await runDrill({
        ...base,
        operations: { 'records.create': { ...op, faults: { ...op.faults, rateLimited } } },
        scenarios: ['rate-limited'],
      });
      expect(report.ok, JSON.stringify(rateLimited)).toBe(false);
      expect(report.results[0]!.failures.join('\n')).toMatch(
        /no-retry-after records\.create rate-limited: Retry-After not honoured: expected a wait of at least 2000 ms/,
      );
    }
  });

  it('a Retry-After header the drill cannot read as seconds fails the scenario instead of expecting no wait', async () => {
    const base = sandboxDrill('date-retry-after', replaying, { outDir: tempDir('drill-dateretryafter-') });
    const op = base.operations['records.create']!;
    const rateLimited = {
      kind: 'status',
      status: 429,
      headers: { 'retry-after': 'Wed, 21 Oct 2026 07:28:00 GMT' },
    } as const;
    const report = await runDrill({
      ...base,
      operations: { 'records.create': { ...op, faults: { ...op.faults, rateLimited } } },
      scenarios: ['rate-limited'],
    });
    expect(report.ok).toBe(false);
    expect(report.results[0]!.failures[0]).toMatch(
      /date-retry-after records\.create rate-limited: operations\['records\.create'\]\.faults\.rateLimited: its Retry-After header .* is not a number of seconds/,
    );
  });

  it('a scenario whose fault never reaches a doExecute request fails instead of passing a fault-free run', async () => {
    const base = sandboxDrill('no-play', replaying, { outDir: tempDir('drill-noplay-') });
    const op = base.operations['records.create']!;
    const report = await runDrill({
      ...base,
      // 'pass' is a fault the proxy accepts, but the in-progress scenario then drills an ordinary success
      operations: { 'records.create': { ...op, faults: { ...op.faults, inProgress: 'pass' } } },
      scenarios: ['in-progress'],
    });
    expect(report.ok).toBe(false);
    expect(report.results[0]!.failures.join('\n')).toMatch(
      /no-play records\.create in-progress: the scenario's fault \("pass"\) was never played on a request doExecute sent/,
    );
  });

  it('an adapter that re-sends in the background after answering unknown fails: its late request is seen, not missed', async () => {
    const report = await runDrill({
      ...broken('background', resendsInBackground, tempDir('drill-background-'), forgetful),
      scenarios: ['lost-response'],
    });
    expect(report.ok).toBe(false);
    const failures = report.results[0]!.failures.join('\n');
    expect(failures).toMatch(/background records\.create lost-response: providerRecords expected 1, observed 2/);
    expect(failures).toMatch(
      /background records\.create lost-response: 1 request\(s\) reached the provider outside any doExecute or doLookup call/,
    );
  });

  it('the late request is seen on a machine too busy to run anything for longer than the quiet period', async () => {
    const report = await runDrill({
      ...broken('stalled', resendsThenStalls, tempDir('drill-stalled-'), forgetful),
      scenarios: ['lost-response'],
    });
    expect(report.results[0]!.failures.join('\n')).toMatch(
      /stalled records\.create lost-response: 1 request\(s\) reached the provider outside any doExecute or doLookup call/,
    );
    expect(report.results[0]!.failures.join('\n')).toMatch(/providerRecords expected 1, observed 2/);
  });

  it('an adapter whose intent leaves out a field changeIntent changes fails changed-intent: a params conflict is not the intent conflict it names', async () => {
    const base = sandboxDrill('narrow-intent', replaying, { outDir: tempDir('drill-narrowintent-') });
    const report = await runDrill({
      ...base,
      // broken: ref, which changeIntent changes, is not part of the intent, so two orders share one business-operation id
      createAdapter: ({ baseUrl, timeoutMs }) =>
        createSandboxAdapter({ baseUrl, timeoutMs, behaviour: replaying, intentFields: ['amount'] }),
      scenarios: ['changed-intent'],
    });
    expect(report.ok).toBe(false);
    expect(report.results[0]!.failures.join('\n')).toMatch(
      /narrow-intent records\.create changed-intent: the conflict is on params, not on the intent/,
    );
  });

  it('an adapter that reads a permanent refusal as unknown fails permanent-error even where nothing can look it up', async () => {
    const report = await runDrill({
      ...broken('misread', unknownForRejected, tempDir('drill-misread-'), forgetful),
      scenarios: ['permanent-error'],
    });
    expect(report.ok).toBe(false);
    expect(report.results[0]!.failures.join('\n')).toMatch(
      /misread records\.create permanent-error: handoff reason expected rejected, observed unknown-no-safe-resend/,
    );
    expect(report.results[0]!.failedCriteria).toEqual(['handoff']);
  });

  it('a missing provider-shaped fault for a scenario the card says applies is a failure, not a skip', async () => {
    const outDir = tempDir('drill-nofault-');
    const base = sandboxDrill('no-fault', replaying, { outDir });
    const op = base.operations['records.create']!;
    const report = await runDrill({
      ...base,
      operations: { 'records.create': { ...op, faults: { permanent: op.faults.permanent } } },
      scenarios: ['in-progress'],
    });
    expect(report.ok).toBe(false);
    expect(report.results[0]!.status).toBe('failed');
    expect(report.results[0]!.failures[0]).toMatch(
      /no-fault records\.create in-progress: operations\['records\.create'\]\.faults\.inProgress is required/,
    );
    expect(existsSync(report.results[0]!.receiptFile)).toBe(true);
  });
});
