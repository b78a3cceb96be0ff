// Issue 44 item 3: the CLI never waits forever on an error path and keeps the promises its help makes.
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { asBusinessOperationId } from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createDrillClock } from '@retrysafe/testkit';
import { packetOf } from '@retrysafe/testkit/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editStored } from '../../ledger-sqlite/test/sqlite-tamper.js';
import { handoffsText } from '../src/commands/ledger/handoffs/index.js';
import { type FaultySandbox, startFaultySandbox } from './faulty-sandbox.js';
import { cli, expireLease, ledgerWithOneClaim, openRawSqlite, REPO, startCli, tempDir, writeJson } from './helpers.js';

/** Every error path below must end by itself well inside this; the helper kills the CLI and fails the test past it. */
const BOUND = { timeoutMs: 30_000 };

describe('retrysafe never waits forever', () => {
  it('demo --db <a path that cannot hold a ledger> prints why and exits 2', async () => {
    const dir = tempDir('demo-db');
    const r = await cli(['demo', '--db', dir], BOUND);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`--db ${dir}: cannot hold a SQLite ledger there`));
  });

  it('Ctrl-C in a drill prints a line, removes its temporary ledgers and exits 130', async () => {
    const tmp = tempDir('sigint');
    const run = startCli(['drill', '--adapter', 'sandbox', '--out', join(tmp, 'out')], {
      ...BOUND,
      env: { TMPDIR: tmp },
    });
    // one scenario finished (a progress line), so the drill's ledgers folder exists
    while (!/\[\s*1\//.test(run.stderr()) && run.child.exitCode === null) await new Promise((r) => setTimeout(r, 50));
    expect(readdirSync(tmp).filter((f) => f.startsWith('retrysafe-drill-ledgers-'))).not.toHaveLength(0);
    run.child.kill('SIGINT');
    const r = await run.done;
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/interrupted/);
    expect(readdirSync(tmp).filter((f) => f.startsWith('retrysafe-drill-ledgers-'))).toEqual([]);
  });
});

describe('--json everywhere the help promises it', () => {
  it('cards validate --json prints JSON on stdout', async () => {
    const r = await cli(['cards', 'validate', 'packages/cli/test/fixtures/no-such-card.yaml', '--json'], BOUND);
    const body = JSON.parse(r.stdout);
    expect(body).toMatchObject({
      ok: false,
      results: [{ file: 'packages/cli/test/fixtures/no-such-card.yaml', ok: false }],
    });
  });

  it('cards init --json prints { card, unknowns, … } as JSON', async () => {
    const dir = tempDir('init-json');
    const from = writeJson(dir, 'partial.json', {
      operation: 'acme.orders.create',
      provider: 'acme',
      businessOperationId: { intentFields: ['ref'] },
    });
    const r = await cli(['cards', 'init', '--from', from, '--json'], BOUND);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      ok: true,
      card: { operation: 'acme.orders.create' },
      unknowns: expect.any(Array),
    });
  });

  it('help --json prints a topic or a command help as JSON', async () => {
    const topic = await cli(['help', 'runbook', '--json'], BOUND);
    expect(topic.code).toBe(0);
    expect(JSON.parse(topic.stdout)).toMatchObject({ topic: 'runbook', text: expect.stringMatching(/^# Operator's/) });
    const command = await cli(['help', 'ledger', 'resolve', '--json'], BOUND);
    expect(command.code).toBe(0);
    expect(JSON.parse(command.stdout)).toMatchObject({
      command: 'ledger resolve',
      text: expect.stringContaining('--resend-with'),
    });
    const unknown = await cli(['help', 'nothing', '--json'], BOUND);
    expect(unknown.code).toBe(2);
    expect(JSON.parse(unknown.stdout)).toMatchObject({ ok: false, error: { code: 'USAGE' } });
  });

  it('a usage error the option parser finds is JSON on stdout with --json too, as any other usage error', async () => {
    for (const args of [
      ['ledger', 'ls', '--bogus', '--json'],
      ['ledger', 'ls', '--limit', 'x', '--json'],
    ]) {
      const r = await cli(args, BOUND);
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, error: { code: 'USAGE', message: expect.any(String) } });
      expect(r.stderr).toMatch(/^error: /);
    }
  });
});

