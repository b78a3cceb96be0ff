import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createDrillContext, runScenario, SCENARIOS, writeSummary, type ScenarioId, type ScenarioResult } from '@retrysafe/testkit/conformance';
import { loadAdapters, selectAdapters, UsageError } from '../registry.js';
import { paint, table } from '../output.js';
import { renderHtmlReport } from '../report/html.js';

export interface DrillCommandOptions {
  readonly adapter?: string[];
  readonly scenario?: string[];
  readonly operation?: string[];
  readonly seed?: number;
  readonly out?: string;
  readonly json?: boolean;
}

export interface DrillRow {
  readonly adapter: string;
  readonly drill: string;
  readonly operation: string;
  readonly scenario: ScenarioId;
  readonly status: ScenarioResult['status'];
  readonly providerRecords: number | null;
  readonly attemptsAtProxy: number | null;
  readonly outcome: string | null;
  readonly handoffs: number | null;
  readonly skip: string | null;
  readonly failures: readonly string[];
  readonly receiptFile: string;
}

export interface DrillCommandReport {
  readonly ok: boolean;
  readonly outDir: string;
  readonly html: string;
  readonly seed: number;
  readonly totals: { readonly passed: number; readonly failed: number; readonly skipped: number };
  readonly rows: readonly DrillRow[];
}

/** `retrysafe drill`: the conformance drill of every (selected) adapter against its loopback sandboxes. */
export async function drillCommand(opts: DrillCommandOptions, log: (line: string) => void): Promise<DrillCommandReport> {
  const scenarios = (opts.scenario?.length ? opts.scenario : SCENARIOS) as ScenarioId[];
  for (const s of scenarios) if (!SCENARIOS.includes(s)) throw new UsageError(`unknown scenario '${s}' (known: ${SCENARIOS.join(', ')})`);
  const seed = opts.seed ?? 1;
  if (!Number.isInteger(seed) || seed < 0) throw new UsageError(`--seed must be a non-negative integer, got ${String(opts.seed)}`);
  const outDir = resolve(opts.out ?? '.drill');
  mkdirSync(outDir, { recursive: true });
  const adapters = selectAdapters(await loadAdapters(), opts.adapter);

  const rows: DrillRow[] = [];
  const results: { adapter: string; result: ScenarioResult }[] = [];
  const planned = adapters.reduce((n, a) => n + a.drills.reduce((m, d) => m + Object.keys(d.operations).filter((op) => !opts.operation?.length || opts.operation.includes(op)).length * scenarios.length, 0), 0);
  let done = 0;
  for (const entry of adapters) {
    for (const drill of entry.drills) {
      const ctx = createDrillContext({ ...drill, seed, outDir: join(outDir, drill.name) });
      try {
        for (const operation of Object.keys(drill.operations)) {
          if (opts.operation?.length && !opts.operation.includes(operation)) continue;
          for (const scenario of scenarios) {
            const r = await runScenario(ctx, operation, scenario);
            done += 1;
            results.push({ adapter: entry.name, result: r });
            const mark = r.status === 'passed' ? paint('green', 'pass') : r.status === 'failed' ? paint('red', 'FAIL') : paint('yellow', 'skip');
            log(`[${String(done).padStart(String(planned).length)}/${planned}] ${mark} ${drill.name} ${operation} ${scenario}${r.status === 'failed' ? ` — ${r.failures.join('; ')}` : ''}`);
            rows.push({
              adapter: entry.name,
              drill: drill.name,
              operation,
              scenario,
              status: r.status,
              providerRecords: r.observed?.providerRecords ?? null,
              attemptsAtProxy: r.observed?.attemptsAtProxy ?? null,
              outcome: r.observed ? [...new Set(r.observed.outcomes)].join('|') : null,
              handoffs: r.observed?.handoffs ?? null,
              skip: r.skip ? `${r.skip.cardField}: ${r.skip.reason}` : null,
              failures: r.failures,
              receiptFile: r.receiptFile,
            });
          }
        }
        writeSummary(ctx);
      } finally {
        rmSync(ctx.workDir, { recursive: true, force: true });
      }
    }
  }
  const totals = {
    passed: rows.filter((r) => r.status === 'passed').length,
    failed: rows.filter((r) => r.status === 'failed').length,
    skipped: rows.filter((r) => r.status === 'skipped').length,
  };
  const html = join(outDir, 'report.html');
  writeFileSync(html, renderHtmlReport({ generatedAt: new Date().toISOString(), seed, totals, results }));
  const report: DrillCommandReport = { ok: totals.failed === 0, outDir, html, seed, totals, rows };
  writeFileSync(join(outDir, 'drill.json'), JSON.stringify(report, null, 2) + '\n');
  return report;
}

export function drillTable(report: DrillCommandReport): string {
  const body = table(
    ['adapter', 'operation', 'scenario', 'records', 'attempts', 'outcome', 'result'],
    report.rows.map((r) => [
      r.drill,
      r.operation,
      r.scenario,
      r.providerRecords === null ? '—' : String(r.providerRecords),
      r.attemptsAtProxy === null ? '—' : String(r.attemptsAtProxy),
      r.outcome ?? (r.skip ? `skipped (${r.skip.split(':')[0]})` : '—'),
      r.status === 'passed' ? paint('green', 'pass') : r.status === 'failed' ? paint('red', 'FAIL') : paint('yellow', 'skip'),
    ]),
  );
  const t = report.totals;
  return `${body}\n\n${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped\nreceipts: ${report.outDir}\nreport:   ${report.html}`;
}
