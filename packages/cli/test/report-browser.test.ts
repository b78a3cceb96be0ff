/// <reference lib="dom" />
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ScenarioResult } from '@retrysafe/testkit';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drillCommand } from '../src/commands/drill/index.js';
import { renderHtmlReport } from '../src/report/html.js';
import { launchChromium } from './chromium.js';
import { tempDir } from './helpers.js';

// The HTML report of a real drill (Microsoft Graph and the generic HTTP adapter: long $filter URLs, keys
// in the body and in the query, the crash scenario), in headless Chromium at a desktop and a phone
// width. One result is turned into a failure after the run (the report, not the drill, is under test
// here) so the failing-criterion highlight and the filters have something to show.
const out = tempDir('rs-report-');
const html = join(out, 'report-with-failure.html');
const shots = process.env.RS_REPORT_SHOTS ?? join(out, 'shots');
let browser: Browser;

beforeAll(async () => {
  const report = await drillCommand(
    { adapter: ['msgraph', 'http'], scenario: ['lost-response', 'crash-after-dispatch'], out },
    null,
  );
  expect(report.totals.failed).toBe(0);
  const results = report.rows.map((row) => ({
    adapter: row.adapter,
    result: JSON.parse(readFileSync(row.receiptFile, 'utf8')) as ScenarioResult,
  }));
  const i = results.findIndex(
    (x) =>
      x.result.drill === 'msgraph' && x.result.operation === 'events.create' && x.result.scenario === 'lost-response',
  );
  const r = results[i]!.result;
  results[i] = {
    adapter: 'msgraph',
    result: {
      ...r,
      status: 'failed',
      observed: { ...r.observed!, providerRecords: 2 },
      failures: [`${r.drill} ${r.operation} ${r.scenario}: providerRecords expected 1, observed 2`],
      failedCriteria: ['providerRecords'],
    },
  };
  const totals = { passed: results.filter((x) => x.result.status === 'passed').length, failed: 1, skipped: 0 };
  writeFileSync(html, renderHtmlReport({ generatedAt: '2026-12-01T08:00:00.000Z', seed: 1, totals, results }));
  browser = await launchChromium();
}, 240_000);
afterAll(async () => {
  await browser?.close();
});

async function open(width: number): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  await page.goto(`file://${html}`);
  return page;
}
const details = (page: Page, drill: string, op: string, scenario: string) =>
  page
    .locator(`tr.result[data-drill="${drill}"][data-operation="${op}"][data-scenario="${scenario}"]`)
    .locator('xpath=following-sibling::tr[1]');