describe('exit code 2 for a file that cannot be read (as the help says)', () => {
  const dir = tempDir('unreadable');
  const folder = join(dir, 'a-folder');
  mkdirSync(folder);
  const notALedger = join(dir, 'notes.db');
  writeFileSync(notALedger, 'not a database\n'.repeat(100));

  it.each([
    ['cards validate <missing file>', ['cards', 'validate', join(dir, 'missing.yaml')], /cannot read/],
    ['ledger ls --db <a folder>', ['ledger', 'ls', '--db', folder], /cannot open it as a SQLite ledger/],
    ['ledger ls --db <not a SQLite file>', ['ledger', 'ls', '--db', notALedger], /cannot open it as a SQLite ledger/],
    [
      'probe -- <a command that does not exist>',
      ['probe', '--tool', 't', '--args', '{}', '--count-tool', 'l', '--count-path', 'p', '--', 'no-such-server-rs'],
      /^retrysafe: cannot spawn no-such-server-rs: no such file or directory \(ENOENT\)$/m,
    ],
    [
      'drill --module <a folder>',
      ['drill', '--module', folder, '--out', join(dir, 'out')],
      /--module .*cannot import it/,
    ],
  ] as const)('%s', async (_name, args, message) => {
    const r = await cli(args, BOUND);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.code).toBe(2);
  });

  it('--config <a .ts config in a CommonJS package> says what to change, not that Node cannot import TypeScript', async () => {
    // As `npm init -y` writes package.json (npm 10.9 and later): a `.ts` file there is CommonJS.
    const app = tempDir('cjs-app');
    writeJson(app, 'package.json', { name: 'app', type: 'commonjs' });
    writeFileSync(join(app, 'retrysafe.config.ts'), 'export default { adapters: { sandbox: {} } };\n');
    const r = await cli(['ledger', 'ls', '--config', join(app, 'retrysafe.config.ts')], BOUND);
    expect(r.stderr).toMatch(/^retrysafe: .*cannot import.*"type": "module"/m);
    expect(r.stderr).not.toMatch(/cannot import TypeScript/);
    expect(r.code).toBe(2);
  });
});

describe('a SQLite file that holds no ledger is exit 2, and is left as it was', () => {
  it.each([
    ['of another application', 'CREATE TABLE notes (body TEXT)'],
    ['empty', ''],
  ])('%s', async (_name, sql) => {
    const file = join(tempDir('not-a-ledger'), 'app.db');
    const db = new DatabaseSync(file);
    db.exec(sql);
    db.close();
    const before = readFileSync(file);
    for (const args of [
      ['ledger', 'ls'],
      ['ledger', 'verify', '--all'],
      ['ledger', 'resolve', 'op-1', '--abandon'],
    ]) {
      const r = await cli([...args, '--db', file], BOUND);
      expect(r.stderr).toMatch(/holds no retrysafe ledger/);
      expect(r.code).toBe(2);
    }
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(readdirSync(join(file, '..'))).toEqual(['app.db']);
  });
});

