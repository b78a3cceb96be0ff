import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  createDrillContext,
  disposeDrillContext,
  runScenario,
  SCENARIOS,
  writeSummary,
  type CountCriterion,
  type DrillOutcome,
  type ScenarioId,
  type ScenarioResult,
} from '@retrysafe/testkit';
import { loadAdapters, UsageError, type AdapterEntry } from '../registry.js';
import { createProgress, humanMs, paint, table, useColor } from '../output.js';
import { renderHtmlReport } from '../report/html.js';

export interface DrillCommandOptions {
  readonly adapter?: string[];
  /** Files of your own exporting `drills` (a new adapter); with no --adapter, only these. */
  readonly module?: string[];
  readonly scenario?: string[];
  readonly operation?: string[];
  readonly seed?: number;
  readonly out?: string;
  /** A retrysafe config whose `type: http` adapters are drilled against their pattern sandboxes. */
  readonly config?: string;
}

/** What the drill expected, computed from the card before the run. */
export interface DrillExpected {
  readonly providerRecords: number;
  readonly attemptsAtProxy: CountCriterion;
  readonly outcome: readonly DrillOutcome[];
  readonly handoff: boolean | 'with-outcome';
}

/** What the drill saw. */
export interface DrillObserved {
  readonly providerRecords: number;
  readonly attemptsAtProxy: number;
  readonly requestsAtProxy: number;
  readonly lookupCalls: number;
  readonly outcomes: readonly DrillOutcome[];
  readonly handoffs: number;
  readonly handoffReasons: readonly string[];
  readonly waitedMs: number | null;
}

/** One scenario × operation. The flat count fields repeat `observed` for easy reading (null when skipped). */
export interface DrillRow {
  readonly adapter: string;
  readonly drill: string;
  readonly operation: string;
  readonly scenario: ScenarioId;
  readonly title: string;
  readonly status: ScenarioResult['status'];
  readonly providerRecords: number | null;
  readonly attemptsAtProxy: number | null;
  readonly outcome: string | null;
  readonly handoffs: number | null;
  readonly expected: DrillExpected | null;
  readonly observed: DrillObserved | null;
  readonly skip: { readonly cardField: string; readonly reason: string } | null;
  readonly failures: readonly string[];
  readonly receiptFile: string;
  /** Wall time of the scenario (the drill itself runs on a virtual clock). */
  readonly durationMs: number;
}

export interface DrillAdapterSummary {
  readonly name: string;
  readonly from: string;
  readonly drills: readonly string[];
  readonly operations: readonly string[];
  /** Set when the package offers no drill setup: the drill counts that as a failure. */
  readonly missing: string | null;
}

export interface DrillCommandReport {
  readonly ok: boolean;
  readonly outDir: string;
  readonly html: string;
  readonly seed: number;
  readonly scenarios: readonly ScenarioId[];
  readonly durationMs: number;
  readonly totals: { readonly scenarios: number; readonly passed: number; readonly failed: number; readonly skipped: number };
  readonly adapters: readonly DrillAdapterSummary[];
  /** Problems outside any one scenario (an adapter without drill setups, an unknown --operation). */
  readonly problems: readonly string[];
  readonly rows: readonly DrillRow[];
}

export interface DrillProgressSink {
  readonly write: (text: string) => void;
  readonly tty: boolean;
}

function parseScenarios(wanted: readonly string[] | undefined): ScenarioId[] {
  if (!wanted?.length) return [...SCENARIOS];
  const unknown = wanted.filter((s) => !(SCENARIOS as readonly string[]).includes(s));
  if (unknown.length) throw new UsageError(`unknown scenario ${unknown.map((s) => `'${s}'`).join(', ')} (known: ${SCENARIOS.join(', ')})`);
  return SCENARIOS.filter((s) => wanted.includes(s));
}

function operationsOf(entry: AdapterEntry, wanted: readonly string[] | undefined): { drill: AdapterEntry['drills'][number]; operation: string }[] {
  const out: { drill: AdapterEntry['drills'][number]; operation: string }[] = [];
  for (const drill of entry.drills) for (const operation of Object.keys(drill.operations)) if (!wanted?.length || wanted.includes(operation)) out.push({ drill, operation });
  return out;
}

