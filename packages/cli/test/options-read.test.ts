import { copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Outcome } from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { PROBE_COMMAND } from '@retrysafe/mcp/cli-options';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli.js';
import { COMMANDS } from '../src/cli-config.js';
import { type CommandConfig, kebab } from '../src/command.js';
import { PARTIAL_CARD, tempDir } from './helpers.js';

// A ledger made by the real runner on the in-process sandbox: U waits for the user's own step (the provider asked them
// to act), P for a person (the request was refused as invalid); S succeeded; R was refused and abandoned by alice.
const dir = tempDir('options-read');
const db = join(dir, 'retrysafe.db');
// A copy of it each run below may write to; the config names it.
const work = join(dir, 'work.db');
const config = join(dir, 'retrysafe.json');
const ids = { U: '', P: '', S: '', R: '' };

beforeAll(async () => {
  const adapter = createSandboxAdapter({ provider: createSandboxProvider({ ...REPLAYING_BEHAVIOUR }) });
  const ledger = createSqliteLedger({ path: db });
  const runner = createRunner({ ledger });
  const refusing = (outcome: Outcome) => ({ ...adapter, doExecute: async () => outcome });
  const run = async (ref: string, outcome?: Outcome) =>
    (await runner.run(outcome ? refusing(outcome) : adapter, 'records.create', { params: { ref, amount: 5 } }))
      .businessOperationId;
  const invalid: Outcome = { kind: 'rejected', reason: 'validation', message: 'amount must be positive' };
  ids.U = await run('u', { kind: 'rejected', reason: 'action-required', message: 'open the URL first' });
  ids.P = await run('p', invalid);
  ids.S = await run('s');
  ids.R = await run('r', invalid);
  await runner.resolve(ids.R, { action: 'abandon' }, { adapters: [], by: 'alice' });
  await ledger.close();
  copyFileSync(db, work);
  const module = join(import.meta.dirname, 'fixtures', 'counting-adapter.mjs');
  const adapters = { counted: { module, options: { baseUrl: 'http://127.0.0.1:9' } } };
  writeFileSync(config, JSON.stringify({ ledger: work, adapters }));
});