describe('a SQLite ledger another process holds locked is a failure (exit 1), not a wrong path (exit 2)', () => {
  // The CLI answers once its busy timeout has run out: --busy-timeout shortens the default 10 s an operator waits.
  it('ledger ls says the lock was held and that nothing was written', async () => {
    const db = join(tempDir('locked'), 'ledger.db');
    await createSqliteLedger({ path: db }).close();
    const other = new DatabaseSync(db);
    other.exec('PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; UPDATE retrysafe_operations SET state = state');
    try {
      const r = await cli(['ledger', 'ls', '--db', db, '--busy-timeout', '200'], BOUND);
      expect(r.stderr).toMatch(
        /another connection held its lock longer than busyTimeoutMs \(200 ms\).*nothing was written/,
      );
      expect(r.stderr).not.toMatch(/cannot open it as a SQLite ledger|--help/);
      expect(r.code).toBe(1);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
  });
});

describe('an operation left open is not a dead end for --abandon or --mark-done', () => {
  it('the refusal names the command that drives it (exit 1, nothing written)', async () => {
    const db = join(tempDir('left-open'), 'ledger.db');
    await ledgerWithOneClaim(db, 'open-1');
    for (const action of [['--abandon'], ['--mark-done', 'ref_1']]) {
      const r = await cli(['ledger', 'resolve', 'open-1', ...action, '--db', db], BOUND);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/open-1 is claimed, not handed off.*nothing was written/);
      expect(r.stderr).toContain(`retrysafe ledger resolve open-1 --resume --db ${db} --config <file>`);
    }
  });

  it('the handoff list does not say nothing waits while one is left open past its lease: it names it', async () => {
    const db = join(tempDir('left-open-list'), 'ledger.db');
    // A lease of 1 s that ran out a second ago, and no worker left to renew it.
    await ledgerWithOneClaim(db, 'open-2', { now: Date.now() - 2_000 });
    for (const json of [[], ['--json']]) {
      const r = await cli(['ledger', 'handoffs', '--db', db, ...json], BOUND);
      expect(r.code).toBe(0);
      expect(r.stdout).not.toContain('nothing is waiting');
      expect(r.stderr).toMatch(/1 operation left open past its lease.*: open-2/);
      expect(r.stderr).toContain(`retrysafe ledger resolve <id> --resume --db ${db} --config <file>`);
    }
  });
});

describe('--by on an operation left open', () => {
  it('--resume records who asked in its receipts (a pseudonym), as for a hand-off', async () => {
    const dir = tempDir('open-by');
    const db = join(dir, 'ledger.db');
    // Dispatched by a worker that died: its lease ran out a second ago.
    const params = { ref: 'open-by', amount: 5 };
    await ledgerWithOneClaim(db, 'open-by-1', { dispatch: true, params, now: Date.now() - 2_000 });
    const sandbox = await startFaultySandbox('pass');
    const config = join(dir, 'retrysafe.json');
    sandbox.writeConfig(config, db);
    const args = ['ledger', 'resolve', 'open-by-1', '--resume', '--by', 'alice', '--config', config, '--json'];
    const r = await cli(args, { ...BOUND, cwd: dir });
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'done' });
    const ledger = createSqliteLedger({ path: db });
    const [first] = await ledger.receipts(asBusinessOperationId('open-by-1'));
    await ledger.close();
    const alice = `person#${createHash('sha256').update('alice').digest('hex').slice(0, 12)}`;
    expect(first).toMatchObject({ kind: 'resolve', decision: { action: 'resume' } });
    expect(first?.decision.reason).toContain(alice);
    expect(JSON.stringify(first)).not.toContain('alice');
  });
});

