import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ANSI, cli, lyingDrill, startCli, tempDir } from './helpers.js';

describe('retrysafe: exit codes and usage errors', () => {
  it('--help and --version exit 0 and name every command', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    for (const c of ['drill', 'cards', 'ledger', 'demo']) expect(help.stdout).toContain(c);
    expect(help.stdout).toContain('Exit codes: 0 ok · 1 a drill, check or step failed · 2 bad usage');
    const h = await cli(['help', 'ledger']);
    expect(h.code).toBe(0);
    expect(h.stdout).toContain('resolve');
    // The resolve line names every resolution the packets offer.
    for (const flag of ['--resume', '--mark-done', '--abandon', '--resend-with'])
      expect(h.stdout.replace(/\s+/g, ' ')).toMatch(new RegExp(`resolve \\[options\\] <id> .*${flag}`));
    const v = await cli(['--version']);
    expect(v.code).toBe(0);
    expect(v.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it.each([
    [[], /Usage: retrysafe/],
    [['explode'], /unknown command 'explode'/],
    [['ledger'], /Usage: retrysafe ledger/],
    [['drill', '--bogus'], /unknown option '--bogus'/],
    [['drill', '--seed', 'abc'], /--seed <n>.*expected a non-negative integer/],
    [['drill', '--scenario', 'nope'], /unknown scenario 'nope' \(known: lost-response/],
    [
      ['drill', '--adapter', 'paypal'],
      /unknown adapter 'paypal' \(known: sandbox, stripe, msgraph, hubspot, slack, http, resend, github\)/,
    ],
    [
      ['drill', '--adapter', 'sandbox', '--operation', 'nope.create'],
      /unknown operation 'nope.create'.*known: records.create/,
    ],
    [['drill', '--module', '/no/such/drills.mjs'], /--module \/no\/such\/drills.mjs: no such file/],
    [['cards', '--format', 'xml'], /argument 'xml' is invalid/],
    [['cards', '--check', '--write'], /choose one of --check and --write/],
    [['ledger', 'ls', '--state', 'lost'], /--state 'lost' is not a state/],
    [['ledger', 'ls', '--limit', '-3'], /unknown option|argument '-3' is invalid/],
    [['ledger', 'show', 'bad id!'], /business-operation id/],
    [['ledger', 'resolve', 'op-1'], /choose exactly one of --resume, --mark-done <providerRef>, --abandon/],
    [['ledger', 'resolve', 'op-1', '--resume', '--abandon'], /choose exactly one/],
    [['ledger', 'resolve', 'op-1', '--resume'], /--resume re-sends through the adapter: pass --config <file>/],
    [['ledger', 'ls', '--config', '/no/such/retrysafe.json'], /cannot read/],
    [
      ['ledger', 'verify', '--file', '/no/such/export.jsonl'],
      /^retrysafe: cannot read \/no\/such\/export.jsonl: no such file or directory \(ENOENT\)$/m,
    ],
    [
      ['ledger', 'ls', '--db', '/tmp/no-such-dir-retrysafe/ledger.db'],
      /no SQLite ledger at \/tmp\/no-such-dir-retrysafe\/ledger.db/,
    ],
    [['ledger', 'handoffs'], /no SQLite ledger at .*retrysafe\.db/],
  ] as const)('retrysafe %j exits 2 with a clear message', async (args, message) => {
    const r = await cli(args, { cwd: tempDir('usage') });
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(2);
  });

  it.each([
    [['verfy', '--help'], /unknown command 'verfy'/],
    [['ledger', 'verfy', '--help'], /unknown command 'verfy'\n\(Did you mean verify\?\)/],
    [['cards', 'vaildate'], /unknown command 'vaildate'\n\(Did you mean validate\?\)/],
    [['cards', 'vaildate', '-h'], /unknown command 'vaildate'/],
  ] as const)(
    'retrysafe %j: an unknown command is a usage error whatever follows, never the help',
    async (args, message) => {
      const r = await cli(args);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
      expect(r.code).toBe(2);
    },
  );

  it.each([
    'postgress://app:hunter2-typo@10.0.0.5:5432/ledger',
    'pg://app:hunter2-typo@localhost/ledger',
    'mysql://app:hunter2-typo@db.internal/ledger',
  ])('--db %s (a URL no ledger opens) exits 2 and never repeats its password', async (url) => {
    const r = await cli(['ledger', 'ls', '--db', url], { cwd: tempDir('usage') });
    expect(r.code).toBe(2);
    expect(r.stderr + r.stdout).not.toContain('hunter2-typo');
    expect(r.stderr).toMatch(/--db: .*not a SQLite file or a postgres:\/\/ URL/);
  });

  const NOTHING_TO_DRILL = {
    'empty.mjs': 'export const drills = [];\n',
    'no-ops.mjs':
      "export const drills = [{ name: 'no-ops', createAdapter: async () => ({}), startSandbox: async () => ({}), operations: {} }];\n",
  };
  it.each([
    ['alone', []],
    [
      'beside another adapter too, not skipped while the other passes',
      ['--adapter', 'sandbox', '--scenario', 'permanent-error'],
    ],
  ])(
    'a --module with nothing to drill (no drill setup, or one without operations), %s: exits 2 and writes no report',
    async (_, beside) => {
      const dir = tempDir('nothing-to-drill');
      for (const [file, text] of Object.entries(NOTHING_TO_DRILL)) {
        writeFileSync(join(dir, file), text);
        const out = join(dir, `out-${file}`);
        const r = await cli(['drill', ...beside, '--module', join(dir, file), '--out', out]);
        expect(r.code, file).toBe(2);
        expect(r.stderr, file).toMatch(/nothing to drill/);
        expect(existsSync(out), file).toBe(false);
      }
    },
  );

  it.each([
    ['no drill setup', 'export const drills = [];\n', /--module .*empty\.mjs exports no drill setup/],
    [
      'an adapter without operations',
      "export const drills = [{ name: 'bare', createAdapter: async () => ({}), startSandbox: async () => ({}), operations: {} }];\n",
      /no cards in .*empty\.mjs: its adapters declare no operation/,
    ],
    [
      'an adapter with no operation',
      "export const drills = [{ name: 'bare', createAdapter: async () => ({ operations: {} }), startSandbox: async () => ({}), operations: {} }];\n",
      /no cards in .*empty\.mjs: its adapters declare no operation/,
    ],
  ])(
    'cards --module with nothing to list (%s) is refused as drill refuses it: exit 2, never an empty list',
    async (_, text, said) => {
      const file = join(tempDir('no-cards'), 'empty.mjs');
      writeFileSync(file, text);
      for (const argv of [['cards'], ['cards', '--json'], ['cards', '--check'], ['drill']]) {
        const r = await cli([...argv, '--module', file]);
        expect([r.code, r.stdout], argv.join(' ')).toEqual([2, argv.includes('--json') ? expect.any(String) : '']);
        if (argv[0] === 'cards') expect(r.stderr + r.stdout, argv.join(' ')).toMatch(said);
      }
    },
  );

  it('under the engines floor (Node 22.12: no node:sqlite without a flag) every command is refused at start, once', () => {
    const bin = join(import.meta.dirname, '../dist/bin.js');
    const as2212 = `Object.defineProperty(process.versions, 'node', { value: '22.12.0' }); await import(${JSON.stringify(bin)});`;
    for (const argv of [
      ['cards', '--adapter', 'sandbox'],
      ['ledger', 'ls', '--db', 'none.db'],
    ]) {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', as2212, 'bin', ...argv], {
        encoding: 'utf8',
        cwd: tempDir('old-node'),
      });
      expect([r.status, r.stdout, r.stderr], argv.join(' ')).toEqual([
        2,
        '',
        `retrysafe needs Node 22.13 or later (its embedded ledger is node:sqlite, without a flag from 22.13); this is Node 22.12.0\n`,
      ]);
    }
  });

  it('a reader that closes the pipe early (| head) ends the output, not in a stack trace', async () => {
    const run = startCli(['cards']);
    run.child.stdout!.once('data', () => run.child.stdout!.destroy());
    const { code, stderr } = await run.done;
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('so does one reading stderr (2>&1 | head): the drill still runs to its end and writes its report', async () => {
    const out = tempDir('stderr-closed');
    const run = startCli(['drill', '--adapter', 'sandbox', '--scenario', 'lost-response', '--out', out]);
    run.child.stderr!.once('data', () => run.child.stderr!.destroy());
    const { code, stdout } = await run.done;
    expect(code).toBe(0);
    expect(stdout).toMatch(/2 passed, 0 failed/);
    expect(existsSync(join(out, 'drill.json'))).toBe(true);
  });

  it('--json turns a usage error into a JSON error on stdout as well', async () => {
    const r = await cli(['drill', '--scenario', 'nope', '--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toEqual({
      ok: false,
      error: { code: 'USAGE', message: expect.stringContaining("unknown scenario 'nope'") },
    });
  });

  it("an operation whose every scenario the card skipped reads 'skip' in the summary, not 'pass'", async () => {
    const out = tempDir('all-skipped');
    const r = await cli(['drill', '--adapter', 'sandbox', '--scenario', 'key-past-retention', '--out', out]);
    expect(r.code).toBe(0);
    const row = (drill: string) =>
      r.stdout
        .split('\n')
        .find((l) => l.startsWith(`${drill} `))
        ?.trim()
        .split(/\s+/);
    expect(row('sandbox-replaying')).toEqual(['sandbox-replaying', 'records.create', '1', '0', '0', 'pass']);
    expect(row('sandbox-forgetful')).toEqual(['sandbox-forgetful', 'records.create', '0', '0', '1', 'skip']);
    expect(r.stderr).not.toMatch(/✓ sandbox-forgetful: 0 passed/);
  });

  it('a drill whose every scenario the cards skipped tested nothing: it says so and exits 1, never green', async () => {
    const skipped = ['--adapter', 'sandbox', '--scenario', 'rejection-left-object', '--json'];
    const r = await cli(['drill', ...skipped, '--out', tempDir('none-ran')]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ ok: false, totals: { passed: 0, failed: 0, skipped: 2 } });
    expect(report.problems.join('\n')).toMatch(/every scenario was skipped by the cards: nothing was drilled/);
  });

  it('a failing drill exits 1 and names the scenario and the counts (an adapter whose card lies)', async () => {
    const out = tempDir('lying');
    const r = await lyingDrill(out, ['--json']);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.ok).toBe(false);
    expect(report.totals).toMatchObject({ scenarios: 2, passed: 1, failed: 1 });
    const lost = report.rows.find((x: { scenario: string }) => x.scenario === 'lost-response');
    expect(lost).toMatchObject({
      drill: 'lying-sandbox',
      status: 'failed',
      providerRecords: 2,
      expected: { providerRecords: 1 },
    });
    expect(lost.failures.join('\n')).toContain('lost-response: providerRecords expected 1, observed 2');
  });
});

describe('retrysafe: colour', () => {
  // FORCE_COLOR makes a pipe coloured, so the test can see colour at all; NO_COLOR must still win.
  const args = ['drill', '--adapter', 'sandbox', '--scenario', 'permanent-error'];

  it('colours the table when forced', async () => {
    const r = await cli([...args, '--out', tempDir('color')], { env: { FORCE_COLOR: '1' } });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(ANSI);
  });

  it('never colours when NO_COLOR is set, not even with FORCE_COLOR', async () => {
    const r = await cli([...args, '--out', tempDir('nocolor')], { env: { FORCE_COLOR: '1', NO_COLOR: '1' } });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('permanent-error');
    expect(r.stdout).not.toMatch(ANSI);
    expect(r.stderr).not.toMatch(ANSI);
  });

  it('is plain on a pipe by default', async () => {
    const r = await cli([...args, '--out', tempDir('pipe')]);
    expect(r.code).toBe(0);
    expect(r.stdout + r.stderr).not.toMatch(ANSI);
  });
});

describe("config's own messages reach the operator readable, and never with the credential", () => {
  const dir = tempDir('config-secrets');
  const run = async (config: Record<string, unknown>) => {
    const file = join(dir, `c${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(config));
    const r = await cli(['ledger', 'ls', '--config', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toContain('hunter2');
    expect(r.stderr).not.toContain('[redacted]');
    return r.stderr;
  };
  const adapters = { shop: { type: 'module', module: './shop.mjs' } };

  it('a postgres URL with a password: the advice is printed whole', async () => {
    expect(await run({ ledger: 'postgres://app:hunter2@db.internal/rs', adapters })).toContain(
      'ledger: the URL carries a password: drop it (postgres://user@host/db) and set PGPASSWORD in the environment',
    );
  });

  it('a ledger URL of another scheme with user-info or a secret query parameter is not quoted back', async () => {
    const userInfo = await run({ ledger: 'mysql://app:hunter2@db.internal/rs', adapters });
    expect(userInfo).toContain('the URL carries user:password: drop it');
    expect(userInfo).toMatch(/is a mysql: URL; a ledger is a postgres:\/\/ URL or a SQLite file path/);
    const query = await run({ ledger: 'mysql://db.internal/rs?password=hunter2', adapters });
    expect(query).toContain("the URL's query parameter 'password' carries a credential: pass it through");
  });

  it('a credential under a secret-named key: the place and the advice, not the value', async () => {
    const stderr = await run({ adapters: { shop: { ...adapters.shop, options: { password: 'hunter2' } } } });
    expect(stderr).toContain('adapters.shop.options.password: credentials come from environment variables only');
  });

  it('the fix is in the file, not on the command line: no "(run with --help for usage)" after it', async () => {
    const stderr = await run({ adapters: { shop: { ...adapters.shop, options: { password: 'hunter2' } } } });
    expect(stderr).not.toContain('--help');
  });

  it('a key pasted where a short word is expected is not echoed by the schema check either', async () => {
    const stderr = await run({ adapters: { shop: { type: 'sk_test_hunter2hunter2' } } });
    expect(stderr).toMatch(/adapters\.shop\.type: expected one of .*, got the value \(not shown\)/);
  });
});
