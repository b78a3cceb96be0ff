import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRunner, type RunResult } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createDrillClock } from '@retrysafe/testkit';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { main } from '../src/cli.js';
import { renderHtmlReport } from '../src/report/html.js';
import { type Fault, type FaultySandbox, startFaultySandbox } from './faulty-sandbox.js';
import { ANSI, cli, cliJson, lyingDrill, REPO, tempDir } from './helpers.js';

// Five operations, one second apart on the drill clock: R1..R3 rejected (handed off, resume not safe),
// L lost (handed off after lookups, resume safe), P passed.
const dir = tempDir('fixes');
const db = join(dir, 'retrysafe.db');
const config = join(dir, 'retrysafe.json');
let sandbox: FaultySandbox;
const order: string[] = [];
const byName = {} as Record<'R1' | 'R2' | 'R3' | 'L' | 'P', string>;

beforeAll(async () => {
  sandbox = await startFaultySandbox('reject');
  const clock = createDrillClock(Date.UTC(2026, 10, 1));
  const ledger = createSqliteLedger({ path: db });
  const runner = createRunner({ ledger, clock });
  const run = async (name: keyof typeof byName, fault: Fault): Promise<RunResult> => {
    sandbox.setFault(fault);
    clock.advance(60_000);
    const r = await runner.run(sandbox.adapter, 'records.create', { params: { ref: `order-${name}`, amount: 5 } });
    order.push(r.businessOperationId);
    byName[name] = r.businessOperationId;
    return r;
  };
  for (const n of ['R1', 'R2'] as const) expect((await run(n, 'reject')).status).toBe('handed-off');
  expect((await run('L', 'lose')).status).toBe('handed-off');
  expect((await run('R3', 'reject')).status).toBe('handed-off');
  expect((await run('P', 'pass')).status).toBe('done');
  sandbox.setFault('pass');
  await ledger.close();
  sandbox.writeConfig(config, db);
}, 120_000);

describe('ledger ls (fails on main: it listed oldest first and --limit kept the oldest)', () => {
  it('lists newest first, and --limit keeps the newest', async () => {
    const all = await cliJson(['ledger', 'ls', '--db', db], dir);
    expect(all.body.map((r: { businessOperationId: string }) => r.businessOperationId)).toEqual([...order].reverse());
    const two = await cliJson(['ledger', 'ls', '--db', db, '--limit', '2'], dir);
    expect(two.body.map((r: { businessOperationId: string }) => r.businessOperationId)).toEqual([byName.P, byName.R3]);
    const text = await cli(['ledger', 'ls', '--db', db, '--limit', '1'], { cwd: dir });
    expect(text.stdout).toContain(byName.P);
    expect(text.stdout).not.toContain(byName.R1);
  });
});

describe('--config takes a JavaScript config too (loadConfigFile)', () => {
  it('ledger ls --config retrysafe.config.mjs reads its ledger', async () => {
    const file = join(dir, 'retrysafe.config.mjs');
    writeFileSync(
      file,
      `export default ${JSON.stringify({ ledger: db, adapters: { sandbox: { baseUrl: 'http://127.0.0.1:9' } } })};\n`,
    );
    const r = await cliJson(['ledger', 'ls', '--config', file, '--limit', '1'], dir);
    expect(r.code).toBe(0);
    expect(r.body.map((x: { businessOperationId: string }) => x.businessOperationId)).toEqual([byName.P]);
  });
});

