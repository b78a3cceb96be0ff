import type { CountCriterion, ScenarioResult } from '@retrysafe/testkit';

export interface HtmlReportInput {
  readonly generatedAt: string;
  readonly seed: number;
  readonly durationMs?: number;
  readonly totals: { readonly passed: number; readonly failed: number; readonly skipped: number };
  readonly problems?: readonly string[];
  readonly results: readonly { readonly adapter: string; readonly result: ScenarioResult }[];
}

const esc = (s: unknown) =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const OUTCOME_COLOR: Readonly<Record<string, string>> = {
  succeeded: '#2e7d32',
  replayed: '#558b2f',
  found: '#689f38',
  'in-progress': '#f9a825',
  'not-applied': '#ef6c00',
  unknown: '#6a1b9a',
  'cannot-tell': '#8e24aa',
  'not-found': '#546e7a',
  rejected: '#c62828',
};
const NO_OUTCOME = '#90a4ae';

const count = (c: CountCriterion) => ('exact' in c ? `= ${c.exact}` : c.min ? `${c.min}–${c.max}` : `≤ ${c.max}`);
const anchor = (r: ScenarioResult) => `r-${r.drill}-${r.operation}-${r.scenario}`.replace(/[^A-Za-z0-9_-]+/g, '_');

function niceStep(span: number): number {
  const raw = span / 6;
  const pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  return [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw) ?? pow * 10;
}

const ms = (t: number) => (t >= 10_000 ? `${(t / 1000).toFixed(t % 1000 ? 1 : 0)} s` : `${Math.round(t)} ms`);

/**
 * One operation's runner receipts on a time axis (the drill's clock: virtual, so backoff and
 * Retry-After waits show at their real length without costing wall time). One lane per receipt, in
 * order: dispatches, resends, lookups, polls; the gap before a lane is the wait the runner chose.
 */
function timeline(r: ScenarioResult): string {
  const receipts = r.runnerReceipts;
  if (receipts.length === 0) return '<p class="muted">The runner made no provider call (nothing to draw).</p>';
  const starts = receipts.map((x) => Date.parse(x.startedAt));
  const ends = receipts.map((x) => Date.parse(x.finishedAt));
  const t0 = Math.min(...starts);
  const waitEnds = receipts.map((x, i) => ends[i]! + (x.decision.delayMs ?? 0));
  const span = Math.max(Math.max(...ends, ...waitEnds.slice(0, -1)) - t0, 1);
  const width = 980;
  const left = 170;
  const right = 330;
  const lane = 24;
  const top = 22;
  const plot = width - left - right;
  const x = (t: number) => left + ((t - t0) / span) * plot;
  const step = niceStep(span);
  const ticks: string[] = [];
  for (let t = 0; t <= span + 1e-9; t += step) {
    const tx = x(t0 + t).toFixed(1);
    ticks.push(`<line x1="${tx}" x2="${tx}" y1="${top - 4}" y2="${top + receipts.length * lane}" class="grid"></line><text x="${tx}" y="12" text-anchor="middle" class="tick">+${esc(ms(t))}</text>`);
  }
  const lanes = receipts.map((rc, i) => {
    const s = starts[i]!;
    const e = ends[i]!;
    const y = top + i * lane + 3;
    const fill = OUTCOME_COLOR[rc.outcome ?? ''] ?? NO_OUTCOME;
    const bx = x(s);
    const bw = Math.max(4, x(e) - bx);
    const tip = `#${rc.seq} ${rc.kind} at +${s - t0} ms (${e - s} ms): ${rc.outcome ?? 'no outcome'} → ${rc.decision.action}: ${rc.decision.reason}${rc.status ? ` · HTTP ${rc.status}` : ''}${rc.code ? ` · ${rc.code}` : ''}${rc.decision.delayMs ? ` · wait ${rc.decision.delayMs} ms` : ''}`;
    const decision = `${rc.decision.action}${rc.decision.delayMs ? ` (wait ${ms(rc.decision.delayMs)})` : ''}`;
    return (
      `<g class="attempt" data-seq="${rc.seq}" data-kind="${esc(rc.kind)}" data-outcome="${esc(rc.outcome ?? '')}" data-at-ms="${s - t0}"><title>${esc(tip)}</title>` +
      `<text x="4" y="${y + 13}">#${rc.seq} ${esc(rc.kind)}${rc.status ? ` · ${rc.status}` : ''}</text>` +
      `<rect x="${bx.toFixed(1)}" y="${y}" width="${bw.toFixed(1)}" height="16" rx="3" fill="${fill}"></rect>` +
      // the wait the runner chose after this attempt (backoff, Retry-After, poll interval), as a dashed tail
      (rc.decision.delayMs ? `<line class="wait" x1="${(bx + bw).toFixed(1)}" x2="${Math.min(x(e + rc.decision.delayMs), width - right).toFixed(1)}" y1="${y + 8}" y2="${y + 8}"></line>` : '') +
      `<text x="${(width - right + 8).toFixed(1)}" y="${y + 13}">${esc(rc.outcome ?? '—')} → ${esc(decision)}</text></g>`
    );
  });
  const height = top + receipts.length * lane + 6;
  return `<svg class="timeline" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="timeline of ${receipts.length} runner receipts">${ticks.join('')}${lanes.join('')}</svg>`;
}