/** `retrysafe …args` in this process: its exit code and what it printed. */
async function run(args: readonly string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, { out: (t) => void out.push(t), err: (t) => void err.push(t), color: false });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('ledger handoffs says whose step each hand-off waits on', () => {
  it("one waiting for the user's own step is not listed as waiting for a person", async () => {
    const json = await run(['ledger', 'handoffs', '--db', db, '--json']);
    const rows = JSON.parse(json.out) as { businessOperationId: string; waitsFor: string }[];
    expect(Object.fromEntries(rows.map((r) => [r.businessOperationId, r.waitsFor]))).toEqual({
      [ids.U]: 'user',
      [ids.P]: 'person',
    });
    const text = await run(['ledger', 'handoffs', '--db', db]);
    expect(text.out.split('\n')[0]).toMatch(
      /^2 operations handed off: 1 waiting for a person, 1 for the user's own step/,
    );
    const block = text.out.split('\n\n').find((b) => b.startsWith(ids.U))!;
    expect(block).toMatch(/waits for the user's own step/);
  });
});

describe('an option a combination makes meaningless is refused naming it (exit 2), nothing written', () => {
  it.each([
    [
      'ledger prune --dry-run --export',
      ['ledger', 'prune', '--older-than', '30d', '--dry-run', '--export', 'x.jsonl', '--db', db],
      /--export/,
    ],
    ['ledger verify --file --db', ['ledger', 'verify', '--file', 'x.jsonl', '--db', db], /--db/],
    ['ledger verify --file --schema', ['ledger', 'verify', '--file', 'x.jsonl', '--schema', 'app'], /--schema/],
    [
      'ledger verify --file --busy-timeout',
      ['ledger', 'verify', '--file', 'x.jsonl', '--busy-timeout', '5'],
      /--busy-timeout/,
    ],
    ['ledger verify --file --config', ['ledger', 'verify', '--file', 'x.jsonl', '--config', config], /--config/],
    [
      'ledger verify --allow-unkeyed without keys',
      ['ledger', 'verify', 'x', '--db', db, '--allow-unkeyed'],
      /--allow-unkeyed/,
    ],
    ['ledger ls --limit 0 (it printed "No operations.")', ['ledger', 'ls', '--db', db, '--limit', '0'], /--limit/],
    ['ledger resolve --abandon --force', ['ledger', 'resolve', 'x', '--db', db, '--abandon', '--force'], /--force/],
    [
      'ledger resolve --mark-done --force',
      ['ledger', 'resolve', 'x', '--db', db, '--mark-done', 'r1', '--force'],
      /--force/,
    ],
    ['ledger resolve-all --abandon --force', ['ledger', 'resolve-all', '--db', db, '--abandon', '--force'], /--force/],
    [
      'ledger resolve-all --dry-run --by (it labels writes)',
      ['ledger', 'resolve-all', '--db', db, '--abandon', '--dry-run', '--by', 'alice'],
      /--by/,
    ],
    ['ledger ls --db --config (read for nothing)', ['ledger', 'ls', '--db', db, '--config', config], /--config/],
    ['ledger export --db --config', ['ledger', 'export', '--db', db, '--config', config], /--config/],
    ['ledger verify --db --config', ['ledger', 'verify', '--all', '--db', db, '--config', config], /--config/],
    // Only the text shows the resolve commands --config feeds.
    ['ledger show --json --db --config', ['ledger', 'show', 'x', '--json', '--db', db, '--config', config], /--config/],
    ['cards --dir without --check or --write', ['cards', '--adapter', 'sandbox', '--dir', 'x'], /--dir/],
    ['cards --check --format', ['cards', '--adapter', 'sandbox', '--check', '--format', 'json'], /--format/],
    ['cards --format md --json', ['cards', '--adapter', 'sandbox', '--format', 'md', '--json'], /--format/],
    ['drill --json --reporter', ['drill', '--adapter', 'sandbox', '--json', '--reporter', 'junit'], /--reporter/],
    ['drill --json --details', ['drill', '--adapter', 'sandbox', '--json', '--details'], /--details/],
    [
      'drill --reporter junit --details',
      ['drill', '--adapter', 'sandbox', '--reporter', 'junit', '--details'],
      /--details/,
    ],
  ])('%s', async (_name, args, option) => {
    const r = await run(args);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(option);
    expect(existsSync(join(dir, 'x.jsonl')) || existsSync('x.jsonl')).toBe(false);
  });
});

describe('the ledger command a refusal suggests reads the same ledger, run as suggested', () => {
  it.each([
    ['ledger show of an id not held', ['ledger', 'show', 'no-such-op']],
    ['ledger resolve of an id not held', ['ledger', 'resolve', 'no-such-op', '--abandon']],
    [
      'ledger resolve of a stale packet',
      ['ledger', 'resolve', '@P', '--abandon', '--handoff-at', '2020-01-01T00:00:00Z'],
    ],
  ])('%s, given --db and --config', async (_name, args) => {
    const r = await fresh({ with: [] }, [...args, '--db', work, '--config', config]);
    // ls or show with the words after it, up to the end of the command (no default ledger is found from here)
    const suggested = /retrysafe (ledger (?:ls|show)(?: (?!lists)[^\s);]+)*)/.exec(r.err)?.[1];
    expect(suggested, r.err).toBeDefined();
    expect((await run(suggested!.split(' '))).code, suggested).toBe(0);
  });
});

describe('ledger resolve-all builds the adapters of --config once', () => {
  it('not once more per operation', async () => {
    (globalThis as { countingAdapterBuilds?: number }).countingAdapterBuilds = 0;
    const r = await run(['ledger', 'resolve-all', '--config', config, '--resume', '--force', '--dry-run', '--json']);
    expect(JSON.parse(r.out)).toMatchObject({ matched: 2 });
    expect((globalThis as { countingAdapterBuilds?: number }).countingAdapterBuilds).toBe(1);
  });
});

