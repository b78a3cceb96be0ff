// Issue 23: `retrysafe ledger prune` — retention of closed operations, on a real SQLite ledger file.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { asBusinessOperationId, type Duration, type ProviderKey, type RetrySafetyCard } from '@retrysafe/contract';
import { durationMs, retentionFloor } from '@retrysafe/contract/rules';
import { sealReceipt } from '@retrysafe/core/internal';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { claimOf, packetOf } from '@retrysafe/testkit/ledger';
import { beforeAll, describe, expect, it } from 'vitest';
import { editStored } from '../../ledger-sqlite/test/sqlite-tamper.js';
import { cardsOf, loadAdapters, shippedCards } from '../src/registry.js';
import { BIN, cli, openRawSqlite, tempDir } from './helpers.js';

const dir = tempDir('ledger-prune');
const db = join(dir, 'retrysafe.db');
const DAY = 86_400_000;
const now = Date.now();
beforeAll(async () => {
  const ledger = createSqliteLedger({ path: db });
  const succeed = async (name: string, at: number) => {
    const c = await ledger.claim(claimOf(name, { now: at, dispatch: true }));
    if (c.kind !== 'claimed') throw new Error(c.kind);
    const receipt = sealReceipt({
      businessOperationId: asBusinessOperationId(name),
      seq: 1,
      runId: 'run_x' as never,
      attemptId: 'att_x' as never,
      provider: 'sandbox',
      operation: 'sandbox.records.create',
      kind: 'dispatch',
      startedAt: new Date(at).toISOString(),
      finishedAt: new Date(at).toISOString(),
      outcome: 'succeeded',
      decision: { action: 'complete', reason: 'ok' },
      providerKey: `rs-${name}` as ProviderKey,
      requestFingerprint: `sha256:params-${name}`,
      prevHash: null,
    });
    await ledger.setState(
      { businessOperationId: c.record.businessOperationId, fence: c.record.fence },
      { state: 'succeeded', lastOutcome: 'succeeded', providerRef: `ref-${name}`, now: at, receipt },
    );
  };
  await succeed('old-done', now - 40 * DAY);
  await succeed('recent-done', now - 2 * 3_600_000);
  const h = await ledger.claim(claimOf('old-handed', { now: now - 40 * DAY }));
  if (h.kind !== 'claimed') throw new Error(h.kind);
  await ledger.handOff(
    { businessOperationId: h.record.businessOperationId, fence: 1 },
    packetOf('old-handed', {
      explanation: 'test',
      lastKnown: { outcome: 'unknown' },
      safeNextActions: [],
      createdAt: new Date(now - 40 * DAY).toISOString(),
    }),
    now - 40 * DAY,
  );
  await ledger.claim(claimOf('old-open', { now: now - 40 * DAY })); // claimed 40 days ago, lease long expired: open, never pruned
  await ledger.close();
}, 60_000);

const ids = async () => {
  const ledger = createSqliteLedger({ path: db });
  try {
    return (await ledger.list()).map((r) => r.businessOperationId).sort();
  } finally {
    await ledger.close();
  }
};

