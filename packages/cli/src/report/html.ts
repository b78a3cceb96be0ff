import { readFileSync } from 'node:fs';
import type { CriterionName, ScenarioResult } from '@retrysafe/testkit';
import { count, MARKS, showCount } from '../commands/drill/text.js';
import { escapeXml as esc, humanMs as ms } from '../output.js';

export interface HtmlReportInput {
  readonly generatedAt: string;
  readonly seed: number;
  readonly durationMs?: number;
  readonly totals: { readonly passed: number; readonly failed: number; readonly skipped: number };
  readonly problems?: readonly string[];
  readonly results: readonly { readonly adapter: string; readonly result: ScenarioResult }[];
}

/** A list of items already escaped. */
const ul = (items: readonly string[], attrs = '') => `<ul${attrs}>${items.map((i) => `<li>${i}</li>`).join('')}</ul>`;

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

const slug = (s: string) => s.replace(/[^A-Za-z0-9_-]+/g, '_');
const anchor = (r: ScenarioResult) => slug(`r-${r.drill}-${r.operation}-${r.scenario}`);

function niceStep(span: number): number {
  const raw = span / 6;
  const pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  return [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw) ?? pow * 10;
}

type Wire = ScenarioResult['proxyRequests'][number];
type RunnerReceipt = ScenarioResult['runnerReceipts'][number];
/** The receipt each request on the wire belongs to, by request number; 'died' for a crashed worker's request. */
type Tie = Map<number, RunnerReceipt | 'died'>;