describe('ledger resolve-all: bulk resolution with filters and a dry run (new)', () => {
  it('--dry-run lists what would be done and changes nothing; an action the packet marks not safe is refused', async () => {
    const before = sandbox.proxy.requests.length;
    const dry = await cliJson(
      ['ledger', 'resolve-all', '--db', db, '--abandon', '--reason', 'rejected', '--dry-run'],
      dir,
    );
    expect(dry.code).toBe(0);
    expect(dry.body).toMatchObject({ dryRun: true, action: 'abandon', matched: 3, ok: true });
    expect(dry.body.rows.map((r: { businessOperationId: string }) => r.businessOperationId).sort()).toEqual(
      [byName.R1, byName.R2, byName.R3].sort(),
    );
    expect(
      dry.body.rows.every((r: { plan: string; result: unknown }) => r.plan === 'abandon' && r.result === null),
    ).toBe(true);
    const text = await cli(['ledger', 'resolve-all', '--db', db, '--abandon', '--reason', 'rejected', '--dry-run'], {
      cwd: dir,
    });
    expect(text.stdout).toContain(
      'Dry run: 3 of 3 handed-off operations would be abandoned; nothing was sent or written.',
    );
    // resume of a rejected request is not safe: refused, reported, exit 1 — still nothing sent (a resume, dry or not,
    // needs the config naming the adapters)
    const refused = await cliJson(
      ['ledger', 'resolve-all', '--db', db, '--config', config, '--resume', '--reason', 'rejected', '--dry-run'],
      dir,
    );
    expect(refused.code).toBe(1);
    expect(refused.body.rows.every((r: { plan: string }) => r.plan === 'refused')).toBe(true);
    const handoffs = await cliJson(['ledger', 'handoffs', '--db', db], dir);
    expect(handoffs.body).toHaveLength(4);
    expect(sandbox.proxy.requests.length).toBe(before);
  });

  it('abandons exactly the filtered operations, with who did it in each receipt', async () => {
    const r = await cliJson(
      [
        'ledger',
        'resolve-all',
        '--db',
        db,
        '--abandon',
        '--reason',
        'rejected',
        '--id',
        `${byName.R1},${byName.R2}`,
        '--by',
        'bulk-ops',
      ],
      dir,
    );
    expect(r.code).toBe(0);
    expect(r.body.rows.map((x: { result: { state: string } }) => x.result.state)).toEqual(['abandoned', 'abandoned']);
    const left = await cliJson(['ledger', 'handoffs', '--db', db], dir);
    expect(left.body.map((x: { businessOperationId: string }) => x.businessOperationId).sort()).toEqual(
      [byName.L, byName.R3].sort(),
    );
    // Stored as given; `show` pseudonymises it unless asked (issue 18).
    const shown = await cliJson(['ledger', 'show', byName.R1, '--db', db, '--show-by'], dir);
    expect(shown.body.record.resolution).toMatchObject({ action: 'abandon', by: 'bulk-ops' });
    const masked = await cliJson(['ledger', 'show', byName.R1, '--db', db], dir);
    expect(masked.body.record.resolution.by).toMatch(/^person#[0-9a-f]{12}$/);
    const none = await cli(['ledger', 'resolve-all', '--db', db, '--abandon', '--operation', 'nobody.nothing'], {
      cwd: dir,
    });
    expect(none.code).toBe(0);
    expect(none.stdout).toContain('No handed-off operation matches');
    const markDone = await cli(['ledger', 'resolve-all', '--db', db, '--mark-done', 'x'], { cwd: dir });
    expect(markDone.code).toBe(2);
  });
});

describe('ledger resolve --resume --by (fails on main: the resume receipt did not say who)', () => {
  it('records the person in the resume receipt, as the pseudonym docs/security.md promises, never the name', async () => {
    const r = await cliJson(['ledger', 'resolve', byName.L, '--resume', '--config', config, '--by', 'alice'], dir);
    expect(r.code).toBe(0);
    expect(r.body).toMatchObject({ status: 'done' });
    const shown = await cliJson(['ledger', 'show', byName.L, '--db', db], dir);
    const resume = shown.body.receipts.find(
      (x: { kind: string; decision: { action: string } }) => x.kind === 'resolve' && x.decision.action === 'resume',
    );
    const alice = `person#${createHash('sha256').update('alice').digest('hex').slice(0, 12)}`;
    expect(resume.decision.reason).toContain(alice);
    expect(JSON.stringify(shown.body.receipts)).not.toContain('alice');
  });
});

describe('file-system errors (fails on main: a stack trace and exit 1)', () => {
  it('print one line and exit 2', async () => {
    const file = join(tempDir('fs'), 'a-file');
    writeFileSync(file, 'x');
    const r = await cli(['drill', '--adapter', 'sandbox', '--scenario', 'permanent-error', '--out', join(file, 'sub')]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      `retrysafe: cannot mkdir ${join(file, 'sub')}: a part of the path is a file, not a directory (ENOTDIR)`,
    ]);
    const j = await cli([
      'drill',
      '--adapter',
      'sandbox',
      '--scenario',
      'permanent-error',
      '--out',
      join(file, 'sub'),
      '--json',
    ]);
    expect(JSON.parse(j.stdout).error.code).toBe('FILE_SYSTEM');
  });
});