function toRow(adapter: string, r: ScenarioResult, durationMs: number): DrillRow {
  const o = r.observed;
  const c = r.criteria;
  return {
    adapter,
    drill: r.drill,
    operation: r.operation,
    scenario: r.scenario,
    title: r.title,
    status: r.status,
    providerRecords: o?.providerRecords ?? null,
    attemptsAtProxy: o?.attemptsAtProxy ?? null,
    outcome: o ? [...new Set(o.outcomes)].join('|') : null,
    handoffs: o?.handoffs ?? null,
    expected: c ? { providerRecords: c.providerRecords, attemptsAtProxy: c.attemptsAtProxy, outcome: c.outcome, handoff: c.handoff } : null,
    observed: o
      ? {
          providerRecords: o.providerRecords,
          attemptsAtProxy: o.attemptsAtProxy,
          requestsAtProxy: o.requests.total,
          lookupCalls: o.lookupCalls,
          outcomes: o.outcomes,
          handoffs: o.handoffs,
          handoffReasons: o.handoffReasons,
          waitedMs: o.waitedMs ?? null,
        }
      : null,
    skip: r.skip ? { cardField: r.skip.cardField, reason: r.skip.reason } : null,
    failures: r.failures,
    receiptFile: r.receiptFile,
    durationMs,
  };
}

/**
 * `retrysafe drill`: the conformance drill of every (selected) adapter against its loopback sandboxes,
 * scenario by scenario, with receipts (one JSON per scenario × operation, `summary.json` per drill),
 * `drill.json` and a self-contained `report.html` in `--out`.
 */
export async function drillCommand(opts: DrillCommandOptions, progressSink: DrillProgressSink | null): Promise<DrillCommandReport> {
  const scenarios = parseScenarios(opts.scenario);
  const seed = opts.seed ?? 1;
  if (!Number.isSafeInteger(seed) || seed < 0) throw new UsageError(`--seed must be a non-negative integer, got ${String(opts.seed)}`);
  const entries = await loadAdapters(opts.adapter, opts.module, opts.config);
  const problems: string[] = [];
  for (const e of entries) if (e.missing) problems.push(`${e.name}: ${e.missing}`);
  if (opts.operation?.length) {
    const known = new Set(entries.flatMap((e) => operationsOf(e, undefined).map((x) => x.operation)));
    const unknown = opts.operation.filter((op) => !known.has(op));
    if (unknown.length) throw new UsageError(`unknown operation ${unknown.map((o) => `'${o}'`).join(', ')} for the selected adapters (known: ${[...known].join(', ')})`);
  }
  const outDir = resolve(opts.out ?? '.drill');
  mkdirSync(outDir, { recursive: true });

  const planned = entries.reduce((n, e) => n + operationsOf(e, opts.operation).length * scenarios.length, 0);
  const progress = progressSink ? createProgress(planned, progressSink.write, progressSink.tty) : null;
  // progress colour follows the same rule as stdout: a terminal, and never under NO_COLOR
  const color = (progressSink?.tty ?? false) && useColor({ isTTY: true });
  const rows: DrillRow[] = [];
  const results: { adapter: string; result: ScenarioResult }[] = [];
  const started = Date.now();
  for (const e of entries) if (e.missing) progress?.note(`${paint('red', '✗', color)} ${e.name}: ${e.missing}`);

  for (const entry of entries) {
    for (const drill of entry.drills) {
      const ops = operationsOf({ ...entry, drills: [drill] }, opts.operation);
      if (ops.length === 0) continue;
      const ctx = createDrillContext({ ...drill, seed, outDir: join(outDir, drill.name) });
      const drillStarted = Date.now();
      try {
        for (const { operation } of ops) {
          for (const scenario of scenarios) {
            progress?.start(`${drill.name} ${operation} · ${scenario}`);
            const t0 = Date.now();
            const r = await runScenario(ctx, operation, scenario);
            const row = toRow(entry.name, r, Date.now() - t0);
            rows.push(row);
            results.push({ adapter: entry.name, result: r });
            const mark = r.status === 'passed' ? paint('green', 'pass', color) : r.status === 'failed' ? paint('red', 'FAIL', color) : paint('yellow', 'skip', color);
            // failure sentences already name the drill, operation and scenario
            const text = r.status === 'failed' ? r.failures.join('; ') : `${drill.name} ${operation} ${scenario}${r.status === 'skipped' && r.skip ? paint('dim', ` (card: ${r.skip.cardField})`, color) : ''}`;
            progress?.done(`${mark} ${text}`, r.status === 'failed');
          }
        }
        const s = writeSummary(ctx);
        progress?.note(`${s.failed ? paint('red', '✗', color) : paint('green', '✓', color)} ${drill.name}: ${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped in ${humanMs(Date.now() - drillStarted)}`);
      } finally {
        disposeDrillContext(ctx);
      }
    }
  }
  progress?.end();
  const durationMs = Date.now() - started;
  const totals = {
    scenarios: rows.length,
    passed: rows.filter((r) => r.status === 'passed').length,
    failed: rows.filter((r) => r.status === 'failed').length,
    skipped: rows.filter((r) => r.status === 'skipped').length,
  };
  const adapters: DrillAdapterSummary[] = entries.map((e) => ({
    name: e.name,
    from: e.from,
    drills: e.drills.map((d) => d.name),
    operations: [...new Set(operationsOf(e, opts.operation).map((x) => x.operation))],
    missing: e.missing,
  }));
  const html = join(outDir, 'report.html');
  const generatedAt = new Date().toISOString();
  writeFileSync(html, renderHtmlReport({ generatedAt, seed, durationMs, totals, problems, results }));
  const report: DrillCommandReport = { ok: totals.failed === 0 && problems.length === 0, outDir, html, seed, scenarios, durationMs, totals, adapters, problems, rows };
  writeFileSync(join(outDir, 'drill.json'), JSON.stringify(report, null, 2) + '\n');
  writeFileSync(join(outDir, 'junit.xml'), drillJunit(report));
  return report;
}