describe('an operation left open that no adapter can drive any more is not stuck', () => {
  it('--resume hands it off once its lease has run out (never while it lives, nothing sent), and --abandon closes it', async () => {
    const dir = tempDir('orphan');
    const db = join(dir, 'ledger.db');
    // Dispatched (it may have been sent), under a lease that outlives the first call even on a loaded machine.
    await ledgerWithOneClaim(db, 'gone-1', { dispatch: true, leaseMs: 60_000 });
    // Its operation is no longer in the application: the config names no adapter for it.
    const config = writeJson(dir, 'retrysafe.json', {
      ledger: './ledger.db',
      adapters: { stripe: { apiKeyEnv: 'RS_CLI_TEST_STRIPE_KEY', baseUrl: 'http://127.0.0.1:9' } },
    });
    const env = { RS_CLI_TEST_STRIPE_KEY: 'sk_test_cli' };
    // Without --config: which adapter to name, and what a config naming none of it does.
    const bare = await cli(['ledger', 'resolve', 'gone-1', '--resume', '--db', db], BOUND);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('pass --config <file> naming the adapter of sandbox.records.create');
    expect(bare.stderr).toMatch(/if no adapter can drive it any more, a config naming any other hands it off to you/);
    const resume = () =>
      cli(['ledger', 'resolve', 'gone-1', '--resume', '--config', config, '--json'], { ...BOUND, cwd: dir, env });
    const live = await resume();
    expect(JSON.parse(live.stdout)).toMatchObject({ status: 'in-progress' });
    expireLease(db, 'gone-1');
    const handed = await resume();
    const { packet } = JSON.parse(handed.stdout);
    expect(packet).toMatchObject({ reason: 'recovery-failed', explanation: expect.stringMatching(/no adapter/) });
    expect(packet.safeNextActions).toContainEqual(expect.objectContaining({ action: 'resume', safe: false }));
    const list = await cli(['ledger', 'handoffs', '--db', db], BOUND);
    expect(list.stdout).toContain('gone-1');
    const abandon = await cli(['ledger', 'resolve', 'gone-1', '--abandon', '--db', db, '--json'], BOUND);
    expect(abandon.code).toBe(0);
    expect(JSON.parse(abandon.stdout)).toMatchObject({ status: 'resolved', state: 'abandoned' });
  }, 60_000);
});

describe('a hand-off whose params the params keys set cannot open', () => {
  it('--abandon and --mark-done close it all the same: they neither read nor write its params', async () => {
    const dir = tempDir('sealed-handoff');
    const db = join(dir, 'ledger.db');
    for (const id of ['sealed-1', 'sealed-2']) {
      await ledgerWithOneClaim(db, id);
      const ledger = createSqliteLedger({ path: db });
      await ledger.handOff({ businessOperationId: id as never, fence: 1 }, packetOf(id), Date.now());
      await ledger.close();
      const raw = openRawSqlite(db);
      // Sealed under a key no process holds any more (dropped after a rotation).
      const sealed = { $retrysafeEncrypted: 'aes-256-gcm/v1', kid: 'gone', iv: 'AA', tag: 'AA', data: 'AA' };
      editStored(raw, id, (l) => ({ ...l, record: JSON.stringify({ ...JSON.parse(l.record), params: sealed }) }));
      raw.close();
    }
    const env = { RETRYSAFE_PARAMS_KEYS: 'p1:a-32-byte-secret-for-the-params!' };
    for (const [id, action] of [
      ['sealed-1', ['--abandon']],
      ['sealed-2', ['--mark-done', 'ref_1']],
    ] as const) {
      const r = await cli(['ledger', 'resolve', id, ...action, '--db', db, '--json'], { ...BOUND, env });
      expect(r.stderr).toBe('');
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'resolved' });
      expect(r.code).toBe(0);
    }
  });
});

describe('an option that needs a value says so', () => {
  it('--mark-done followed by another option', async () => {
    const r = await cli(['ledger', 'resolve', 'op-1', '--mark-done', '--db', 'x.db'], BOUND);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--mark-done <providerRef>.*needs a value/);
    expect(r.stderr).not.toMatch(/too many arguments/);
  });
});

describe('help runbook: the runbook the handoff list points to ships with the CLI', () => {
  it('prints the runbook, and the handoff list names the command', async () => {
    const r = await cli(['help', 'runbook'], BOUND);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^# Operator's runbook/);
    const row = {
      businessOperationId: 'op-1',
      operation: 'sandbox.records.create',
      handoffReason: 'rejected',
      attempts: 1,
      updatedAt: '',
      explanation: 'rejected',
      safeNextActions: [],
    };
    const list = handoffsText([row as unknown as Parameters<typeof handoffsText>[0][number]]);
    expect(list).toContain('retrysafe help runbook');
    expect(list).not.toContain('docs/runbook.md');
    const help = await cli(['help', 'ledger', 'resolve'], BOUND);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--resend-with');
    const unknown = await cli(['help', 'nothing'], BOUND);
    expect(unknown.code).toBe(2);
  });

  it('the text printed lives in the package (copied from docs/ at build)', async () => {
    expect(readFileSync(join(REPO, 'packages/cli/dist/runbook.md'), 'utf8')).toBe(
      readFileSync(join(REPO, 'docs/runbook.md'), 'utf8'),
    );
  });
});