describe('drill output', () => {
  // One failing drill, read by the tests of its text and of its files (neither writes into its folder).
  const lyingOut = tempDir('lying');
  let lying: ReturnType<typeof lyingDrill> | undefined;
  const lyingRun = () => (lying ??= lyingDrill(lyingOut));

  it('a passing drill prints a summary, not a row per scenario; --details prints every row (fails on main: every row, always)', async () => {
    const out = tempDir('summary');
    const r = await cli(['drill', '--adapter', 'sandbox', '--scenario', 'lost-response,permanent-error', '--out', out]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/sandbox-replaying\s+records\.create\s+2\s+0\s+0\s+pass/);
    expect(r.stdout).toContain('scenarios: lost-response, permanent-error');
    expect(r.stdout).not.toMatch(/records\.create\s+lost-response/); // no per-scenario row
    const d = await cli([
      'drill',
      '--adapter',
      'sandbox',
      '--scenario',
      'lost-response,permanent-error',
      '--out',
      out,
      '--details',
    ]);
    expect(d.stdout).toMatch(/sandbox-replaying\s+records\.create\s+lost-response\s+1/);
  });

  it('a failing drill shows the failing rows and why, without the passing ones', async () => {
    const r = await lyingRun();
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/lying-sandbox\s+records\.create\s+lost-response\s+2/);
    expect(r.stdout).not.toMatch(/records\.create\s+permanent-error/);
    expect(r.stdout).toContain('lost-response: providerRecords expected 1, observed 2');
    expect(r.stdout).toContain('1 passed, 1 failed, 0 skipped');
  });

  it('drill.json and the report name the failed criteria the drill found, not a reading of its sentences', async () => {
    const out = lyingOut;
    expect((await lyingRun()).code).toBe(1);
    const rows = JSON.parse(readFileSync(join(out, 'drill.json'), 'utf8')).rows;
    const lost = rows.find((r: { scenario: string }) => r.scenario === 'lost-response');
    expect(lost.failedCriteria).toContain('providerRecords');
    expect(rows.find((r: { scenario: string }) => r.scenario === 'permanent-error').failedCriteria).toEqual([]);
    const marked = (html: string) => html.match(/(?<=class="criterion-failed" data-criterion=")[^"]+/g);
    expect(marked(readFileSync(join(out, 'report.html'), 'utf8'))).toContain('provider records');
    // A handoff of the wrong reason: a criterion whose sentence no pattern of the report's own named.
    const result = {
      ...JSON.parse(readFileSync(lost.receiptFile, 'utf8')),
      failures: ['lying-sandbox records.create lost-response: handoff reason expected rejected, observed unknown'],
      failedCriteria: ['handoff'],
    };
    const totals = { passed: 0, failed: 1, skipped: 0 };
    const html = renderHtmlReport({
      generatedAt: '2026-12-01T08:00:00.000Z',
      seed: 1,
      totals,
      results: [{ adapter: 'lying', result }],
    });
    expect(marked(html)).toEqual(['handoff packet']);
  });

  it('--reporter junit prints JUnit XML (one testcase per scenario × operation, failures with the reason) and writes junit.xml (new)', async () => {
    const out = tempDir('junit');
    const r = await lyingDrill(out, ['--reporter', 'junit']);
    expect(r.code).toBe(1);
    expect(
      r.stdout.startsWith(
        '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="retrysafe drill" tests="2" failures="1" skipped="0"',
      ),
    ).toBe(true);
    expect(r.stdout.match(/<testcase /g)).toHaveLength(2);
    expect(r.stdout).toMatch(
      /<testcase classname="lying-sandbox\.records\.create" name="lost-response: [^"]+" time="[\d.]+">\n\s+<failure message="[^"]*providerRecords expected 1, observed 2/,
    );
    expect(r.stdout).toMatch(
      /<testcase classname="lying-sandbox\.records\.create" name="permanent-error: [^"]+" time="[\d.]+"\/>/,
    );
    expect(r.stdout).toContain('</testsuites>');
    expect(readFileSync(join(out, 'junit.xml'), 'utf8')).toBe(r.stdout);
  });

  it('progress lines on a terminal carry no colour under NO_COLOR (fails on main)', async () => {
    const written: string[] = [];
    const spy = vi
      .spyOn(process.stderr, 'write')
      .mockImplementation((chunk: string | Uint8Array) => (written.push(String(chunk)), true));
    const prev = { NO_COLOR: process.env.NO_COLOR, FORCE_COLOR: process.env.FORCE_COLOR };
    process.env.NO_COLOR = '1';
    delete process.env.FORCE_COLOR;
    try {
      const code = await main(
        ['drill', '--adapter', 'sandbox', '--scenario', 'permanent-error', '--out', tempDir('tty')],
        { out: () => {}, err: (t) => written.push(t), errIsTTY: true, color: false },
      );
      expect(code).toBe(0);
    } finally {
      spy.mockRestore();
      if (prev.NO_COLOR === undefined) delete process.env.NO_COLOR;
      else process.env.NO_COLOR = prev.NO_COLOR;
      if (prev.FORCE_COLOR !== undefined) process.env.FORCE_COLOR = prev.FORCE_COLOR;
    }
    const text = written.join('');
    expect(text).toContain('sandbox-replaying: 1 passed');
    expect(text).not.toMatch(ANSI);
  });
});