describe('ledger verify --file with RETRYSAFE_CONFIG set', () => {
  it('checks the file: the variable is not an option given, as with --db', async () => {
    const file = join(dir, 'export.jsonl');
    expect((await run(['ledger', 'export', '--db', db, '--out', file])).code).toBe(0);
    process.env.RETRYSAFE_CONFIG = config;
    try {
      const r = await run(['ledger', 'verify', '--file', file]);
      expect(r.err).toBe('');
      expect(r.code).toBe(0);
    } finally {
      delete process.env.RETRYSAFE_CONFIG;
    }
    expect(readFileSync(file, 'utf8')).toContain(ids.U);
  });
});

// Every option of every command, and what shows it is read. `with`/`without`: a run with these words answers otherwise
// than one without (the rest of the command line alike, on a fresh copy of the ledger; `locked`: while another
// connection holds it). `shownIn`: a test elsewhere, for the slow commands, whose title (or words) that file holds.
// A new option without a line here fails the first test below.
type Check =
  | {
      readonly with: readonly string[];
      readonly without?: readonly string[];
      /** The words naming the ledger (default --db of the copy). */
      readonly target?: readonly string[];
      readonly locked?: true;
      readonly env?: Readonly<Record<string, string>>;
    }
  | { readonly shownIn: readonly [file: string, words: string] };

const outFile = join(dir, 'out.jsonl');
const exported = join(dir, 'exported.jsonl');
const cardsDir = join(dir, 'cards');
const partial = join(dir, 'partial.yaml');
const LEDGER_TARGET: Record<string, Check> = {
  db: { target: [], with: ['--db', work] },
  schema: { with: ['--schema', 'app'] },
  busyTimeout: { locked: true, with: ['--busy-timeout', '50'], without: ['--busy-timeout', '60'] },
  config: { target: [], with: ['--config', config] },
  json: { with: ['--json'] },
};
const abandon = ['--abandon'];
/** LEDGER_TARGET's checks, each with `words` in both runs. */
const withTarget = (words: readonly string[]): Record<string, Check> =>
  Object.fromEntries(
    Object.entries(LEDGER_TARGET).map(([k, c]) => {
      const { with: given, without = [], ...rest } = c as Extract<Check, { with: unknown }>;
      return [k, { ...rest, with: [...words, ...given], without: [...words, ...without] }];
    }),
  );