/** What reached the provider (through the fault proxy), in arrival order. */
function wire(r: ScenarioResult): string {
  if (r.proxyRequests.length === 0) return '<p class="muted">No request reached the fault proxy.</p>';
  const fault = (f: unknown) => (typeof f === 'string' ? f : typeof f === 'object' && f !== null ? [(f as { kind?: string }).kind, (f as { status?: number }).status, (f as { ms?: number }).ms ? `${(f as { ms: number }).ms} ms` : undefined].filter(Boolean).join(' ') : String(f));
  const keyOf = (h: Readonly<Record<string, string>>) => Object.entries(h).map(([k, v]) => `${k}: ${v}`).join(', ') || '—';
  return (
    '<table class="wire"><thead><tr><th>#</th><th>during</th><th>request</th><th>key headers</th><th>fault</th><th>provider answered</th></tr></thead><tbody>' +
    r.proxyRequests
      .map((p) => `<tr><td class="num">${p.n}</td><td>${esc(p.phase)}</td><td><code>${esc(p.method)} ${esc(p.path)}</code></td><td><code>${esc(keyOf(p.headers))}</code></td><td>${esc(fault(p.fault))}</td><td>${p.forwarded ? (p.upstreamStatus ? `HTTP ${p.upstreamStatus}` : 'forwarded') : 'not forwarded'}</td></tr>`)
      .join('') +
    '</tbody></table>'
  );
}

function details(r: ScenarioResult): string {
  if (r.status === 'skipped') return `<p>Skipped by the card: <code>${esc(r.skip?.cardField)}</code> — ${esc(r.skip?.reason)}</p><p class="muted">Receipt: <code>${esc(r.receiptFile)}</code></p>`;
  const c = r.criteria;
  const o = r.observed;
  const parts: string[] = [];
  if (r.failures.length) parts.push(`<h4>Failures</h4><ul class="failures">${r.failures.map((f) => `<li>${esc(f)}</li>`).join('')}</ul>`);
  if (c) {
    parts.push(
      '<h4>Pass criteria (from the card, written before the run) and what was observed</h4><table class="criteria"><thead><tr><th></th><th>expected</th><th>observed</th></tr></thead><tbody>' +
        `<tr><td>provider records</td><td>= ${c.providerRecords}</td><td>${o ? o.providerRecords : '—'}</td></tr>` +
        `<tr><td>attempts at the provider</td><td>${esc(count(c.attemptsAtProxy))}</td><td>${o ? o.attemptsAtProxy : '—'}</td></tr>` +
        `<tr><td>outcome</td><td>${esc(c.outcome.join(' or '))}</td><td>${o ? esc([...new Set(o.outcomes)].join(', ')) : '—'}</td></tr>` +
        `<tr><td>handoff packet</td><td>${c.handoff === 'with-outcome' ? 'exactly when handed off' : c.handoff ? 'yes' : 'no'}</td><td>${o ? o.handoffs : '—'}</td></tr>` +
        `<tr><td>requests per execute call</td><td>≤ 1 (SDK retries off)</td><td>${o ? o.maxRequestsInOneExecute : '—'}</td></tr>` +
        (c.minWaitMs !== undefined ? `<tr><td>wait before the next attempt</td><td>≥ ${c.minWaitMs} ms</td><td>${o?.waitedMs ?? '—'} ms</td></tr>` : '') +
        `</tbody></table><ul class="why">${c.why.map((w) => `<li>${esc(w)}</li>`).join('')}</ul>`,
    );
  }
  parts.push(`<h4>Timeline of the runner's attempts</h4>${timeline(r)}`);
  parts.push(`<h4>On the wire</h4>${wire(r)}`);
  for (const p of r.handoffPackets) {
    parts.push(
      `<h4>Handoff packet</h4><p><b>${esc(p.reason)}</b>: ${esc(p.explanation)}</p><ul>${p.safeNextActions.map((a) => `<li>${a.safe ? '✓' : '✗'} <b>${esc(a.action)}</b>: ${esc(a.why)}</li>`).join('')}</ul>`,
    );
  }
  if (r.notes.length) parts.push(`<h4>Notes</h4><ul>${r.notes.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>`);
  parts.push(`<p class="muted">Receipt: <code>${esc(r.receiptFile)}</code></p>`);
  return parts.join('');
}