describe('retrysafe ledger prune', () => {
  it('refuses an age below the key retention of the cards it knows (exit 2, says why), and deletes nothing', async () => {
    const r = await cli(['ledger', 'prune', '--older-than', '1h', '--db', db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/key retention of .* plus its clock-skew margin/);
    expect(r.stderr).toMatch(/, or --force\n/); // the flag, not the library's option name
    expect(await ids()).toEqual(['old-done', 'old-handed', 'old-open', 'recent-done']);
  });

  it('the key retention floor it reports is the age it refuses below: that age is accepted, a minute less is not', async () => {
    const r = await cli(['ledger', 'prune', '--older-than', '30d', '--dry-run', '--db', db], {
      env: { NO_COLOR: '1' },
    });
    const floor = /^key retention floor: (\S+) \(/m.exec(r.stdout)?.[1];
    expect(floor, r.stdout).toBeDefined();
    const at = (age: string) => cli(['ledger', 'prune', '--older-than', age, '--dry-run', '--db', db]);
    expect((await at(floor!)).code).toBe(0);
    expect((await at(`${durationMs(floor as Duration) / 60_000 - 1}m`)).code).toBe(2);
  });

  it('an --older-than further back than any date is a one-line usage error (exit 2), no stack, nothing deleted', async () => {
    for (const args of [['--dry-run'], []]) {
      const r = await cli(['ledger', 'prune', '--older-than', '99999999999d', '--db', db, ...args]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/^retrysafe: --older-than 99999999999d: /);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    expect(await ids()).toEqual(['old-done', 'old-handed', 'old-open', 'recent-done']);
  });

  it("with --config, the floor counts its `type: http` operations' cards too (retention.md)", async () => {
    // The docs' HTTP example, with its orders card keeping keys for 30 days: longer than any built-in card.
    const http = join(dir, 'http-api');
    cpSync(join(import.meta.dirname, '..', '..', '..', 'packages', 'config', 'examples', 'http-api'), http, {
      recursive: true,
    });
    const card = join(http, 'orders.card.yaml');
    const text = readFileSync(card, 'utf8');
    const at = text.indexOf('value:', text.indexOf('\nretention:'));
    writeFileSync(card, `${text.slice(0, at)}value: 30d${text.slice(text.indexOf('\n', at))}`);
    const config = join(http, 'retrysafe.yaml');
    const r = await cli(['ledger', 'prune', '--older-than', '10d', '--config', config, '--db', db]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/key retention of acme\.orders\.create plus its clock-skew margin/);
    expect(await ids()).toEqual(['old-done', 'old-handed', 'old-open', 'recent-done']);
    // Without the config only the built-in cards set the floor: the same age is accepted (dry run).
    expect((await cli(['ledger', 'prune', '--older-than', '10d', '--dry-run', '--db', db])).code).toBe(0);
  });

  it("with --config, the policy's clockSkewMarginMs is the margin in force (the runner's), widening the floor", async () => {
    const config = join(dir, 'wide-margin.yaml');
    const http = join(
      import.meta.dirname,
      '..',
      '..',
      '..',
      'packages',
      'config',
      'examples',
      'http-api',
      'retrysafe.yaml',
    );
    const text = readFileSync(http, 'utf8').replace(/\.\/(\w+\.card\.yaml)/g, (_m, f: string) =>
      join(dirname(http), f),
    );
    writeFileSync(config, `${text}\npolicy:\n  clockSkewMarginMs: ${20 * DAY}\n`);
    const r = await cli(['ledger', 'prune', '--older-than', '10d', '--dry-run', '--config', config, '--db', db]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/key retention of .* plus its clock-skew margin/);
    // 1 d retention + the 20 d margin + the late-apply allowance (unknown on the card: one more margin).
    expect(r.stderr).toMatch(/41d/);
  });

  it('refuses while the ledger holds old operations of a card whose key retention is unknown; --unknown-retention gives it', async () => {
    const other = join(dir, 'unknown-retention.db');
    const ledger = createSqliteLedger({ path: other });
    const c = await ledger.claim(
      claimOf('old-ticket', {
        now: now - 40 * DAY,
        dispatch: true,
        provider: 'hubspot',
        operation: 'hubspot.tickets.create',
      }),
    );
    if (c.kind !== 'claimed') throw new Error(c.kind);
    await ledger.setState(c.record, { state: 'succeeded', lastOutcome: 'succeeded', now: now - 40 * DAY });
    await ledger.close();
    const count = async () => {
      const l = createSqliteLedger({ path: other });
      try {
        return (await l.list()).length;
      } finally {
        await l.close();
      }
    };
    const r = await cli(['ledger', 'prune', '--older-than', '30d', '--db', other]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/hubspot\.tickets\.create/);
    expect(r.stderr).toMatch(/--unknown-retention, or --force\n/);
    expect(await count()).toBe(1);
    const longer = await cli(['ledger', 'prune', '--older-than', '30d', '--unknown-retention', '30d', '--db', other]);
    expect(longer.code, longer.stderr).toBe(2);
    expect(await count()).toBe(1);
    const ok = await cli(['ledger', 'prune', '--older-than', '30d', '--unknown-retention', '7d', '--db', other]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(await count()).toBe(0);
  });

  it('--force past the unknown-retention refusal alone says it forced, for which card, in text and JSON', async () => {
    const seed = async (path: string) => {
      const ledger = createSqliteLedger({ path });
      const ticket = { now: now - 40 * DAY, dispatch: true, provider: 'hubspot', operation: 'hubspot.tickets.create' };
      const c = await ledger.claim(claimOf('old-ticket', ticket));
      if (c.kind !== 'claimed') throw new Error(c.kind);
      await ledger.setState(c.record, { state: 'succeeded', lastOutcome: 'succeeded', now: now - 40 * DAY });
      await ledger.close();
    };
    const text = join(dir, 'forced-unknown-text.db');
    await seed(text);
    const r = await cli(['ledger', 'prune', '--older-than', '30d', '--force', '--db', text]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/pruned 1 operation/);
    expect(r.stdout).toMatch(/hubspot\.tickets\.create.*key retention is unknown.*: forced/);
    const json = join(dir, 'forced-unknown-json.db');
    await seed(json);
    const j = await cli(['ledger', 'prune', '--older-than', '30d', '--force', '--db', json, '--json']);
    expect(j.code, j.stderr).toBe(0);
    expect(JSON.parse(j.stdout)).toMatchObject({
      pruned: 1,
      floor: { forced: true, below: false, unknownHeld: ['hubspot.tickets.create'] },
    });
  });

  it("with --config, a `type: module` adapter's cards set the floor too, without its credentials in the environment", async () => {
    const config = join(dir, 'module-adapter.json');
    const module = join(import.meta.dirname, 'fixtures', 'month-keys-adapter.mjs');
    const adapters = { month: { module, secretsFromEnv: { apiKey: 'MONTH_API_KEY_NOT_SET' } } };
    writeFileSync(config, JSON.stringify({ ledger: db, adapters }));
    const r = await cli(['ledger', 'prune', '--older-than', '10d', '--dry-run', '--config', config, '--db', db]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/key retention of month\.records\.create plus its clock-skew margin/);
    // An adapter that cannot be built is said, not left out of the floor.
    writeFileSync(config, JSON.stringify({ ledger: db, adapters: { gone: { module: join(dir, 'no-such.mjs') } } }));
    const gone = await cli(['ledger', 'prune', '--older-than', '10d', '--dry-run', '--config', config, '--db', db]);
    expect(gone.code, gone.stderr).toBe(2);
    expect(gone.stderr).toMatch(/cards cannot be read/);
    expect(gone.stderr).not.toMatch(/\n\s+at /);
  });

  it('explains the retention floor in its help', async () => {
    const r = await cli(['ledger', 'prune', '--help']);
    expect(r.stdout).toMatch(/retention\.minimum/);
    expect(r.stdout).toMatch(/--export <file>/);
  });

  it('--dry-run counts, deletes nothing; --state of an open or handed-off state is refused', async () => {
    const dry = await cli(['ledger', 'prune', '--older-than', '30d', '--dry-run', '--db', db, '--json']);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ pruned: 1, byState: { succeeded: 1 }, dryRun: true });
    expect(await ids()).toEqual(['old-done', 'old-handed', 'old-open', 'recent-done']);
    expect((await cli(['ledger', 'prune', '--older-than', '30d', '--state', 'handed-off', '--db', db])).code).toBe(2);
  });

  it('a closed row it cannot read is kept and named (exit 1); the others are still pruned', async () => {
    const copy = join(tempDir('ledger-prune-cut'), 'retrysafe.db');
    cpSync(db, copy);
    const raw = openRawSqlite(copy);
    editStored(raw, 'recent-done', (l) => ({ ...l, record: l.record.slice(0, 25) }));
    raw.close();
    const r = await cli(['ledger', 'prune', '--older-than', '1h', '--force', '--db', copy, '--json']);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/warning: operation recent-done cannot be read/);
    expect(JSON.parse(r.stdout)).toMatchObject({ pruned: 1, unreadable: ['recent-done'] });
    const left = openRawSqlite(copy, { readonly: true });
    expect(left.prepare("SELECT count(*) AS n FROM retrysafe_operations WHERE id = 'recent-done'").get()).toEqual({
      n: 1,
    });
    left.close();
  });

  it('prunes closed operations older than the age, exporting their receipts first; the export verifies offline', async () => {
    // A name with a space: the verify command the output suggests must run as pasted into a shell.
    const out = join(dir, 'pruned receipts.jsonl');
    const r = await cli(['ledger', 'prune', '--older-than', '30d', '--export', out, '--db', db]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/pruned 1 operation \(1 succeeded\)/);
    expect(existsSync(out)).toBe(true);
    expect(readFileSync(out, 'utf8')).toMatch(/"businessOperationId":"old-done"/);
    const suggested = /verify offline: retrysafe (ledger verify .*)\)$/m.exec(r.stdout)?.[1];
    expect(suggested, r.stdout).toBeDefined();
    expect(execFileSync('bash', ['-c', `"${process.execPath}" "${BIN}" ${suggested}`], { encoding: 'utf8' })).toMatch(
      /1 chain intact/,
    );
    expect(await ids()).toEqual(['old-handed', 'old-open', 'recent-done']);
    // An existing export file is never overwritten or appended to.
    expect((await cli(['ledger', 'prune', '--older-than', '30d', '--export', out, '--db', db])).code).toBe(2);
  });

  it('--export when nothing is old enough says the file was not written (it does not exist)', async () => {
    const out = join(dir, 'nothing.jsonl');
    const r = await cli(['ledger', 'prune', '--older-than', '30d', '--export', out, '--db', db]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/pruned 0 operations/);
    expect(existsSync(out)).toBe(false);
    expect(r.stdout).not.toMatch(/written to/);
    expect(r.stdout).toContain(`nothing to export: ${out} was not written`);
  });

  it('--force prunes below the floor (the two-hour-old success), still never the open or handed-off ones', async () => {
    const r = await cli(['ledger', 'prune', '--older-than', '1h', '--force', '--db', db, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ pruned: 1, floor: { forced: true } });
    expect(await ids()).toEqual(['old-handed', 'old-open']);
  });
});

