import type { CountCriterion } from '@retrysafe/testkit';
import { humanMs, paint, table, escapeXml as xml } from '../../output.js';
import type { DrillCommandReport, DrillRow } from './index.js';

export const statusMark = (status: DrillRow['status'], color: boolean) =>
  paint(MARK_COLORS[status], MARKS[status], color);
export const MARKS = { passed: 'pass', failed: 'FAIL', skipped: 'skip' } as const;
const MARK_COLORS = { passed: 'green', failed: 'red', skipped: 'yellow' } as const;

export const count = (rows: readonly Pick<DrillRow, 'status'>[]) => ({
  passed: rows.filter((r) => r.status === 'passed').length,
  failed: rows.filter((r) => r.status === 'failed').length,
  skipped: rows.filter((r) => r.status === 'skipped').length,
});

/** `=1`, `≤4`, `2–4`, `≥1`: a count criterion in a table cell. */
export function showCount(c: CountCriterion): string {
  if ('exact' in c) return `=${c.exact}`;
  if (c.min !== undefined && c.min > 0) return c.min === c.max ? `=${c.max}` : `${c.min}–${c.max}`;
  return `≤${c.max}`;
}

/** Per-drill count lines and totals; the scenario table too when something failed (failing rows only) or `details`. */
export function drillText(report: DrillCommandReport, color = false, details = false): string {
  if (details) return `${drillTable(report, color)}\n\n${footer(report, color)}`;
  const failing = report.rows.filter((r) => r.status === 'failed');
  const summary = table(
    ['adapter', 'operation', 'passed', 'failed', 'skipped', 'result'],
    [...Map.groupBy(report.rows, (r) => `${r.drill}\u0000${r.operation}`).values()].map((rows) => {
      const n = count(rows);
      return [
        rows[0]!.drill,
        rows[0]!.operation,
        ...(['passed', 'failed', 'skipped'] as const).map((s) => String(n[s])),
        statusMark(n.failed ? 'failed' : n.passed ? 'passed' : 'skipped', color),
      ];
    }),
    { right: [2, 3, 4] },
  );
  const parts = [summary, '', paint('dim', `scenarios: ${report.scenarios.join(', ')}`, color)];
  if (failing.length) parts.push('', drillTable({ ...report, rows: failing }, color));
  parts.push('', footer(report, color));
  if (!failing.length) parts.push(paint('dim', 'every row: retrysafe drill --details, or the report', color));
  return parts.join('\n');
}

function footer(report: DrillCommandReport, color: boolean): string {
  const t = report.totals;
  const totals = `${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`;
  return [
    ...report.problems.map((p) => `${paint('red', '✗', color)} ${p}`),
    `${paint(t.failed || report.problems.length ? 'red' : 'green', totals, color)} (${t.scenarios} scenario runs in ${humanMs(report.durationMs)}, seed ${report.seed})`,
    `receipts: ${report.outDir}`,
    `report:   ${report.html}`,
  ].join('\n');
}

/** The full table: one line per scenario × operation, observed count next to what the card made the drill expect. */
function drillTable(report: DrillCommandReport, color: boolean): string {
  const group = (i: number) => `${report.rows[i]!.drill} ${report.rows[i]!.operation}`;
  const breaks = report.rows.map((_, i) => i).filter((i) => i > 0 && group(i) !== group(i - 1));
  const body = table(
    ['adapter', 'operation', 'scenario', 'records', 'attempts', 'outcome', 'handoffs', 'result'],
    report.rows.map((r) => {
      const vs = (observed: number | null, expected: string | null) =>
        observed === null ? '—' : `${observed}${expected ? paint('dim', ` (${expected})`, color) : ''}`;
      return [
        r.drill,
        r.operation,
        r.scenario,
        vs(r.providerRecords, r.expected && `=${r.expected.providerRecords}`),
        vs(r.attemptsAtProxy, r.expected && showCount(r.expected.attemptsAtProxy)),
        r.outcome ?? (r.skip ? paint('dim', `card: ${r.skip.cardField}`, color) : '—'),
        r.handoffs === null ? '—' : String(r.handoffs),
        statusMark(r.status, color),
      ];
    }),
    { right: [3, 4, 6], breaks },
  );
  const lines = [body, ''];
  if (report.rows.some((r) => r.expected))
    lines.push(
      paint('dim', 'records / attempts: observed (expected from the card, written before the run)', color),
      '',
    );
  const failed = report.rows.filter((r) => r.status === 'failed');
  if (failed.length) {
    lines.push(paint('red', 'Failures:', color));
    for (const r of failed) for (const f of r.failures) lines.push(`  ${f}`);
    lines.push('');
  }
  return lines.join('\n').trimEnd();
}

/** JUnit XML (one testsuite per drill, one testcase per operation × scenario) for CI test views. */
export function drillJunit(report: DrillCommandReport): string {
  const t = report.totals;
  const secs = (ms: number) => (ms / 1000).toFixed(3);
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="retrysafe drill" tests="${t.scenarios}" failures="${t.failed}" skipped="${t.skipped}" errors="${report.problems.length}" time="${secs(report.durationMs)}">`,
  ];
  for (const [drill, rows] of Map.groupBy(report.rows, (r) => r.drill)) {
    const n = count(rows);
    out.push(
      `  <testsuite name="${xml(drill)}" tests="${rows.length}" failures="${n.failed}" skipped="${n.skipped}" errors="0" time="${secs(rows.reduce((a, r) => a + r.durationMs, 0))}">`,
    );
    for (const r of rows) {
      const open = `    <testcase classname="${xml(`${drill}.${r.operation}`)}" name="${xml(`${r.scenario}: ${r.title}`)}" time="${secs(r.durationMs)}"`;
      if (r.status === 'passed') out.push(`${open}/>`);
      else
        out.push(
          `${open}>`,
          r.status === 'skipped'
            ? `      <skipped message="${xml(r.skip ? `card ${r.skip.cardField}: ${r.skip.reason}` : 'skipped')}"/>`
            : `      <failure message="${xml(r.failures[0] ?? 'failed')}" type="drill">${xml(r.failures.join('\n'))}</failure>\n      <system-out>${xml(`receipts: ${r.receiptFile}`)}</system-out>`,
          '    </testcase>',
        );
    }
    out.push('  </testsuite>');
  }
  if (report.problems.length) {
    out.push(
      `  <testsuite name="setup" tests="${report.problems.length}" failures="0" skipped="0" errors="${report.problems.length}">`,
    );
    for (const p of report.problems)
      out.push(
        `    <testcase classname="setup" name="${xml(p)}">`,
        `      <error message="${xml(p)}"/>`,
        '    </testcase>',
      );
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return out.join('\n') + '\n';
}
