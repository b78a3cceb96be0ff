import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ScenarioResult } from '@retrysafe/testkit';
import { defineCommand, type Options, type Parsed } from '../../command.js';
import { InterruptedError, pickKnown, UsageError, wanted } from '../../errors.js';
import { writeText } from '../../files.js';
import { createProgress, humanMs, paint, pick, useColor } from '../../output.js';
import { ADAPTER_OPTIONS, type AdapterEntry, loadAdapters } from '../../registry.js';
import { renderHtmlReport } from '../../report/html.js';
import { count, drillJunit, drillText, statusMark } from './text.js';

export const DRILL_OPTIONS = {
  ...ADAPTER_OPTIONS,
  scenario: { argument: '<id>', parse: 'list', description: 'only this scenario' },
  operation: { argument: '<name>', parse: 'list', description: 'only this operation, e.g. customers.create' },
  seed: { argument: '<n>', parse: 'integer', default: 1, description: 'seed of the runner jitter' },
  out: {
    argument: '<dir>',
    default: '.drill',
    description: 'where receipts, drill.json, junit.xml and report.html go',
  },
  details: {
    description:
      'print every scenario × operation in the text report (default: a summary, and the failing rows when something fails)',
  },
  reporter: {
    argument: '<name>',
    choices: ['text', 'junit'],
    description: 'text (default) or junit (JUnit XML on stdout; always written to <out>/junit.xml); not with --json',
  },
  json: { description: 'print the report as JSON (progress still goes to stderr on a terminal)' },
} as const satisfies Options;

/** `signal` stops the drill before its next scenario; its temporary ledgers are removed and it throws InterruptedError. */
export type DrillCommandOptions = Partial<Parsed<typeof DRILL_OPTIONS>> & { readonly signal?: AbortSignal };

export type DrillRow = ReturnType<typeof toRow>;
export type DrillCommandReport = Awaited<ReturnType<typeof drillCommand>>;

const operationsOf = (drill: AdapterEntry['drills'][number], only: readonly string[] | undefined) =>
  Object.keys(drill.operations).filter((op) => wanted(only, op));

// The flat count fields repeat `observed` for easy reading; `durationMs` is wall time (the drill runs on a virtual clock).
function toRow(adapter: string, r: ScenarioResult, durationMs: number) {
  const o = r.observed;
  const c = r.criteria;
  return {
    adapter,
    ...pick(r, 'drill', 'operation', 'scenario', 'title', 'status'),
    providerRecords: o?.providerRecords ?? null,
    attemptsAtProxy: o?.attemptsAtProxy ?? null,
    outcome: o ? [...new Set(o.outcomes)].join('|') : null,
    handoffs: o?.handoffs ?? null,
    expected: c ? pick(c, 'providerRecords', 'attemptsAtProxy', 'outcome', 'handoff') : null,
    observed: o
      ? {
          ...pick(o, 'providerRecords', 'attemptsAtProxy', 'lookupCalls', 'outcomes', 'handoffs', 'handoffReasons'),
          requestsAtProxy: o.requests.total,
          waitedMs: o.waitedMs ?? null,
        }
      : null,
    skip: r.skip ? pick(r.skip, 'cardField', 'reason') : null,
    ...pick(r, 'failures', 'failedCriteria', 'receiptFile'),
    durationMs,
  };
}