/** `@U`…: the ids of the ledger above. */
const CHECKS: Record<string, { readonly base: readonly string[]; readonly options: Record<string, Check> }> = {
  drill: {
    base: ['--adapter', 'sandbox', '--operation', 'x'],
    options: {
      adapter: { with: ['--adapter', 'stripe'] },
      module: { with: ['--module', join(dir, 'no-such.mjs')] },
      config: { with: ['--config', join(dir, 'no-such.json')] },
      scenario: { with: ['--scenario', 'no-such'] },
      operation: { with: ['--operation', 'y'] },
      seed: { shownIn: ['drill.test.ts', "'--seed', '7'"] },
      out: { shownIn: ['drill.test.ts', 'a summary per drill, drill.json and report.html'] },
      details: { shownIn: ['fixes.test.ts', '--details prints every row'] },
      reporter: { shownIn: ['fixes.test.ts', '--reporter junit prints JUnit XML'] },
      json: { shownIn: ['drill.test.ts', 'exits 0 with pure JSON on stdout'] },
    },
  },
  cards: {
    base: ['--adapter', 'sandbox'],
    options: {
      adapter: { with: ['--adapter', 'stripe'] },
      module: { with: ['--module', join(dir, 'no-such.mjs')] },
      config: { with: ['--config', join(dir, 'no-such.json')] },
      format: { with: ['--format', 'json'] },
      check: { with: ['--check', '--dir', cardsDir] },
      write: { with: ['--write', '--dir', cardsDir] },
      dir: { with: ['--check', '--dir', cardsDir], without: ['--check'] },
      json: { with: ['--json'] },
    },
  },
  'cards init': {
    base: ['--from', partial],
    options: {
      from: { shownIn: ['cards-init.test.ts', 'fills what the file has'] },
      out: { with: ['--out', outFile] },
      interactive: { shownIn: ['cards-init.test.ts', 'asks field by field'] },
      json: { with: ['--json'] },
    },
  },
  'cards validate': { base: [config], options: { json: { with: ['--json'] } } },
  'ledger ls': {
    base: [],
    options: { ...LEDGER_TARGET, state: { with: ['--state', 'succeeded'] }, limit: { with: ['--limit', '1'] } },
  },
  'ledger show': {
    base: ['@R'],
    options: { ...LEDGER_TARGET, showBy: { with: ['--show-by'] } },
  },
  'ledger verify': {
    base: [],
    options: {
      db: { target: [], with: ['@U', '--db', work], without: ['@U'] },
      config: { target: [], with: ['@U', '--config', config], without: ['@U'] },
      schema: { with: ['@U', '--schema', 'app'], without: ['@U'] },
      busyTimeout: { locked: true, with: ['@U', '--busy-timeout', '50'], without: ['@U', '--busy-timeout', '60'] },
      json: { with: ['@U', '--json'], without: ['@U'] },
      all: { with: ['--all'], without: ['@U'] },
      file: { target: [], with: ['--file', exported], without: ['@U', '--db', work] },
      allowUnkeyed: {
        with: ['@U', '--allow-unkeyed'],
        without: ['@U'],
        env: { RETRYSAFE_RECEIPT_KEYS: 'k1:0123456789abcdef0123' },
      },
    },
  },
  'ledger export': {
    base: [],
    options: {
      ...LEDGER_TARGET,
      json: { with: ['--out', outFile, '--json'], without: ['--out', outFile] },
      out: { with: ['--out', outFile] },
      state: { with: ['--state', 'succeeded'] },
    },
  },
  // The first prune run imports every built-in adapter (their cards set the retention floor): about 2 s, once.
  'ledger prune': {
    base: ['--older-than', '3650d'],
    options: {
      ...LEDGER_TARGET,
      olderThan: { with: ['--older-than', '0d'] },
      export: { with: ['--export', outFile] },
      dryRun: { with: ['--older-than', '0d', '--force', '--dry-run'], without: ['--older-than', '0d', '--force'] },
      unknownRetention: { with: ['--unknown-retention', '36500d'] },
      force: { with: ['--older-than', '0d', '--force'], without: ['--older-than', '0d'] },
      state: {
        with: ['--older-than', '0d', '--force', '--state', 'abandoned'],
        without: ['--older-than', '0d', '--force'],
      },
    },
  },
  'ledger handoffs': { base: [], options: LEDGER_TARGET },
  'ledger resolve': {
    base: ['@P'],
    options: {
      ...withTarget(abandon),
      resume: { with: ['--resume'], without: abandon },
      markDone: { with: ['--mark-done', 'ref-1'], without: abandon },
      abandon: { with: abandon, without: ['--mark-done', 'ref-1'] },
      resendWith: { with: ['--resend-with', config], without: abandon },
      force: { with: [...abandon, '--force'], without: abandon },
      by: { shownIn: ['fixes.test.ts', 'with who did it in each receipt'] },
      handoffAt: { with: [...abandon, '--handoff-at', '2020-01-01T00:00:00.000Z'], without: abandon },
    },
  },
  'ledger resolve-all': {
    base: [],
    options: {
      ...withTarget(abandon),
      operation: { with: [...abandon, '--operation', 'x.y'], without: abandon },
      reason: { with: [...abandon, '--reason', 'lookup-window-exhausted'], without: abandon },
      id: { with: [...abandon, '--id', '@U'], without: abandon },
      account: { with: [...abandon, '--account', 'acme'], without: abandon },
      resume: {
        with: ['--resume', '--config', config, '--dry-run'],
        without: [...abandon, '--config', config, '--dry-run'],
      },
      abandon: {
        with: [...abandon, '--config', config, '--dry-run'],
        without: ['--resume', '--config', config, '--dry-run'],
      },
      force: {
        with: ['--resume', '--force', '--config', config, '--dry-run'],
        without: ['--resume', '--config', config, '--dry-run'],
      },
      dryRun: { with: [...abandon, '--dry-run'], without: abandon },
      by: { shownIn: ['fixes.test.ts', 'with who did it in each receipt'] },
    },
  },
  probe: { base: [], options: {} }, // its options are retrysafe-mcp probe's, passed through: checked below
  demo: {
    base: [],
    options: {
      db: { shownIn: ['demo.test.ts', '--db of a ledger that already holds operations'] },
      json: { shownIn: ['demo.test.ts', '--json: one business effect per step'] },
    },
  },
  help: { base: ['ledger', 'ls'], options: { json: { with: ['--json'] } } },
};