describe('ledger prune reads the built-in cards without the adapters', () => {
  it('imports no adapter, sandbox or vendor SDK: only their plain-data cards', async () => {
    const hook = join(import.meta.dirname, 'fixtures', 'log-imports.mjs');
    const r = await cli(['ledger', 'prune', '--older-than', '400d', '--dry-run', '--db', db], {
      env: { NODE_OPTIONS: `--import ${hook}` },
    });
    expect(r.code, r.stderr).toBe(0);
    const imported = r.stderr.split('\n').flatMap((l) => (l.startsWith('imports ') ? [l.slice(8)] : []));
    expect(imported).toContain('@retrysafe/stripe/cards');
    const vendors = /^(stripe|resend|axios|@octokit|@hubspot|@slack|@microsoft)\b/;
    const adapters = /^@retrysafe\/(stripe|msgraph|hubspot|slack|resend|github|http)(\/sandbox)?$/;
    expect(imported.filter((s) => vendors.test(s) || adapters.test(s) || s.endsWith('/sandbox'))).toEqual([]);
  });

  it('those cards set the floor as the cards of the drills do, operation by operation', async () => {
    const floors = (cards: readonly RetrySafetyCard[]) =>
      cards.map((c) => [c.operation, retentionFloor([c]).ms, retentionFloor([c]).unknown.length]).sort();
    const drilled = (await Promise.all((await loadAdapters()).map(cardsOf))).flat().map((c) => c.card);
    expect(floors(await shippedCards())).toEqual(floors(drilled));
  });
});
