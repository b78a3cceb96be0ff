import type { ScenarioResult } from '@retrysafe/testkit/conformance';

export interface HtmlReportInput {
  readonly generatedAt: string;
  readonly seed: number;
  readonly totals: { readonly passed: number; readonly failed: number; readonly skipped: number };
  readonly results: readonly { readonly adapter: string; readonly result: ScenarioResult }[];
}

const esc = (s: unknown) =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const OUTCOME_COLOR: Record<string, string> = {
  succeeded: '#2e7d32', replayed: '#558b2f', found: '#558b2f', 'in-progress': '#f9a825', 'not-applied': '#ef6c00',
  unknown: '#6a1b9a', 'cannot-tell': '#8e24aa', 'not-found': '#546e7a', rejected: '#c62828',
};

/** One operation's attempts on a time axis (virtual drill time), as inline SVG. */
function timeline(r: ScenarioResult): string {
  const receipts = r.runnerReceipts;
  if (receipts.length === 0) return '<p class="muted">No provider call was made.</p>';
  const t0 = Math.min(...receipts.map((x) => Date.parse(x.startedAt)));
  const t1 = Math.max(...receipts.map((x) => Date.parse(x.finishedAt)), t0 + 1);
  const width = 760, left = 170, row = 22;
  const span = t1 - t0;
  const x = (t: number) => left + ((t - t0) / span) * (width - left - 10);
  const bars = receipts.map((rc, i) => {
    const s = Date.parse(rc.startedAt), e = Date.parse(rc.finishedAt);
    const color = OUTCOME_COLOR[rc.outcome ?? ''] ?? '#90a4ae';
    const y = 8 + i * row;
    const label = `${rc.kind} → ${rc.outcome ?? '—'}`;
    const title = `#${rc.seq} ${rc.kind} at +${s - t0} ms, ${e - s} ms: ${rc.outcome ?? '—'}; decision: ${rc.decision.action} (${rc.decision.reason})${rc.status ? `; HTTP ${rc.status}` : ''}`;
    return `<g class="attempt" data-kind="${esc(rc.kind)}" data-outcome="${esc(rc.outcome ?? '')}"><title>${esc(title)}</title>` +
      `<text x="4" y="${y + 13}">${esc(label)}</text>` +
      `<rect x="${x(s).toFixed(1)}" y="${y}" width="${Math.max(3, x(e) - x(s)).toFixed(1)}" height="16" rx="3" fill="${color}"></rect>` +
      `<text x="${Math.min(x(e) + 6, width - 150).toFixed(1)}" y="${y + 13}" class="muted">+${s - t0} ms · ${esc(rc.decision.action)}</text></g>`;
  });
  const height = 16 + receipts.length * row;
  return `<svg class="timeline" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="attempt timeline">${bars.join('')}</svg>`;
}

function resultRow(adapter: string, r: ScenarioResult): string {
  const o = r.observed;
  const cls = r.status;
  const criteria = r.criteria
    ? `<ul>${r.criteria.why.map((w) => `<li>${esc(w)}</li>`).join('')}</ul><pre>${esc(JSON.stringify({ providerRecords: r.criteria.providerRecords, attemptsAtProxy: r.criteria.attemptsAtProxy, outcome: r.criteria.outcome, handoff: r.criteria.handoff }, null, 2))}</pre>`
    : '';
  const details = r.status === 'skipped'
    ? `<p>Skipped by the card: <code>${esc(r.skip?.cardField)}</code> — ${esc(r.skip?.reason)}</p>`
    : `<h4>Pass criteria (written before the run)</h4>${criteria}` +
      (r.failures.length ? `<h4>Failures</h4><ul class="failures">${r.failures.map((f) => `<li>${esc(f)}</li>`).join('')}</ul>` : '') +
      `<h4>Attempts</h4>${timeline(r)}` +
      (r.handoffPackets.length ? `<h4>Handoff</h4>${r.handoffPackets.map((p) => `<p><b>${esc(p.reason)}</b>: ${esc(p.explanation)}</p><p>Safe next actions: ${p.safeNextActions.map((a) => `${esc(a.action)}${a.safe ? '' : ' (not safe)'}`).join(', ')}</p>`).join('')}` : '') +
      `<p class="muted">Receipt: <code>${esc(r.receiptFile)}</code></p>`;
  return `<tr class="${cls}" data-operation="${esc(r.operation)}" data-scenario="${esc(r.scenario)}">` +
    `<td>${esc(adapter)}</td><td>${esc(r.drill)}</td><td><code>${esc(r.operation)}</code></td><td>${esc(r.title)}</td>` +
    `<td class="num">${o ? o.providerRecords : '—'}</td><td class="num">${o ? o.attemptsAtProxy : '—'}</td>` +
    `<td>${o ? esc([...new Set(o.outcomes)].join(', ')) : '—'}</td><td class="status">${esc(r.status)}</td></tr>` +
    `<tr class="details"><td colspan="8"><details><summary>${esc(r.operation)} · ${esc(r.scenario)}</summary>${details}</details></td></tr>`;
}

/** A self-contained HTML page (no external resources): summary, then every scenario with its attempt timeline. */
export function renderHtmlReport(input: HtmlReportInput): string {
  const t = input.totals;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>retrysafe drill report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1c1c1c}
h1{margin:0 0 .25rem}.muted{color:#666;font-size:12px}
table{border-collapse:collapse;width:100%;margin-top:1rem}
th,td{border-bottom:1px solid #e3e3e3;padding:4px 8px;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.passed td.status{color:#2e7d32;font-weight:600}tr.failed td.status{color:#c62828;font-weight:700}tr.skipped td.status{color:#a67c00}
tr.details td{border-bottom:2px solid #ccc;background:#fafafa}
.totals span{display:inline-block;margin-right:1rem;font-weight:600}
svg.timeline text{font-size:11px;font-family:ui-monospace,monospace}
pre{background:#f4f4f4;padding:6px;overflow:auto}
</style></head>
<body>
<h1>retrysafe duplicate-execution drill</h1>
<p class="muted">Generated ${esc(input.generatedAt)} · seed ${input.seed} · loopback sandboxes only · times are the drill's virtual clock</p>
<p class="totals" id="totals"><span class="passed">${t.passed} passed</span><span class="failed">${t.failed} failed</span><span class="skipped">${t.skipped} skipped</span></p>
<table id="results"><thead><tr><th>adapter</th><th>drill</th><th>operation</th><th>scenario</th><th>records</th><th>attempts</th><th>outcome</th><th>result</th></tr></thead>
<tbody>
${input.results.map(({ adapter, result }) => resultRow(adapter, result)).join('\n')}
</tbody></table>
</body></html>
`;
}