/** `=1`, `≤4`, `2–4`, `≥1`: a count criterion in a table cell. */
export function showCount(c: CountCriterion): string {
  if ('exact' in c) return `=${c.exact}`;
  if (c.min !== undefined && c.min > 0) return c.min === c.max ? `=${c.max}` : `${c.min}–${c.max}`;
  return `≤${c.max}`;
}

/**
 * What `retrysafe drill` prints. A passing drill: one line per drill and operation with its counts,
 * then the totals. A failing drill, or `details`: the table of every scenario × operation as well
 * (failing ones only, unless `details`).
 */
export function drillText(report: DrillCommandReport, color = false, details = false): string {
  if (details) return drillTable(report, color);
  const failing = report.rows.filter((r) => r.status === 'failed');
  const groups = new Map<string, DrillRow[]>();
  for (const r of report.rows) groups.set(`${r.drill}\u0000${r.operation}`, [...(groups.get(`${r.drill}\u0000${r.operation}`) ?? []), r]);
  const summary = table(
    ['adapter', 'operation', 'passed', 'failed', 'skipped', 'result'],
    [...groups.values()].map((rows) => {
      const n = (s: DrillRow['status']) => rows.filter((r) => r.status === s).length;
      return [rows[0]!.drill, rows[0]!.operation, String(n('passed')), String(n('failed')), String(n('skipped')), n('failed') ? paint('red', 'FAIL', color) : paint('green', 'pass', color)];
    }),
    { right: [2, 3, 4] },
  );
  const parts = [summary, '', paint('dim', `scenarios: ${report.scenarios.join(', ')}`, color)];
  if (failing.length) parts.push('', drillTable({ ...report, rows: failing }, color, false));
  parts.push('', footer(report, color));
  if (!failing.length) parts.push(paint('dim', 'every row: retrysafe drill --details, or the report', color));
  return parts.join('\n');
}

