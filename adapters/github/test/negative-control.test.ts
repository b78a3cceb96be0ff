// Negative control: the same issues.create, the same SDK and sandbox, but reconciled the way a naive
// client does it — ask GitHub's search for the marker and, finding nothing, trust it (a card claiming the
// search shows a create at once). The search lags behind writes, so after a lost answer it says "not
// found" and the runner sends again: the drill counts two issues. The list lookup gives one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Octokit } from '@octokit/rest';
import type { AdapterV1, LookupResult, OperationSpec } from '@retrysafe/contract';
import { runDrill } from '@retrysafe/testkit/conformance';
import { afterAll, describe, expect, it } from 'vitest';
import { markerFor } from '../src/github-operations.js';
import { createGitHubAdapter } from '../src/index.js';
import { DRILL_TOKEN, gitHubDrill } from '../src/sandbox/index.js';

function searchingAdapter(baseUrl: string, timeoutMs: number): AdapterV1 {
  const safe = createGitHubAdapter({ auth: DRILL_TOKEN, baseUrl, timeoutMs });
  const octokit = new Octokit({ auth: DRILL_TOKEN, baseUrl });
  const spec = safe.operations['issues.create']!;
  const trusting: OperationSpec = {
    ...spec,
    card: {
      ...spec.card,
      lookup: {
        ...spec.card.lookup,
        consistencyDelay: { value: null, source: 'CONTROL' },
        lateApplyBound: { value: '0s', source: 'CONTROL' },
      },
      unverified: spec.card.unverified.filter((u) => !u.field.startsWith('lookup.')),
    },
  };
  return {
    ...safe,
    operations: { 'issues.create': trusting },
    async doLookup(_operation, ctx): Promise<LookupResult> {
      const p = ctx.params as { owner: string; repo: string };
      const found = await octokit.request('GET /search/issues', {
        q: `"${markerFor(ctx.businessOperationId)}" repo:${p.owner}/${p.repo} in:body`,
      });
      return found.data.total_count > 0
        ? { kind: 'found', outcome: { kind: 'succeeded', result: found.data.items[0] } }
        : { kind: 'not-found', reason: 'CONTROL: search found nothing' };
    },
  };
}

const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-drill-github-negative-control-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));
const operations = { 'issues.create': gitHubDrill.operations['issues.create']! };

describe('negative control: a lookup on the lagging search', () => {
  it('lost 201 ⇒ search says not found ⇒ sent again ⇒ two issues; the drill fails and says so', async () => {
    const report = await runDrill({
      ...gitHubDrill,
      name: 'github-negative-control',
      outDir: join(outDir, 'search'),
      createAdapter: ({ baseUrl, timeoutMs }) => searchingAdapter(baseUrl, timeoutMs),
      operations,
      scenarios: ['lost-response'],
    });
    const lost = report.results.find((r) => r.scenario === 'lost-response')!;
    expect(lost.status).toBe('failed');
    expect(lost.observed!.providerRecords).toBe(2);
  });

  it('the adapter as shipped (list lookup): the same scenario passes with one issue', async () => {
    const report = await runDrill({
      ...gitHubDrill,
      outDir: join(outDir, 'list'),
      operations,
      scenarios: ['lost-response'],
    });
    const lost = report.results.find((r) => r.scenario === 'lost-response')!;
    expect(lost.status).toBe('passed');
    expect(lost.observed!.providerRecords).toBe(1);
  });
});