// The k-th `execute#k` request is the k-th dispatch/resend receipt, counted from the end (a crashed worker left calls
// but no receipts); a lookup request goes to the lookup/poll receipt when there is exactly one.
function tieWireToReceipts(r: ScenarioResult): Tie {
  const sends = r.runnerReceipts.filter((x) => x.kind === 'dispatch' || x.kind === 'resend');
  const looks = r.runnerReceipts.filter((x) => x.kind === 'lookup' || x.kind === 'poll');
  const callOf = (p: Wire) => Number(/^execute#(\d+)$/.exec(p.label ?? '')?.[1] ?? 0);
  const offset = Math.max(0, Math.max(0, ...r.proxyRequests.map(callOf)) - sends.length);
  const byRequest: Tie = new Map();
  for (const p of r.proxyRequests) {
    const k = callOf(p);
    let rc: RunnerReceipt | 'died' | undefined;
    if (k) rc = k <= offset ? 'died' : sends[k - offset - 1];
    else if (p.label === 'lookup' && looks.length === 1) rc = looks[0];
    if (rc) byRequest.set(p.n, rc);
  }
  return byRequest;
}

const laneId = (r: ScenarioResult, seq: number | 'died') => `${anchor(r)}-a${seq}`;

/** One lane per receipt on the drill's virtual clock; the gap before a lane is the wait the runner chose. */
function timeline(r: ScenarioResult, byRequest: Tie): string {
  const receipts = r.runnerReceipts;
  // Requests whose worker died before writing a receipt (the crash scenario): drawn as their own lanes, first.
  const died = r.proxyRequests.filter((p) => byRequest.get(p.n) === 'died');
  if (receipts.length === 0 && died.length === 0)
    return '<p class="muted">The runner made no provider call (nothing to draw).</p>';
  if (receipts.length === 0)
    return `<p class="crash">✝ The worker died after sending ${died.length} request(s); no receipt was written and nothing recovered it.</p>`;
  const starts = receipts.map((x) => Date.parse(x.startedAt));
  const ends = receipts.map((x) => Date.parse(x.finishedAt));
  const t0 = Math.min(...starts);
  const waitEnds = receipts.map((x, i) => ends[i]! + (x.decision.delayMs ?? 0));
  const span = Math.max(Math.max(...ends, ...waitEnds.slice(0, -1)) - t0, 1);
  const [width, left, right, lane] = [980, 170, 330, 24];
  const top = 22 + died.length * lane;
  const plot = width - left - right;
  const x = (t: number) => left + ((t - t0) / span) * plot;
  const step = niceStep(span);
  const ticks: string[] = [];
  for (let t = 0; t <= span + 1e-9; t += step) {
    const tx = x(t0 + t).toFixed(1);
    ticks.push(
      `<line x1="${tx}" x2="${tx}" y1="${top - 4}" y2="${top + receipts.length * lane}" class="grid"></line><text x="${tx}" y="12" text-anchor="middle" class="tick">+${esc(ms(t))}</text>`,
    );
  }
  const crashLanes = died.map((p, i) => {
    const y = 22 + i * lane + 3;
    const tip = `wire #${p.n}: ${p.method} ${p.path} — sent by a worker that died before it recorded the outcome (no receipt); the provider ${p.forwarded ? (p.upstreamStatus ? `answered HTTP ${p.upstreamStatus}` : 'got it') : 'never got it'}`;
    return (
      `<g class="crash" id="${laneId(r, 'died')}-${p.n}"><title>${esc(tip)}</title>` +
      `<text x="4" y="${y + 13}">✝ dispatch · wire #${p.n}</text>` +
      `<rect x="${left}" y="${y}" width="6" height="16" rx="1" class="crash-bar"></rect>` +
      `<line class="crash-cut" x1="${left + 10}" x2="${left + plot}" y1="${y + 8}" y2="${y + 8}"></line>` +
      `<text x="${(width - right + 8).toFixed(1)}" y="${y + 13}">worker died: no receipt → recover()</text></g>`
    );
  });
  const lanes = receipts.map((rc, i) => {
    const s = starts[i]!;
    const e = ends[i]!;
    const y = top + i * lane + 3;
    const fill = OUTCOME_COLOR[rc.outcome ?? ''] ?? NO_OUTCOME;
    const bx = x(s);
    const bw = Math.max(4, x(e) - bx);
    const tip = `#${rc.seq} ${rc.kind} at +${s - t0} ms (${e - s} ms): ${rc.outcome ?? 'no outcome'} → ${rc.decision.action}: ${rc.decision.reason}${rc.status ? ` · HTTP ${rc.status}` : ''}${rc.code ? ` · ${rc.code}` : ''}${rc.decision.delayMs ? ` · wait ${rc.decision.delayMs} ms` : ''}`;
    const decision = `${rc.decision.action}${rc.decision.delayMs ? ` (wait ${ms(rc.decision.delayMs)})` : ''}`;
    const sent = [...byRequest].filter(([, x]) => x === rc).map(([n]) => n);
    return (
      `<g class="attempt" id="${laneId(r, rc.seq)}" data-seq="${rc.seq}" data-kind="${esc(rc.kind)}" data-outcome="${esc(rc.outcome ?? '')}" data-at-ms="${s - t0}" data-wire="${sent.join(' ')}"><title>${esc(tip)}${sent.length ? esc(` · on the wire: ${sent.map((n) => `#${n}`).join(', ')}`) : ''}</title>` +
      `<text x="4" y="${y + 13}">#${rc.seq} ${esc(rc.kind)}${rc.status ? ` · ${rc.status}` : ''}${sent.length ? ` · wire ${sent.map((n) => `#${n}`).join(',')}` : ''}</text>` +
      `<rect x="${bx.toFixed(1)}" y="${y}" width="${bw.toFixed(1)}" height="16" rx="3" fill="${fill}"></rect>` +
      // the wait the runner chose after this attempt (backoff, Retry-After, poll interval), as a dashed tail
      (rc.decision.delayMs
        ? `<line class="wait" x1="${(bx + bw).toFixed(1)}" x2="${Math.min(x(e + rc.decision.delayMs), width - right).toFixed(1)}" y1="${y + 8}" y2="${y + 8}"></line>`
        : '') +
      `<text x="${(width - right + 8).toFixed(1)}" y="${y + 13}">${esc(rc.outcome ?? '—')} → ${esc(decision)}</text></g>`
    );
  });
  const height = top + receipts.length * lane + 6;
  return `<svg class="timeline" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="timeline of ${receipts.length} runner receipts${died.length ? ` after a worker died` : ''}">${ticks.join('')}${crashLanes.join('')}${lanes.join('')}</svg>`;
}

/** What reached the provider (through the fault proxy), in arrival order. */
function wire(r: ScenarioResult, byRequest: Tie): string {
  if (r.proxyRequests.length === 0) return '<p class="muted">No request reached the fault proxy.</p>';
  const fault = (f: Wire['fault']) =>
    typeof f === 'string'
      ? f
      : [f.kind, 'status' in f && f.status, 'ms' in f && `${f.ms} ms`].filter(Boolean).join(' ');
  const keys = new Set(r.runnerReceipts.flatMap((x) => x.providerKey ?? []));
  /** Where the provider key travelled: a recorded header, the query string, or (the proxy keeps headers only) the body. */
  const keyOf = (p: Wire): { where: string; text: string } => {
    const headers = Object.entries(p.headers);
    if (headers.length) return { where: 'header', text: headers.map(([k, v]) => `${k}: ${v}`).join(', ') };
    const inQuery = [...keys].find((k) => p.path.includes(k) || p.path.includes(encodeURIComponent(k)));
    if (inQuery) return { where: 'query', text: `in the query: ${inQuery}` };
    const rc = byRequest.get(p.n);
    if (rc && rc !== 'died' && rc.providerKey && p.bodyBytes > 0 && p.method !== 'GET')
      return { where: 'body', text: `in the body: ${rc.providerKey}` };
    return { where: 'none', text: '—' };
  };
  const attemptOf = (p: Wire) => {
    const rc = byRequest.get(p.n);
    if (rc === 'died') return '<span class="crash">✝ died (no receipt)</span>';
    return rc ? `<a href="#${laneId(r, rc.seq)}">#${rc.seq} ${esc(rc.kind)}</a>` : '<span class="muted">—</span>';
  };
  return (
    '<table class="wire"><thead><tr><th>#</th><th>during</th><th>request</th><th>provider key</th><th>fault</th><th>provider answered</th><th>runner attempt</th></tr></thead><tbody>' +
    r.proxyRequests
      .map((p) => {
        const k = keyOf(p);
        return `<tr id="${anchor(r)}-w${p.n}"><td class="num" data-label="#">${p.n}</td><td data-label="during">${esc(p.phase)}</td><td data-label="request"><code class="url">${esc(p.method)} ${esc(p.path)}</code></td><td class="key key-${k.where}" data-key-in="${k.where}" data-label="provider key"><code>${esc(k.text)}</code></td><td data-label="fault">${esc(fault(p.fault))}</td><td data-label="provider answered">${p.forwarded ? (p.upstreamStatus ? `HTTP ${p.upstreamStatus}` : 'forwarded') : 'not forwarded'}</td><td data-label="runner attempt">${attemptOf(p)}</td></tr>`;
      })
      .join('') +
    '</tbody></table>'
  );
}

function details(r: ScenarioResult): string {
  if (r.status === 'skipped')
    return `<p>Skipped by the card: <code>${esc(r.skip?.cardField)}</code> — ${esc(r.skip?.reason)}</p><p class="muted">Receipt: <code>${esc(r.receiptFile)}</code></p>`;
  const c = r.criteria;
  const o = r.observed;
  const parts: string[] = [];
  if (r.failures.length) parts.push(`<h4>Failures</h4>${ul(r.failures.map(esc), ' class="failures"')}`);
  if (c) {
    const handoff = c.handoff === 'with-outcome' ? 'exactly when handed off' : c.handoff ? 'yes' : 'no';
    // [criterion, expected, observed, its name]: the rows the drill names in failedCriteria are marked.
    const rows: [string, unknown, unknown, CriterionName][] = [
      ['provider records', `=${c.providerRecords}`, o?.providerRecords, 'providerRecords'],
      ['attempts at the provider', showCount(c.attemptsAtProxy), o?.attemptsAtProxy, 'attemptsAtProxy'],
      ['outcome', c.outcome.join(' or '), o && [...new Set(o.outcomes)].join(', '), 'outcome'],
      ['handoff packet', handoff, o?.handoffs, 'handoff'],
      ['requests per execute call', '≤ 1 (SDK retries off)', o?.maxRequestsInOneExecute, 'oneRequestPerAttempt'],
    ];
    if (c.minWaitMs !== undefined)
      rows.push(['wait before the next attempt', `≥ ${c.minWaitMs} ms`, `${o?.waitedMs ?? '—'} ms`, 'minWaitMs']);
    const row = ([name, expected, observed, criterion]: (typeof rows)[number]) => {
      const bad = r.failedCriteria.includes(criterion);
      return `<tr class="${bad ? 'criterion-failed' : 'criterion-ok'}" data-criterion="${esc(name)}"><td>${bad ? '<b>✗</b> ' : '✓ '}${esc(name)}</td><td>${esc(expected)}</td><td>${esc(observed ?? '—')}</td></tr>`;
    };
    parts.push(
      '<h4>Pass criteria (from the card, written before the run) and what was observed</h4><table class="criteria"><thead><tr><th></th><th>expected</th><th>observed</th></tr></thead><tbody>' +
        rows.map(row).join('') +
        `</tbody></table>${ul(c.why.map(esc), ' class="why"')}`,
    );
  }
  const tie = tieWireToReceipts(r);
  parts.push(`<h4>Timeline of the runner's attempts</h4><div class="tl">${timeline(r, tie)}</div>`);
  parts.push(`<h4>On the wire</h4>${wire(r, tie)}`);
  for (const p of r.handoffPackets) {
    const actions = p.safeNextActions.map((a) => `${a.safe ? '✓' : '✗'} <b>${esc(a.action)}</b>: ${esc(a.why)}`);
    parts.push(`<h4>Handoff packet</h4><p><b>${esc(p.reason)}</b>: ${esc(p.explanation)}</p>${ul(actions)}`);
  }
  if (r.notes.length) parts.push(`<h4>Notes</h4>${ul(r.notes.map(esc))}`);
  parts.push(`<p class="muted">Receipt: <code>${esc(r.receiptFile)}</code></p>`);
  return parts.join('');
}

function resultRow(adapter: string, r: ScenarioResult): string {
  const o = r.observed;
  const c = r.criteria;
  const cell = (obs: number | undefined, exp: string | undefined) =>
    obs === undefined ? '—' : `${obs}${exp ? ` <span class="muted">(${esc(exp)})</span>` : ''}`;
  return (
    `<tr id="${anchor(r)}" class="result ${r.status}" data-adapter="${esc(adapter)}" data-drill="${esc(r.drill)}" data-operation="${esc(r.operation)}" data-scenario="${esc(r.scenario)}" data-status="${r.status}">` +
    `<td>${esc(r.drill)}</td><td><code>${esc(r.operation)}</code></td><td title="${esc(r.title)}">${esc(r.scenario)}</td>` +
    `<td class="num records">${cell(o?.providerRecords, c ? `=${c.providerRecords}` : undefined)}</td>` +
    `<td class="num attempts">${cell(o?.attemptsAtProxy, c ? showCount(c.attemptsAtProxy) : undefined)}</td>` +
    `<td>${o ? esc([...new Set(o.outcomes)].join(', ')) : r.skip ? `<span class="muted">card: ${esc(r.skip.cardField)}</span>` : '—'}</td>` +
    `<td class="num">${o ? o.handoffs : '—'}</td><td class="status">${MARKS[r.status]}</td></tr>` +
    `<tr class="details"><td colspan="8"><details${r.status === 'failed' ? ' open' : ''}><summary>${esc(r.drill)} · ${esc(r.operation)} · ${esc(r.title)}</summary>${details(r)}</details></td></tr>`
  );
}

/** Scenario columns × operation rows: the whole drill at a glance, each cell linking to its details. */
function matrix(results: HtmlReportInput['results']): string {
  const scenarios = [...new Set(results.map(({ result }) => result.scenario))];
  const ops = Map.groupBy(
    results.map((x) => x.result),
    (r) => `${esc(r.drill)} · <code>${esc(r.operation)}</code>`,
  );
  const cell = (r: ScenarioResult | undefined) =>
    r
      ? `<td class="cell ${r.status}"><a href="#${anchor(r)}" title="${esc(`${r.scenario}: ${r.status}`)}">${{ passed: '✓', failed: '✗', skipped: '–' }[r.status]}</a></td>`
      : '<td></td>';
  const head = `<tr><th>drill · operation</th>${scenarios.map((s) => `<th class="rot"><span>${esc(s)}</span></th>`).join('')}</tr>`;
  const body = [...ops].map(
    ([op, rs]) => `<tr><td>${op}</td>${scenarios.map((s) => cell(rs.find((r) => r.scenario === s))).join('')}</tr>`,
  );
  return `<table id="matrix"><thead>${head}</thead><tbody>${body.join('')}</tbody></table>`;
}

/** Filters without a script: radio inputs before the table, one CSS rule per choice hiding the rows that do not match. */
function filters(results: HtmlReportInput['results']): { html: string; css: string } {
  const counts: Record<string, number> = { all: results.length, ...count(results.map((x) => x.result)) };
  // `keep`: the rows a choice shows (none for "all", the choice checked at first)
  const statuses = ['all', 'failed', 'passed', 'skipped'].map((st) => ({
    name: 'status',
    id: `st-${st}`,
    label: `<label for="st-${st}" class="chip ${st}">${st} (${counts[st]})</label>`,
    keep: st === 'all' ? null : `.${st}`,
  }));
  const adapters = ['all', ...new Set(results.map((x) => x.adapter))].map((a) => ({
    name: 'adapter',
    id: `ad-${slug(a)}`,
    label: `<label for="ad-${slug(a)}" class="chip">${esc(a)}</label>`,
    keep: a === 'all' ? null : `[data-adapter="${a.replace(/"/g, '')}"]`,
  }));
  const choices = [...statuses, ...adapters];
  const inputs = choices.map(
    (c) => `<input type="radio" class="filter" name="${c.name}" id="${c.id}"${c.keep ? '' : ' checked'}>`,
  );
  const labels = `<div class="filters"><span>show</span>${statuses.map((c) => c.label).join('')}<span>adapter</span>${adapters.map((c) => c.label).join('')}</div>`;
  const hidden = (c: (typeof choices)[number]) => `#${c.id}:checked ~ #results tr.result:not(${c.keep})`;
  const css = [
    ...choices.filter((c) => c.keep).map((c) => `${hidden(c)}, ${hidden(c)} + tr.details{display:none}`),
    choices.map((c) => `#${c.id}:checked ~ .filters label[for="${c.id}"]`).join(',') +
      '{background:#263238;color:#fff;border-color:#263238}',
  ].join('\n');
  return { html: inputs.join('') + labels, css };
}

/** A self-contained HTML page (no scripts, no external resources): totals, a matrix, then every scenario with its criteria, timeline and wire log. */
export function renderHtmlReport(input: HtmlReportInput): string {
  const t = input.totals;
  const problems = input.problems ?? [];
  const f = filters(input.results);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>retrysafe drill report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
${readFileSync(new URL('./report.css', import.meta.url), 'utf8')}
${f.css}
</style></head>
<body>
<h1>retrysafe duplicate-execution drill</h1>
<p class="muted">Generated ${esc(input.generatedAt)} · seed ${input.seed}${input.durationMs !== undefined ? ` · ran ${esc(ms(input.durationMs))} wall time` : ''} · loopback sandboxes only, never live systems · attempt times are the drill's virtual clock</p>
<p class="totals" id="totals" data-passed="${t.passed}" data-failed="${t.failed}" data-skipped="${t.skipped}"><span class="passed">${t.passed} passed</span><span class="failed">${t.failed} failed</span><span class="skipped">${t.skipped} skipped</span></p>
${problems.length ? ul(problems.map(esc), ' class="problems" id="problems"') : ''}
<p>Each scenario drives one business operation through a fault (a lost response, a reset, a delay past the timeout, 429s, concurrent duplicates…) and checks, against criteria computed from the operation's retry safety card before the run, that the provider holds exactly the records it should and that only the runner retried.</p>
<h2>At a glance</h2>
${matrix(input.results)}
<h2>Scenarios</h2>
<p class="legend">${Object.entries(OUTCOME_COLOR)
    .map(([k, c]) => `<span><i style="background:${c}"></i>${esc(k)}</span>`)
    .join('')}<span><i style="background:${NO_OUTCOME}"></i>no outcome (resolve, recover)</span></p>
${f.html}
<table id="results"><thead><tr><th>drill</th><th>operation</th><th>scenario</th><th>records</th><th>attempts</th><th>outcome</th><th>handoffs</th><th>result</th></tr></thead>
<tbody>
${input.results.map(({ adapter, result }) => resultRow(adapter, result)).join('\n')}
</tbody></table>
</body></html>
`;
}