function footer(report: DrillCommandReport, color: boolean): string {
  const t = report.totals;
  const lines: string[] = [];
  for (const p of report.problems) lines.push(`${paint('red', '✗', color)} ${p}`);
  lines.push(
    `${paint(t.failed || report.problems.length ? 'red' : 'green', `${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`, color)} (${t.scenarios} scenario runs in ${humanMs(report.durationMs)}, seed ${report.seed})`,
    `receipts: ${report.outDir}`,
    `report:   ${report.html}`,
  );
  return lines.join('\n');
}

/** The full table: one line per scenario × operation, observed count next to what the card made the drill expect. */
export function drillTable(report: DrillCommandReport, color = false, withFooter = true): string {
  const breaks: number[] = [];
  report.rows.forEach((r, i) => {
    const prev = report.rows[i - 1];
    if (prev && (prev.drill !== r.drill || prev.operation !== r.operation)) breaks.push(i);
  });
  const body = table(
    ['adapter', 'operation', 'scenario', 'records', 'attempts', 'outcome', 'handoffs', 'result'],
    report.rows.map((r) => {
      const e = r.expected;
      const result = r.status === 'passed' ? paint('green', 'pass', color) : r.status === 'failed' ? paint('red', 'FAIL', color) : paint('yellow', 'skip', color);
      return [
        r.drill,
        r.operation,
        r.scenario,
        r.providerRecords === null ? '—' : `${r.providerRecords}${e ? paint('dim', ` (=${e.providerRecords})`, color) : ''}`,
        r.attemptsAtProxy === null ? '—' : `${r.attemptsAtProxy}${e ? paint('dim', ` (${showCount(e.attemptsAtProxy)})`, color) : ''}`,
        r.outcome ?? (r.skip ? paint('dim', `card: ${r.skip.cardField}`, color) : '—'),
        r.handoffs === null ? '—' : String(r.handoffs),
        result,
      ];
    }),
    { right: [3, 4, 6], breaks },
  );
  const lines = [body, ''];
  if (report.rows.some((r) => r.expected)) lines.push(paint('dim', 'records / attempts: observed (expected from the card, written before the run)', color), '');
  const failed = report.rows.filter((r) => r.status === 'failed');
  if (failed.length) {
    lines.push(paint('red', 'Failures:', color));
    for (const r of failed) for (const f of r.failures) lines.push(`  ${f}`);
    lines.push('');
  }
  if (withFooter) lines.push(footer(report, color));
  return lines.join('\n').trimEnd();
}

const xml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!).replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '');

/** JUnit XML (one testsuite per drill, one testcase per operation × scenario) for CI test views. */
export function drillJunit(report: DrillCommandReport): string {
  const suites = new Map<string, DrillRow[]>();
  for (const r of report.rows) suites.set(r.drill, [...(suites.get(r.drill) ?? []), r]);
  const t = report.totals;
  const secs = (ms: number) => (ms / 1000).toFixed(3);
  const out = ['<?xml version="1.0" encoding="UTF-8"?>', `<testsuites name="retrysafe drill" tests="${t.scenarios}" failures="${t.failed}" skipped="${t.skipped}" errors="${report.problems.length}" time="${secs(report.durationMs)}">`];
  for (const [drill, rows] of suites) {
    const n = (s: DrillRow['status']) => rows.filter((r) => r.status === s).length;
    out.push(`  <testsuite name="${xml(drill)}" tests="${rows.length}" failures="${n('failed')}" skipped="${n('skipped')}" errors="0" time="${secs(rows.reduce((a, r) => a + r.durationMs, 0))}">`);
    for (const r of rows) {
      const open = `    <testcase classname="${xml(`${drill}.${r.operation}`)}" name="${xml(`${r.scenario}: ${r.title}`)}" time="${secs(r.durationMs)}"`;
      if (r.status === 'passed') out.push(`${open}/>`);
      else if (r.status === 'skipped') out.push(`${open}>`, `      <skipped message="${xml(r.skip ? `card ${r.skip.cardField}: ${r.skip.reason}` : 'skipped')}"/>`, '    </testcase>');
      else out.push(`${open}>`, `      <failure message="${xml(r.failures[0] ?? 'failed')}" type="drill">${xml(r.failures.join('\n'))}</failure>`, `      <system-out>${xml(`receipts: ${r.receiptFile}`)}</system-out>`, '    </testcase>');
    }
    out.push('  </testsuite>');
  }
  if (report.problems.length) {
    out.push(`  <testsuite name="setup" tests="${report.problems.length}" failures="0" skipped="0" errors="${report.problems.length}">`);
    for (const p of report.problems) out.push(`    <testcase classname="setup" name="${xml(p)}">`, `      <error message="${xml(p)}"/>`, '    </testcase>');
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return out.join('\n') + '\n';
}