describe('report.html in headless Chromium', () => {
  for (const width of [1280, 420]) {
    it(`at ${width} px: long URLs wrap inside their cells, nothing runs off the page`, async () => {
      const page = await open(width);
      const d = details(page, 'msgraph', 'mail.send', 'lost-response');
      await d.locator('summary').click();
      // The send, then the lookups: the drill's Sent Items shows a mail only after transport, as Graph documents,
      // so the lookup asks until it shows.
      const urls = d.locator('table.wire code.url');
      const [send, ...lookups] = await urls.allInnerTexts();
      expect(send).toMatch(/sendMail/);
      expect(lookups.length).toBeGreaterThanOrEqual(1);
      for (const text of lookups) expect(text).toMatch(/sentitems\/messages\?\$filter=singleValueExtendedProperties/);
      const lookup = urls.nth(1);
      const fit = await lookup.evaluate((el) => {
        const cell = el.closest('td')!.getBoundingClientRect();
        const box = el.getBoundingClientRect();
        return {
          inside: box.right <= cell.right + 1,
          lines: Math.round(box.height / parseFloat(getComputedStyle(el).lineHeight || '16')),
          clipped: el.scrollWidth > el.clientWidth + 1,
        };
      });
      expect(fit.inside).toBe(true);
      expect(fit.clipped).toBe(false);
      expect(fit.lines).toBeGreaterThan(1); // it wrapped rather than ran on
      const overflow = await page.evaluate(
        () => document.querySelector('#results')!.getBoundingClientRect().right - document.documentElement.clientWidth,
      );
      expect(overflow).toBeLessThanOrEqual(1);
      mkdirSync(shots, { recursive: true });
      await page.screenshot({ path: join(shots, `report-${width}.png`), fullPage: false });
      await d.screenshot({ path: join(shots, `mail-send-${width}.png`) });
      expect(statSync(join(shots, `report-${width}.png`)).size).toBeGreaterThan(10_000);
      await page.close();
    });
  }

  it('the failing criterion is highlighted, the others are not', async () => {
    const page = await open(1280);
    const d = details(page, 'msgraph', 'events.create', 'lost-response');
    expect(await d.locator('details').getAttribute('open')).not.toBeNull();
    const bad = d.locator('table.criteria tr.criterion-failed');
    expect(await bad.count()).toBe(1);
    expect(await bad.getAttribute('data-criterion')).toBe('provider records');
    expect(
      await bad
        .locator('td')
        .first()
        .evaluate((td) => getComputedStyle(td).backgroundColor),
    ).toBe('rgb(255, 205, 210)');
    expect(await d.locator('table.criteria tr.criterion-ok').count()).toBe(4);
    await d.screenshot({ path: join(shots, 'failed-criterion-1280.png') });
    await page.close();
  });

  it('each wire request links to the runner attempt that sent it, and the attempt names its requests', async () => {
    const page = await open(1280);
    const d = details(page, 'http-acme-orders', 'orders.create', 'lost-response');
    await d.locator('summary').click();
    const links = d.locator('table.wire tbody tr td:last-child a');
    expect(await links.allInnerTexts()).toEqual(['#1 dispatch', '#2 resend']);
    for (const href of await links.evaluateAll((as) => as.map((a) => a.getAttribute('href')!))) {
      expect(await d.locator(`svg.timeline g.attempt${href}`).count()).toBe(1);
    }
    expect(
      await d.locator('svg.timeline g.attempt').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-wire'))),
    ).toEqual(['1', '2']);
    await page.close();
  });

  it('keys sent in the body and in the query are shown, not only header keys', async () => {
    const page = await open(1280);
    const ev = details(page, 'msgraph', 'events.create', 'lost-response');
    const bodyKey = ev.locator('table.wire td[data-key-in="body"]');
    expect(await bodyKey.count()).toBe(1);
    expect(await bodyKey.innerText()).toMatch(/^in the body: rs-/);
    const ec2 = details(page, 'http-acme-compute', 'instances.run', 'lost-response');
    await ec2.locator('summary').click();
    expect(await ec2.locator('table.wire td[data-key-in="body"]').innerText()).toMatch(
      /^in the body: rs-acme-compute\.instances\.run:/,
    );
    expect(await ec2.locator('table.wire td[data-key-in="query"]').innerText()).toMatch(
      /^in the query: rs-acme-compute\.instances\.run:/,
    );
    const ietf = details(page, 'http-acme-orders', 'orders.create', 'lost-response');
    expect(await ietf.locator('table.wire td[data-key-in="header"]').count()).toBe(2);
    await page.close();
  });

  it("the crash scenario draws the dead worker's request and the recovery", async () => {
    const page = await open(1280);
    const d = details(page, 'http-acme-compute', 'instances.run', 'crash-after-dispatch');
    await d.locator('summary').click();
    expect(await d.locator('svg.timeline g.crash').count()).toBe(1);
    expect(await d.locator('svg.timeline g.crash').innerHTML()).toMatch(/worker died/);
    expect(
      await d.locator('svg.timeline g.attempt').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-kind'))),
    ).toEqual(['lookup']);
    expect(await d.locator('table.wire tbody tr').first().locator('td:last-child').innerText()).toMatch(/died/);
    await d.screenshot({ path: join(shots, 'crash-1280.png') });
    await page.close();
  });

  it('filters rows by status and by adapter with CSS alone (no script on the page)', async () => {
    const page = await open(1280);
    expect(await page.locator('script').count()).toBe(0);
    const visible = () => page.locator('#results tr.result:visible').count();
    const all = await page.locator('#results tr.result').count();
    expect(await visible()).toBe(all);
    await page.locator('label[for="st-failed"]').click();
    expect(await visible()).toBe(1);
    // the chosen filter is shown as chosen
    expect(await page.locator('label[for="st-failed"]').evaluate((l) => getComputedStyle(l).backgroundColor)).toBe(
      'rgb(38, 50, 56)',
    );
    expect(await page.locator('label[for="st-all"]').evaluate((l) => getComputedStyle(l).backgroundColor)).not.toBe(
      'rgb(38, 50, 56)',
    );
    expect(await page.locator('#results tr.result:visible').getAttribute('data-status')).toBe('failed');
    await page.locator('label[for="st-all"]').click();
    await page.locator('label[for="ad-msgraph"]').click();
    const shown = await page
      .locator('#results tr.result:visible')
      .evaluateAll((trs) => [...new Set(trs.map((tr) => tr.getAttribute('data-adapter')))]);
    expect(shown).toEqual(['msgraph']);
    await page.locator('label[for="st-passed"]').click();
    expect(await visible()).toBe(5); // msgraph: 3 operations × 2 scenarios, one of them failed
    await page.screenshot({ path: join(shots, 'filtered-1280.png') });
    await page.close();
  });
});
