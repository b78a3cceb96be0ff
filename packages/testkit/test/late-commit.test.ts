// The late-commit fault — the provider applies the request after the
// client timed out. A provider with a lookup and no key folding is the negative control: while its card
// cannot bound how late a request may still land (no lookup.lateApplyBound), a runner that trusts an
// early "not found" re-sends and the provider ends with two records, and the drill must say so.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { runDrill } from '../src/drill.js';
import { startFaultProxy } from '../src/fault-proxy.js';
import { forgetful, replaying, sandboxDrill } from './fixtures/sandbox-drill.js';
import { tempDir } from './fixtures/temp-dir.js';

const lookupNoFolding = {
  replays: false,
  retentionMs: null,
  parameterMatching: 'none',
  concurrency: 'duplicates',
  lookup: 'get-by-key',
} as const;

describe('the late-commit fault at the proxy', () => {
  it('holds the request until the client gave up, applies it once due on the proxy clock, before the next request', async () => {
    const seen: string[] = [];
    const upstream = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.end('{}');
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
    let now = 1_000;
    const proxy = await startFaultProxy({
      target: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
      faults: [{ kind: 'late-commit', afterMs: 500 }],
      clock: { now: () => now },
    });
    try {
      const first = await fetch(`${proxy.url}/create`, {
        method: 'POST',
        body: '{}',
        signal: AbortSignal.timeout(200),
      }).catch((e: Error) => e);
      expect(first).toBeInstanceOf(Error);
      // The proxy sees the client go at its own pace: polled, not a fixed sleep that a loaded machine outruns.
      await vi.waitFor(() => expect(proxy.heldLate).toBe(1), { timeout: 5_000 });
      await fetch(`${proxy.url}/lookup-early`);
      expect(seen).toEqual(['GET /lookup-early']); // not due yet: the lookup sees nothing
      now += 500;
      await fetch(`${proxy.url}/lookup-late`);
      expect(seen).toEqual(['GET /lookup-early', 'POST /create', 'GET /lookup-late']);
      expect(proxy.requests[0]).toMatchObject({ clientGaveUp: true, forwarded: true });
      expect(proxy.heldLate).toBe(0);
    } finally {
      await proxy.close();
      await new Promise<void>((r) => upstream.close(() => r()));
    }
  });
});

describe('late-commit drill scenario', () => {
  it.each([
    ['sandbox-replaying', replaying],
    ['sandbox-forgetful', forgetful],
  ] as const)('%s: exactly one record', async (name, behaviour) => {
    const report = await runDrill({
      ...sandboxDrill(name, behaviour, { outDir: tempDir(`retrysafe-drill-${name}-`) }),
      scenarios: ['late-commit'],
    });
    const r = report.results[0]!;
    expect(r.failures).toEqual([]);
    expect(r.observed?.providerRecords).toBe(1);
  });

  it('negative control: a lookup without key folding — 2 records while decide trusts an early not-found (main), 1 with the late-apply row and the card fact', async () => {
    const setup = sandboxDrill('sandbox-lookup-no-folding', lookupNoFolding, {
      outDir: tempDir('retrysafe-drill-sandbox-lookup-no-folding-'),
    });
    const report = await runDrill({ ...setup, scenarios: ['late-commit'] });
    const r = report.results[0]!;
    const probe = await setup.createAdapter({ baseUrl: 'http://127.0.0.1:9', timeoutMs: 1500 });
    const declaresBound = 'lateApplyBound' in (probe.operations['records.create']!.card.lookup as object);
    if (declaresBound) {
      // With the late-apply row in decide and the bound on the card, not-found waits for the late commit.
      expect(r.status).toBe('passed');
    } else {
      expect(r.status).toBe('failed');
      expect(r.observed?.providerRecords).toBe(2);
      expect(r.failures.join('\n')).toMatch(/providerRecords expected 1, observed 2/);
    }
  });
});