describe('a ledger the operator may only read is listed, verified and dry-run, read-only', () => {
  const dir = tempDir('read-only');
  const db = join(dir, 'retrysafe.db');
  // root writes anywhere: the CLI then runs without the capabilities that override file permissions
  const asRoot = process.getuid?.() === 0;

  beforeAll(async () => {
    await ledgerWithOneClaim(db, 'ro-1');
    chmodSync(db, 0o444);
    chmodSync(dir, 0o555);
  });
  afterAll(() => chmodSync(dir, 0o755));

  it('ls, show, handoffs, verify, export and the dry runs of prune and resolve-all read it; nothing is written beside it', async () => {
    const before = readFileSync(db);
    const opts = { ...BOUND, withoutDacOverride: asRoot };
    const ls = await cli(['ledger', 'ls', '--db', db, '--json'], opts);
    expect(ls.stderr).toBe('');
    expect(JSON.parse(ls.stdout).map((r: { businessOperationId: string }) => r.businessOperationId)).toEqual(['ro-1']);
    const dryRuns = [
      ['prune', '--older-than', '30d', '--dry-run'],
      ['resolve-all', '--abandon', '--dry-run'],
    ];
    for (const args of [['show', 'ro-1'], ['handoffs'], ['verify', '--all'], ['export'], ...dryRuns]) {
      const r = await cli(['ledger', ...args, '--db', db], opts);
      expect(r.code, `ledger ${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
    expect(readdirSync(dir)).toEqual(['retrysafe.db']);
    expect(readFileSync(db).equals(before)).toBe(true);
  });
});

/** A `records.create` of `ref` run through `sandbox` into a new ledger and handed off as rejected; then the sandbox
 * passes again, and the config `--resume` builds its adapter from and `same.json` (the same params) are written. */
async function rejectedOperation(sandbox: FaultySandbox, ref: string) {
  const dir = tempDir('next-step');
  const db = join(dir, 'retrysafe.db');
  const ledger = createSqliteLedger({ path: db });
  const r = await createRunner({ ledger, clock: createDrillClock() }).run(sandbox.adapter, 'records.create', {
    params: { ref, amount: 5 },
  });
  await ledger.close();
  expect(r.status === 'handed-off' && r.packet.reason).toBe('rejected');
  sandbox.onRequest(null);
  sandbox.setFault('pass');
  const config = join(dir, 'retrysafe.json');
  sandbox.writeConfig(config, db);
  writeFileSync(join(dir, 'same.json'), JSON.stringify({ ref, amount: 5 }));
  const resolve = (...args: string[]) =>
    cli(['ledger', 'resolve', r.businessOperationId, ...args, '--config', config], { ...BOUND, cwd: dir });
  const show = () => cli(['ledger', 'show', r.businessOperationId, '--db', db], { ...BOUND, cwd: dir });
  return { resolve, show, same: join(dir, 'same.json') };
}

describe('after fixing the cause of a rejection, the next step the CLI gives works', () => {
  it('--resend-with the same params and --resume both point to --resume --force, which completes it', async () => {
    const sandbox = await startFaultySandbox('reject', 'activate the account first');
    // Then the operator activated the account: the cause is fixed, the request itself was fine.
    const { resolve, same } = await rejectedOperation(sandbox, 'order-A');
    const again = await resolve('--resend-with', same);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/--resume --force/);
    expect(again.stderr).not.toMatch(/use resume/);
    const resume = await resolve('--resume');
    expect(resume.code).toBe(1);
    expect(resume.stderr).toMatch(/fixed the cause.*--resume --force/s);
    expect(sandbox.provider.count()).toBe(0);
    const forced = await resolve('--resume', '--force', '--json');
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout)).toMatchObject({ status: 'done' });
    expect(sandbox.provider.count()).toBe(1);
  }, 120_000);

  it('refused for a cause outside the request (403): once it is fixed, --resume without --force sends it once', async () => {
    const sandbox = await startFaultySandbox('forbid', 'the bot is not in the channel');
    // Then the operator invited the bot: nothing was applied, and the request itself was fine.
    const { resolve, show, same } = await rejectedOperation(sandbox, 'order-C');
    expect((await show()).stdout).toMatch(/✓ safe\s+resume\s+nothing was applied/);
    const again = await resolve('--resend-with', same);
    expect(again.stderr).toMatch(/after fixing the cause outside it: --resume\./);
    expect(again.stderr).not.toMatch(/--force/);
    const resumed = await resolve('--resume', '--json');
    expect(resumed.stderr).toBe('');
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: 'done' });
    expect(resumed.code).toBe(0);
    expect(sandbox.proxy.requests.filter((q) => q.method === 'POST')).toHaveLength(2);
    expect(sandbox.provider.count()).toBe(1);
  }, 120_000);

  it('after an attempt that may have applied, --resume and --resend-with the same params say: check at the provider, never "send it again as is"', async () => {
    const sandbox = await startFaultySandbox('lose');
    // The first send lands and its answer is lost, the look-ups are lost too, the same-key resend is refused.
    let posts = 0;
    sandbox.onRequest((r) => sandbox.setFault(r.method === 'POST' && ++posts > 1 ? 'reject' : 'lose'));
    const { resolve, same } = await rejectedOperation(sandbox, 'order-B');
    for (const args of [['--resume'], ['--resend-with', same]]) {
      const r = await resolve(...args);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/check at the provider first/i);
      expect(r.stderr).not.toMatch(/send it again as is|send the same request again|--resend-with </);
    }
    expect(sandbox.provider.count()).toBe(1);
  }, 120_000);
});

describe('drillCommand called from a script', () => {
  it.each([-1, 1.5, Number.NaN])('refuses seed %s as the command line does, before loading anything', async (seed) => {
    const { drillCommand } = await import('../src/commands/drill/index.js');
    await expect(drillCommand({ seed } as never, null)).rejects.toThrow(/--seed must be a non-negative integer/);
  });
});

describe('an adapter the config names that cannot be built: the message names the config file and the adapter entry', () => {
  const dir = tempDir('adapter-errors');
  writeFileSync(join(dir, 'broken.mjs'), "throw new Error('broken at load');\n");
  writeFileSync(join(dir, 'picky.mjs'), "export default () => { throw new Error('option region is wrong'); };\n");
  const db = join(dir, 'ledger.db');
  it.each([
    ['whose module fails to load', 'mine', { module: './broken.mjs' }, /broken at load/],
    ['whose factory refuses its options', 'mine', { module: './picky.mjs' }, /option region is wrong/],
    [
      'a built-in one whose factory refuses its options',
      'sandbox',
      { baseUrl: 'http://api.example.com' },
      /plain http/,
    ],
  ])('%s', async (name, adapter, entry, said) => {
    await ledgerWithOneClaim(db, 'op-1');
    const config = writeJson(dir, `${adapter}-${name.length}.json`, {
      ledger: './ledger.db',
      adapters: { [adapter]: entry },
    });
    for (const args of [
      ['ledger', 'resolve', 'op-1', '--resume', '--config', config],
      ['ledger', 'prune', '--older-than', '30d', '--dry-run', '--config', config],
    ]) {
      const r = await cli(args, { ...BOUND, cwd: dir });
      expect(r.stderr).toMatch(said);
      expect(r.stderr).toContain(`${config}: adapters.${adapter}`);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.code).toBe(2);
    }
  });
});
