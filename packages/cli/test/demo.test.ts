import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN, type CliRun, cli, records, tempDir } from './helpers.js';

describe('retrysafe demo', () => {
  // One `demo --db --json` run: its report and ledger are read by the --json test, and a copy of its ledger is the
  // ledger a second demo run is refused on.
  const db = join(tempDir('demo-json'), 'demo.db');
  let json: CliRun;
  beforeAll(async () => {
    json = await cli(['demo', '--db', db, '--json']);
  }, 120_000);

  it('runs the scripted agent flow end to end on SQLite and exits 0 (text, as a newcomer sees it)', async () => {
    // No --db: the demo makes its own ledger dir under os.tmpdir(), here the test's dir (removed afterwards), whose
    // name has a space: the commands the demo ends with must run as pasted into a shell all the same.
    const dir = join(tempDir('demo-text'), 'my tmp');
    mkdirSync(dir);
    const r = await cli(['demo'], { cwd: dir, env: { TMPDIR: dir } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const titles = [
      'Send a mail',
      'Update a CRM contact',
      'Open a support ticket',
      'Create an invoice',
      'Charge with a bad parameter',
    ];
    expect(titles.filter((t) => !r.stdout.includes(t))).toEqual([]);
    expect(r.stdout).toContain('All 5 steps held');
    expect(r.stdout.match(/✓ held/g)).toHaveLength(5);
    const pasted = r.stdout.split('\n').flatMap((l) => /^\s+retrysafe (ledger .*)$/.exec(l)?.[1] ?? []);
    expect(pasted).toHaveLength(2);
    for (const line of pasted)
      expect(execFileSync('bash', ['-c', `"${process.execPath}" "${BIN}" ${line}`], { encoding: 'utf8' })).toMatch(
        /stripe\.paymentIntents\.create/,
      );
  });

  it('--json: one business effect per step (none for the rejected charge), the agent re-call adopts, and the ledger shows it all', async () => {
    const r = json;
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ ok: true, ledger: db });
    expect(existsSync(db)).toBe(true);
    const by = Object.fromEntries(report.steps.map((s: any) => [s.operation, s]));
    expect(Object.keys(by)).toEqual([
      'mail.send',
      'contacts.update',
      'tickets.create',
      'invoices.create',
      'paymentIntents.create',
    ]);
    for (const op of ['mail.send', 'contacts.update', 'tickets.create', 'invoices.create']) {
      expect(by[op], op).toMatchObject({ ok: true, providerRecords: 1, expectedRecords: 1 });
    }
    // a lost response, then the agent calls again: the same operation comes back and nothing new is sent
    for (const op of ['mail.send', 'tickets.create', 'invoices.create'])
      expect(by[op], op).toMatchObject({ agentCalls: 2, sameResultOnRetry: true, requestsOnRetry: 0 });
    // Stripe's lost invoice: the resend carried the same key and was replayed
    expect(by['invoices.create'].timeline.join('\n')).toMatch(/resend\s+→ replayed/);
    expect(by['invoices.create'].providerKey).toMatch(/^rs-stripe\.invoices\.create:/);
    // mail has no key: reconciled by lookup, never resent
    expect(by['mail.send'].providerKey).toBeNull();
    expect(by['mail.send'].timeline.join('\n')).not.toMatch(/resend/);
    expect(by['paymentIntents.create']).toMatchObject({
      ok: true,
      status: 'handed-off',
      providerRecords: 0,
      requestsAtProvider: 1,
      handoff: { reason: 'rejected' },
    });

    const ls = await cli(['ledger', 'ls', '--db', db, '--json']);
    const states = Object.fromEntries(JSON.parse(ls.stdout).map((x: any) => [x.operation, x.state]));
    expect(states).toEqual({
      'msgraph.mail.send': 'succeeded',
      'hubspot.contacts.update': 'succeeded',
      'hubspot.tickets.create': 'succeeded',
      'stripe.invoices.create': 'succeeded',
      'stripe.paymentIntents.create': 'handed-off',
    });
    const handoffs = await cli(['ledger', 'handoffs', '--db', db, '--json']);
    expect(JSON.parse(handoffs.stdout).map((h: any) => h.businessOperationId)).toEqual([
      by['paymentIntents.create'].businessOperationId,
    ]);
  });

  it('--db of a ledger that already holds operations (a second demo run) is refused with exit 2, the ledger unchanged', async () => {
    expect(json.code).toBe(0);
    const twice = join(tempDir('demo-twice'), 'demo.db');
    copyFileSync(db, twice);
    const before = await records(twice);
    expect(before).toHaveLength(5);
    const again = await cli(['demo', '--db', twice]);
    expect(again.code, again.stderr).toBe(2);
    expect(again.stdout).not.toMatch(/did not hold/);
    expect(again.stderr.trim().split('\n')[0]).toBe(
      `retrysafe: --db ${twice}: this ledger already holds operations; the demo needs a new file (or leave out --db)`,
    );
    expect(await records(twice)).toEqual(before);
  });

  it("--db of another application's SQLite database is refused with exit 2, its tables left as they were", async () => {
    const app = join(tempDir('demo-app'), 'app.db');
    const tables = () => {
      const sqlite = new DatabaseSync(app);
      const names = sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all();
      sqlite.close();
      return names.map((t) => t.name);
    };
    new DatabaseSync(app).exec('CREATE TABLE users (id INTEGER)');
    const r = await cli(['demo', '--db', app]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/the demo needs a new file/);
    expect(tables()).toEqual(['users']);
  });
});
