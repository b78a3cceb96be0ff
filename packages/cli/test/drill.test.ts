import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { drills as sandboxDrills } from '@retrysafe/sandbox';
import { drills as stripeDrills } from '@retrysafe/stripe/sandbox';
import { SCENARIOS } from '@retrysafe/testkit';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './chromium.js';
import { ANSI, cli, tempDir } from './helpers.js';

// The sandbox adapter plus one provider adapter (Stripe), every scenario: what CI can afford on every
// run. The whole drill over every adapter is `retrysafe drill` (timed in the package README).
const out = tempDir('drill');
let run: Awaited<ReturnType<typeof cli>>;
let report: any;

const expectedPairs = [...sandboxDrills, ...stripeDrills].flatMap((d) =>
  Object.keys(d.operations).flatMap((op) => SCENARIOS.map((s) => `${d.name} ${op} ${s}`)),
);

beforeAll(async () => {
  run = await cli(['drill', '--adapter', 'sandbox,stripe', '--out', out, '--seed', '7', '--json']);
  report = JSON.parse(run.stdout);
}, 300_000);

describe('retrysafe drill --json (sandbox + stripe)', () => {
  it('exits 0 with pure JSON on stdout (no progress, no colour mixed in)', () => {
    expect(run.stderr.match(/FAIL.*/g) ?? []).toEqual([]);
    expect(run.code).toBe(0);
    expect(run.stdout).not.toMatch(ANSI);
    expect(report.ok).toBe(true);
    expect(report.seed).toBe(7); // --seed is read
  });

  it('lists every adapter operation × scenario exactly once', () => {
    const seen = report.rows.map((r: any) => `${r.drill} ${r.operation} ${r.scenario}`);
    expect(seen.sort()).toEqual([...expectedPairs].sort());
    expect(report.totals.scenarios).toBe(expectedPairs.length);
    expect(report.totals.passed + report.totals.skipped).toBe(expectedPairs.length);
    expect(report.adapters.map((a: any) => a.name)).toEqual(['sandbox', 'stripe']);
    expect(report.adapters.find((a: any) => a.name === 'stripe').operations).toEqual(
      Object.keys(stripeDrills[0]!.operations),
    );
  });

  it('gives observed counts for every scenario that ran, matching what the card made it expect', () => {
    for (const r of report.rows) {
      if (r.status === 'skipped') {
        expect(r.skip.cardField, `${r.drill} ${r.operation} ${r.scenario}`).toMatch(/^[a-zA-Z.]+$/);
        expect(r.observed).toBeNull();
        continue;
      }
      const where = `${r.drill} ${r.operation} ${r.scenario}`;
      expect(typeof r.providerRecords, where).toBe('number');
      expect(typeof r.attemptsAtProxy, where).toBe('number');
      expect(r.observed.providerRecords, where).toBe(r.providerRecords);
      expect(r.providerRecords, where).toBe(r.expected.providerRecords);
      expect(r.outcome, where).toBeTruthy();
    }
  });

  it('shows the product point in the numbers: a lost Stripe response leaves one record after a same-key resend', () => {
    const lost = report.rows.filter((r: any) => r.drill === 'stripe' && r.scenario === 'lost-response');
    expect(lost).toHaveLength(4);
    for (const r of lost) expect(r).toMatchObject({ status: 'passed', providerRecords: 1, outcome: 'done' });
    const permanent = report.rows.filter((r: any) => r.drill === 'stripe' && r.scenario === 'permanent-error');
    for (const r of permanent)
      expect(r).toMatchObject({ providerRecords: 0, attemptsAtProxy: 1, handoffs: 1, outcome: 'handed-off' });
    // the forgetful sandbox stores nothing: it cannot offer key-past-retention, and says which card field says so
    const skipped = report.rows.find(
      (r: any) => r.drill === 'sandbox-forgetful' && r.scenario === 'key-past-retention',
    );
    expect(skipped.skip.cardField).toBe('retention.minimum');
  });

  it('writes one receipt per scenario × operation, a summary per drill, drill.json and report.html', () => {
    for (const r of report.rows) {
      expect(existsSync(r.receiptFile), r.receiptFile).toBe(true);
      expect(JSON.parse(readFileSync(r.receiptFile, 'utf8')).status).toBe(r.status);
    }
    for (const d of ['sandbox-replaying', 'sandbox-forgetful', 'stripe'])
      expect(existsSync(join(out, d, 'summary.json'))).toBe(true);
    expect(JSON.parse(readFileSync(join(out, 'drill.json'), 'utf8'))).toEqual(report);
    expect(report.html).toBe(join(out, 'report.html'));
  });
});

describe('report.html in headless Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('renders the totals, one row per scenario × operation, the matrix and an attempt timeline', async () => {
    const page = await browser.newPage();
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(`file://${report.html}`);
    expect(await page.title()).toBe('retrysafe drill report');

    const totals = page.locator('#totals');
    expect(await totals.getAttribute('data-passed')).toBe(String(report.totals.passed));
    expect(await totals.getAttribute('data-failed')).toBe('0');
    expect(await totals.innerText()).toContain(`${report.totals.passed} passed`);

    const rows = page.locator('#results tr.result');
    expect(await rows.count()).toBe(expectedPairs.length);
    const keys = await rows.evaluateAll((trs) =>
      trs.map(
        (tr) =>
          `${tr.getAttribute('data-drill')} ${tr.getAttribute('data-operation')} ${tr.getAttribute('data-scenario')}`,
      ),
    );
    expect(keys.sort()).toEqual([...expectedPairs].sort());
    expect(await page.locator('#matrix td.cell').count()).toBe(expectedPairs.length);

    // Stripe's transient-beyond-limit: four resends with the same key, then a handoff, drawn as four lanes.
    const row = page.locator(
      'tr.result[data-drill="stripe"][data-operation="customers.create"][data-scenario="transient-beyond-limit"]',
    );
    expect(await row.locator('td.status').innerText()).toBe('pass');
    const details = row.locator('xpath=following-sibling::tr[1]');
    await details.locator('summary').click();
    const lanes = details.locator('svg.timeline g.attempt');
    expect(await lanes.count()).toBe(4);
    expect(
      await lanes.evaluateAll((gs) =>
        gs.map((g) => `${g.getAttribute('data-kind')}:${g.getAttribute('data-outcome')}`),
      ),
    ).toEqual(['dispatch:not-applied', 'resend:not-applied', 'resend:not-applied', 'resend:not-applied']);
    expect(await details.locator('svg.timeline rect').first().isVisible()).toBe(true);
    const wireKeys = await details.locator('table.wire tbody tr td:nth-child(4)').allInnerTexts();
    expect(wireKeys).toHaveLength(4);
    expect(new Set(wireKeys).size).toBe(1);
    expect(await details.innerText()).toContain('retry-exhausted');

    // self-contained: nothing but the file itself was requested
    expect(requests.filter((u) => !u.startsWith('file://'))).toEqual([]);
    await page.close();
  });
});