/** Runs `check` on a fresh copy of the ledger, with its variables set and the copy locked if it says so. */
async function fresh(check: Extract<Check, { with: unknown }>, args: readonly string[]) {
  for (const f of [`${work}-wal`, `${work}-shm`, outFile]) rmSync(f, { force: true });
  copyFileSync(db, work);
  const lock = check.locked ? new DatabaseSync(work) : null;
  lock?.exec('PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; UPDATE retrysafe_operations SET state = state');
  Object.assign(process.env, check.env);
  try {
    return await run(args.map((a) => (a.startsWith('@') ? ids[a.slice(1) as keyof typeof ids] : a)));
  } finally {
    for (const k of Object.keys(check.env ?? {})) delete process.env[k];
    lock?.exec('ROLLBACK');
    lock?.close();
  }
}

describe('every option of every command is read', () => {
  beforeAll(async () => {
    expect((await run(['ledger', 'export', '--db', db, '--out', exported])).code).toBe(0);
    writeFileSync(partial, PARTIAL_CARD);
  });

  it('every option has a line above, and every line an option', () => {
    const lines = (c: CommandConfig) =>
      Object.keys(CHECKS[c.name]?.options ?? {}).map((k) => `${c.name} --${kebab(k)}`);
    const options = (c: CommandConfig) =>
      c.name === 'probe' ? [] : Object.keys(c.options ?? {}).map((k) => `${c.name} --${kebab(k)}`);
    const commands = COMMANDS.filter((c) => c.run);
    expect(commands.flatMap(lines).sort()).toEqual(commands.flatMap(options).sort());
  });

  it("probe takes retrysafe-mcp probe's options, which its parser reads, and --json", () => {
    const probe = COMMANDS.find((c) => c.name === 'probe')!;
    expect(Object.keys(probe.options ?? {})).toEqual([...Object.keys(PROBE_COMMAND.options), 'json']);
  });

  const rows = Object.entries(CHECKS).flatMap(([name, { base, options }]) =>
    Object.entries(options).map(([key, check]) => [`${name} --${kebab(key)}`, name, base, check] as const),
  );
  it.each(rows)('%s', async (_title, name, base, check) => {
    if ('shownIn' in check) {
      const [file, words] = check.shownIn;
      expect(readFileSync(join(import.meta.dirname, file), 'utf8')).toContain(words);
      return;
    }
    const target = check.target ?? (name.startsWith('ledger ') ? ['--db', work] : []);
    const args = (words: readonly string[]) => [...name.split(' '), ...base, ...target, ...words];
    const given = await fresh(check, args(check.with));
    const left = await fresh(check, args(check.without ?? []));
    expect(given).not.toEqual(left);
  });
});