function resultRow(adapter: string, r: ScenarioResult): string {
  const o = r.observed;
  const c = r.criteria;
  const cell = (obs: number | undefined, exp: string | undefined) => (obs === undefined ? '—' : `${obs}${exp ? ` <span class="muted">(${esc(exp)})</span>` : ''}`);
  return (
    `<tr id="${anchor(r)}" class="result ${r.status}" data-adapter="${esc(adapter)}" data-drill="${esc(r.drill)}" data-operation="${esc(r.operation)}" data-scenario="${esc(r.scenario)}" data-status="${r.status}">` +
    `<td>${esc(r.drill)}</td><td><code>${esc(r.operation)}</code></td><td title="${esc(r.title)}">${esc(r.scenario)}</td>` +
    `<td class="num records">${cell(o?.providerRecords, c ? `= ${c.providerRecords}` : undefined)}</td>` +
    `<td class="num attempts">${cell(o?.attemptsAtProxy, c ? count(c.attemptsAtProxy) : undefined)}</td>` +
    `<td>${o ? esc([...new Set(o.outcomes)].join(', ')) : r.skip ? `<span class="muted">card: ${esc(r.skip.cardField)}</span>` : '—'}</td>` +
    `<td class="num">${o ? o.handoffs : '—'}</td><td class="status">${r.status === 'failed' ? 'FAIL' : r.status === 'passed' ? 'pass' : 'skip'}</td></tr>` +
    `<tr class="details"><td colspan="8"><details${r.status === 'failed' ? ' open' : ''}><summary>${esc(r.drill)} · ${esc(r.operation)} · ${esc(r.title)}</summary>${details(r)}</details></td></tr>`
  );
}

/** Scenario columns × operation rows: the whole drill at a glance, each cell linking to its details. */
function matrix(results: HtmlReportInput['results']): string {
  const scenarios = [...new Set(results.map(({ result }) => result.scenario))];
  const ops = [...new Set(results.map(({ result }) => `${result.drill} ${result.operation}`))];
  const byKey = new Map(results.map(({ result }) => [`${result.drill} ${result.operation} ${result.scenario}`, result]));
  const head = `<tr><th>drill · operation</th>${scenarios.map((s) => `<th class="rot"><span>${esc(s)}</span></th>`).join('')}</tr>`;
  const body = ops
    .map((op) => {
      const [drill, operation] = op.split(' ');
      return `<tr><td>${esc(drill)} · <code>${esc(operation)}</code></td>${scenarios
        .map((s) => {
          const r = byKey.get(`${op} ${s}`);
          if (!r) return '<td></td>';
          const sym = r.status === 'passed' ? '✓' : r.status === 'failed' ? '✗' : '–';
          return `<td class="cell ${r.status}"><a href="#${anchor(r)}" title="${esc(`${r.scenario}: ${r.status}`)}">${sym}</a></td>`;
        })
        .join('')}</tr>`;
    })
    .join('');
  return `<table id="matrix"><thead>${head}</thead><tbody>${body}</tbody></table>`;
}