/** `retrysafe drill`: every selected adapter's drill, with receipts, drill.json, junit.xml and report.html in `--out`. */
export async function drillCommand(
  opts: DrillCommandOptions,
  progressSink: { readonly write: (text: string) => void; readonly tty: boolean } | null,
) {
  // One report on stdout: JSON, JUnit XML, or the text one --details widens.
  if (opts.json && (opts.reporter || opts.details))
    throw new UsageError(
      `--${opts.reporter ? 'reporter' : 'details'}: not with --json (the report as JSON holds every row)`,
    );
  if (opts.details && opts.reporter === 'junit')
    throw new UsageError('--details widens the text report: not with --reporter junit (every row is a testcase)');
  // Loaded here, not at start: its fault proxy's HTTP server is only needed by a drill.
  const { createDrillContext, disposeDrillContext, runScenario, SCENARIOS, writeSummary } = await import(
    '@retrysafe/testkit'
  );
  const scenarios = opts.scenario?.length ? pickKnown('scenario', SCENARIOS, opts.scenario) : [...SCENARIOS];
  const seed = opts.seed ?? 1;
  if (!Number.isSafeInteger(seed) || seed < 0)
    throw new UsageError(`--seed must be a non-negative integer, got ${String(opts.seed)}`);
  const entries = await loadAdapters(opts.adapter, opts.module, opts.config);
  const problems = entries.filter((e) => e.missing).map((e) => `${e.name}: ${e.missing}`);
  // Nothing to drill in one adapter is bad input even beside others: skipped, it would leave their green alone.
  const idle = entries.flatMap((e) =>
    e.drills.filter((d) => !Object.keys(d.operations).length).map((d) => `${e.from} (drill setup '${d.name}')`),
  );
  if (idle.length > 0)
    throw new UsageError(`nothing to drill in ${idle.join(', ')}: every drill setup needs an operation`);
  const drills = entries.flatMap((e) => e.drills);
  pickKnown('operation', [...new Set(drills.flatMap((d) => Object.keys(d.operations)))], opts.operation ?? []);
  const planned = drills.reduce((n, d) => n + operationsOf(d, opts.operation).length * scenarios.length, 0);
  const outDir = resolve(opts.out ?? '.drill');
  mkdirSync(outDir, { recursive: true });

  // progress colour follows the same rule as stdout: a terminal, and never under NO_COLOR
  const color = progressSink?.tty === true && useColor(true);
  const progress = progressSink ? createProgress(planned, progressSink.write, progressSink.tty, color) : null;
  const results: { adapter: string; result: ScenarioResult; durationMs: number }[] = [];
  const started = Date.now();
  for (const p of problems) progress?.note(`${paint('red', '✗', color)} ${p}`);

  for (const entry of entries) {
    for (const drill of entry.drills) {
      const ops = operationsOf(drill, opts.operation);
      if (ops.length === 0) continue;
      const ctx = createDrillContext({ ...drill, seed, outDir: join(outDir, drill.name) });
      const drillStarted = Date.now();
      try {
        for (const [operation, scenario] of ops.flatMap((op) => scenarios.map((s) => [op, s] as const))) {
          if (opts.signal?.aborted)
            throw new InterruptedError(
              `the drill was interrupted; its temporary ledgers are removed (receipts so far: ${outDir})`,
            );
          progress?.start(`${drill.name} ${operation} · ${scenario}`);
          const t0 = Date.now();
          const r = await runScenario(ctx, operation, scenario);
          results.push({ adapter: entry.name, result: r, durationMs: Date.now() - t0 });
          // failure sentences already name the drill, operation and scenario
          const text =
            r.status === 'failed'
              ? r.failures.join('; ')
              : `${drill.name} ${operation} ${scenario}${r.status === 'skipped' && r.skip ? paint('dim', ` (card: ${r.skip.cardField})`, color) : ''}`;
          progress?.done(`${statusMark(r.status, color)} ${text}`, r.status === 'failed');
        }
        const s = writeSummary(ctx);
        progress?.note(
          `${s.failed ? paint('red', '✗', color) : s.passed ? paint('green', '✓', color) : statusMark('skipped', color)} ${drill.name}: ${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped in ${humanMs(Date.now() - drillStarted)}`,
        );
      } finally {
        disposeDrillContext(ctx);
      }
    }
  }
  progress?.end();
  const durationMs = Date.now() - started;
  const rows = results.map((x) => toRow(x.adapter, x.result, x.durationMs));
  const totals = { scenarios: rows.length, ...count(rows) };
  // A run that tested nothing is no green (a card may skip a scenario; not every one of them).
  if (totals.failed === 0 && totals.passed === 0)
    problems.push('every scenario was skipped by the cards: nothing was drilled');
  const adapters = entries.map((e) => ({
    name: e.name,
    from: e.from,
    drills: e.drills.map((d) => d.name),
    operations: [...new Set(e.drills.flatMap((d) => operationsOf(d, opts.operation)))],
    missing: e.missing,
  }));
  const html = join(outDir, 'report.html');
  writeText(
    html,
    renderHtmlReport({ generatedAt: new Date().toISOString(), seed, durationMs, totals, problems, results }),
  );
  const report = {
    ok: totals.failed === 0 && problems.length === 0,
    outDir,
    html,
    seed,
    scenarios,
    durationMs,
    totals,
    adapters,
    problems, // outside any one scenario (an adapter without drill setups)
    rows,
  };
  writeText(join(outDir, 'drill.json'), JSON.stringify(report, null, 2) + '\n');
  writeText(join(outDir, 'junit.xml'), drillJunit(report));
  return report;
}

export const drill = defineCommand({
  name: 'drill',
  description: 'run the duplicate-execution drill against the loopback sandboxes (never live systems)',
  options: DRILL_OPTIONS,
  async run({ io, print, color, errTTY }, o) {
    const machine = o.json || o.reporter === 'junit';
    const sink =
      !machine || errTTY
        ? { write: (t: string) => (errTTY ? process.stderr.write(t) : io.err(t.replace(/\n$/, ''))), tty: errTTY }
        : null;
    // Ctrl-C: say so, finish the scenario in flight and remove the temporary ledgers (a second Ctrl-C stops at once).
    const abort = new AbortController();
    const interrupt = () => {
      io.err(
        '\nretrysafe: interrupted: stopping after the current scenario and removing the temporary ledgers (Ctrl-C again to stop at once)',
      );
      abort.abort();
    };
    process.once('SIGINT', interrupt);
    const report = await drillCommand({ ...o, signal: abort.signal }, sink).finally(() =>
      process.off('SIGINT', interrupt),
    );
    const text = () => (o.reporter === 'junit' ? drillJunit(report) : drillText(report, color, o.details === true));
    return print(o, report, text, report.ok);
  },
});