describe('retrysafe drill --config: an HTTP API declared in YAML, drilled against its pattern sandboxes (new)', () => {
  const example = join(REPO, 'packages/config/examples/http-api/retrysafe.yaml');

  it('drills every declared operation against the sandbox of its pattern', async () => {
    const r = await cli(['drill', '--config', example, '--out', tempDir('config-drill'), '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.adapters.map((a: { drills: string[] }) => a.drills)).toEqual([
      ['acme--ietf-idempotency-key', 'acme--async-request-reply', 'acme--etag', 'acme--client-token'],
    ]);
    expect(report.totals.failed).toBe(0);
    const lost = report.rows.filter((x: { scenario: string }) => x.scenario === 'lost-response');
    expect(lost.map((x: { operation: string; providerRecords: number }) => [x.operation, x.providerRecords])).toEqual([
      ['orders.create', 1],
      ['exports.create', 1],
      ['documents.update', 1],
      ['instances.run', 1],
    ]);
    // docs/declaring-an-http-api.md shows this drill's table and totals: they must be this run's.
    const page = readFileSync(join(REPO, 'docs/declaring-an-http-api.md'), 'utf8');
    const shown = /\$ npx retrysafe drill --config retrysafe\.yaml\n([\s\S]*?)```/.exec(page)![1]!;
    const counted = report.adapters[0].drills.map((drill: string) => {
      const of = report.rows.filter((x: { drill: string }) => x.drill === drill);
      const n = (s: string) => of.filter((x: { status: string }) => x.status === s).length;
      return `${drill} ${of[0].operation} ${n('passed')} ${n('failed')} ${n('skipped')} pass`;
    });
    const rows = shown.split('\n').filter((l) => l.startsWith('acme--'));
    expect(rows.map((l) => l.split(/\s+/).join(' '))).toEqual(counted);
    const { scenarios, passed, failed, skipped } = report.totals;
    expect(shown).toContain(`${passed} passed, ${failed} failed, ${skipped} skipped (${scenarios} scenario runs in `);
  });

  it('catches a declaration mistake: a body that drops the reference the lookup searches by duplicates the order once the key has expired', async () => {
    const d = tempDir('config-bad');
    const raw = parseYaml(readFileSync(example, 'utf8')) as {
      adapters: { acme: { operations: Record<string, Record<string, unknown>> } };
    };
    const op = raw.adapters.acme.operations['orders.create']!;
    op.body = { customer: '{customer}', sku: '{sku}', quantity: '{quantity}' };
    for (const o of Object.values(raw.adapters.acme.operations))
      o.card = join(REPO, 'packages/config/examples/http-api', String(o.card));
    // The example card leaves the late-apply bound unknown, so a lookup miss never proves absence and the
    // runner hands off instead: declare the sandbox's bound (it applies a request as it arrives) so the
    // mistake shows as what it is in an API that does state its bound.
    const card = parseYaml(readFileSync(String(op.card), 'utf8')) as {
      lookup: Record<string, unknown>;
      unverified: { field: string }[];
    };
    card.lookup.lateApplyBound = { value: '1s', source: 'test: the loopback sandbox applies a request as it arrives' };
    card.unverified = card.unverified.filter((u) => u.field !== 'lookup.lateApplyBound');
    op.card = join(d, 'orders.card.yaml');
    writeFileSync(String(op.card), toYaml(card));
    writeFileSync(join(d, 'bad.yaml'), toYaml(raw));
    const r = await cli([
      'drill',
      '--config',
      join(d, 'bad.yaml'),
      '--operation',
      'orders.create',
      '--scenario',
      'key-past-retention',
      '--out',
      join(d, 'out'),
      '--json',
    ]);
    expect(r.code).toBe(1);
    const row = JSON.parse(r.stdout).rows[0];
    expect(row).toMatchObject({
      operation: 'orders.create',
      scenario: 'key-past-retention',
      status: 'failed',
      providerRecords: 2,
    });
  });

  it('cards --config prints the cards the config declares; an invalid card is a usage error naming it', async () => {
    const r = await cli(['cards', '--config', example, '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).map((c: { operation: string }) => c.operation)).toEqual([
      'acme.documents.update',
      'acme.exports.create',
      'acme.instances.run',
      'acme.orders.create',
    ]);
    const d = tempDir('config-card');
    const raw = parseYaml(readFileSync(example, 'utf8')) as {
      adapters: { acme: { operations: Record<string, Record<string, unknown>> } };
    };
    const ops = raw.adapters.acme.operations;
    for (const o of Object.values(ops)) o.card = join(REPO, 'packages/config/examples/http-api', String(o.card));
    const card = parseYaml(readFileSync(String(ops['orders.create']!.card), 'utf8')) as Record<string, unknown>;
    delete card.retention;
    ops['orders.create']!.card = card;
    writeFileSync(join(d, 'bad-card.yaml'), toYaml(raw));
    const bad = await cli(['cards', '--config', join(d, 'bad-card.yaml')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/adapters\.acme: .*retention/);
  });

  it('a config with a typo is a usage error naming it', async () => {
    const d = tempDir('config-typo');
    writeFileSync(
      join(d, 'typo.yaml'),
      'adapters:\n  acme:\n    type: http\n    baseUrl: http://127.0.0.1:9\n    timeoutMs: 1000\n    operation: {}\n',
    );
    const r = await cli(['drill', '--config', join(d, 'typo.yaml')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('adapters.acme.operation: unknown key (did you mean "operations"?)');
  });
});