function legend(): string {
  return `<p class="legend">${Object.entries(OUTCOME_COLOR)
    .map(([k, c]) => `<span><i style="background:${c}"></i>${esc(k)}</span>`)
    .join('')}<span><i style="background:${NO_OUTCOME}"></i>no outcome (resolve, recover)</span></p>`;
}

/** A self-contained HTML page (no scripts, no external resources): totals, a matrix, then every scenario with its criteria, timeline and wire log. */
export function renderHtmlReport(input: HtmlReportInput): string {
  const t = input.totals;
  const problems = input.problems ?? [];
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>retrysafe drill report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1c1c1c;max-width:1200px}
h1{margin:0 0 .25rem}h2{margin-top:2rem}h4{margin:.9rem 0 .3rem}.muted{color:#666;font-size:12px}
table{border-collapse:collapse;margin-top:.5rem}
#results{width:100%}
th,td{border-bottom:1px solid #e3e3e3;padding:4px 8px;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.passed td.status{color:#2e7d32;font-weight:600}tr.failed td.status{color:#c62828;font-weight:700}tr.skipped td.status{color:#a67c00}
tr.failed td{background:#fdecea}
tr.details td{border-bottom:2px solid #ccc;background:#fafafa}
details summary{cursor:pointer;color:#333}
.totals span{display:inline-block;margin-right:1.2rem;font-weight:600;font-size:16px}
.totals .passed{color:#2e7d32}.totals .failed{color:#c62828}.totals .skipped{color:#a67c00}
#matrix td.cell{text-align:center;width:1.6rem}#matrix td.cell a{text-decoration:none;color:inherit;display:block}
#matrix td.passed{background:#e8f5e9;color:#2e7d32}#matrix td.failed{background:#ffcdd2;color:#b71c1c;font-weight:700}#matrix td.skipped{background:#fff8e1;color:#a67c00}
#matrix th.rot{height:9rem;white-space:nowrap;vertical-align:bottom}#matrix th.rot span{writing-mode:vertical-rl;transform:rotate(180deg)}
svg.timeline{max-width:100%;height:auto}svg.timeline text{font-size:11px;font-family:ui-monospace,monospace}
svg.timeline .tick{fill:#777;font-size:10px}svg.timeline .grid{stroke:#e6e6e6}svg.timeline .wait{stroke:#999;stroke-width:1.5;stroke-dasharray:4 3}
table.wire td,table.criteria td{font-size:12px}
.legend span{display:inline-block;margin-right:.9rem;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}
ul.failures{color:#b71c1c}.problems{color:#b71c1c}
</style></head>
<body>
<h1>retrysafe duplicate-execution drill</h1>
<p class="muted">Generated ${esc(input.generatedAt)} · seed ${input.seed}${input.durationMs !== undefined ? ` · ran ${esc(ms(input.durationMs))} wall time` : ''} · loopback sandboxes only, never live systems · attempt times are the drill's virtual clock</p>
<p class="totals" id="totals" data-passed="${t.passed}" data-failed="${t.failed}" data-skipped="${t.skipped}"><span class="passed">${t.passed} passed</span><span class="failed">${t.failed} failed</span><span class="skipped">${t.skipped} skipped</span></p>
${problems.length ? `<ul class="problems" id="problems">${problems.map((p) => `<li>${esc(p)}</li>`).join('')}</ul>` : ''}
<p>Each scenario drives one business operation through a fault (a lost response, a reset, a delay past the timeout, 429s, concurrent duplicates…) and checks, against criteria computed from the operation's retry safety card before the run, that the provider holds exactly the records it should and that only the runner retried.</p>
<h2>At a glance</h2>
${matrix(input.results)}
<h2>Scenarios</h2>
${legend()}
<table id="results"><thead><tr><th>drill</th><th>operation</th><th>scenario</th><th>records</th><th>attempts</th><th>outcome</th><th>handoffs</th><th>result</th></tr></thead>
<tbody>
${input.results.map(({ adapter, result }) => resultRow(adapter, result)).join('\n')}
</tbody></table>
</body></html>
`;
}
