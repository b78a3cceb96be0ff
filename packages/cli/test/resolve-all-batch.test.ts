import { execFileSync } from 'node:child_process';
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { createDrillClock } from '@retrysafe/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { editStored, type StoredLines } from '../../ledger-sqlite/test/sqlite-tamper.js';
import { type FaultySandbox, startFaultySandbox } from './faulty-sandbox.js';
import { BIN, cli, cliJson, openRawSqlite, REPO, tempDir } from './helpers.js';

// `ledger resolve-all` works through a list it read once, on a ledger other people and processes write meanwhile.
let sandbox: FaultySandbox;

/** A ledger in its own dir with `n` handed-off operations, oldest first (the list shows them newest first). */
async function handoffs(
  label: string,
  fault: 'reject' | 'lose',
  n: number,
  accounts: (string | undefined)[] = [],
  agoMs = 10 * 60_000,
) {
  const dir = tempDir(label);
  const db = join(dir, 'retrysafe.db');
  const config = join(dir, 'retrysafe.json');
  // By default minutes before the CLI runs: a resume within the provider key's retention re-sends under the same key.
  const clock = createDrillClock(Date.now() - agoMs);
  const ledger = createSqliteLedger({ path: db });
  const runner = createRunner({ ledger, clock });
  const ids: string[] = [];
  sandbox.setFault(fault);
  for (let i = 0; i < n; i++) {
    clock.advance(60_000);
    const account = accounts[i];
    const adapter = account === undefined ? sandbox.adapter : { ...sandbox.adapter, account };
    const r = await runner.run(adapter, 'records.create', { params: { ref: `${label}-${i}`, amount: 5 } });
    expect(r.status).toBe('handed-off');
    ids.push(r.businessOperationId);
  }
  await ledger.close();
  sandbox.setFault('pass');
  sandbox.writeConfig(config, db);
  return { dir, db, config, ids };
}

/** A row's params stored sealed under a key nobody here holds ('gone'), as a process with another key writes them. */
const sealParams = (l: StoredLines): StoredLines => {
  const sealed = { $retrysafeEncrypted: 'aes-256-gcm/v1', kid: 'gone', iv: 'AA', tag: 'AA', data: 'AA' };
  return { ...l, record: JSON.stringify({ ...JSON.parse(l.record), params: sealed }) };
};

/** While the first of two operations is re-sent, `edit` rewrites the other's stored row: `first` and `other` once it ran. */
function editOtherOnFirstSend(db: string, ids: string[], edit: (l: StoredLines) => StoredLines) {
  const seen = { first: '', other: '' };
  sandbox.onRequest((request) => {
    sandbox.onRequest(null);
    seen.first = ids.find((id) => String(request.headers['idempotency-key']).endsWith(id.split(':')[1]!))!;
    seen.other = ids.find((id) => id !== seen.first)!;
    const raw = openRawSqlite(db);
    editStored(raw, seen.other, edit);
    raw.close();
  });
  return seen;
}

const rowsOf = (body: { rows: { businessOperationId: string }[] }) =>
  Object.fromEntries(body.rows.map((r) => [r.businessOperationId, r])) as Record<string, any>;

beforeAll(async () => {
  sandbox = await startFaultySandbox('pass');
});

describe('ledger resolve-all on a ledger that changes under it', () => {
  it('one operation it cannot resolve does not stop the others: each row says what happened, exit 1', async () => {
    const { dir, db, ids } = await handoffs('one-bad', 'reject', 3);
    const [older, middle, newer] = ids as [string, string, string];
    // The middle one's receipt chain was edited outside retrysafe: resolving it is refused.
    const raw = openRawSqlite(db);
    editStored(raw, middle, (l) => ({
      ...l,
      receipts: [JSON.stringify({ ...JSON.parse(l.receipts[0]!), outcome: 'succeeded' }), ...l.receipts.slice(1)],
    }));
    raw.close();

    const r = await cliJson(['ledger', 'resolve-all', '--db', db, '--abandon'], dir);
    expect(r.code).toBe(1);
    expect(r.body).toMatchObject({ ok: false, matched: 3 });
    const rows = rowsOf(r.body);
    expect(rows[newer].result).toMatchObject({ status: 'resolved', state: 'abandoned' });
    expect(rows[older].result).toMatchObject({ status: 'resolved', state: 'abandoned' });
    expect(rows[middle]).toMatchObject({
      plan: 'abandon',
      result: null,
      error: expect.stringMatching(/chain is broken/),
    });
    const left = await cliJson(['ledger', 'handoffs', '--db', db], dir);
    expect(left.body.map((x: { businessOperationId: string }) => x.businessOperationId)).toEqual([middle]);
  });

  it('--resume of one whose params are sealed with a key this process lacks: that row refused, nothing sent for it, the others resumed', async () => {
    const { dir, db, config, ids } = await handoffs('sealed', 'lose', 3);
    const [older, middle, newer] = ids as [string, string, string];
    const raw = openRawSqlite(db);
    editStored(raw, middle, sealParams);
    raw.close();
    const before = sandbox.proxy.requests.length;
    const r = await cliJson(['ledger', 'resolve-all', '--config', config, '--resume'], dir);
    expect(r.code).toBe(1);
    const rows = rowsOf(r.body);
    expect(rows[newer].result).toMatchObject({ status: 'done' });
    expect(rows[older].result).toMatchObject({ status: 'done' });
    expect(rows[middle]).toMatchObject({ result: null, error: expect.stringMatching(/encrypted with key 'gone'/) });
    expect(sandbox.proxy.requests.length - before).toBe(2);
  });

  it('--resume of one whose params were sealed with a key this process lacks after the list was read: that row refused, the others reported', async () => {
    const { dir, db, config, ids } = await handoffs('sealed-since', 'lose', 2);
    // While the first is resumed, the other's params are stored sealed under a key this process does not hold.
    const seen = editOtherOnFirstSend(db, ids, sealParams);
    const before = sandbox.proxy.requests.length;
    const r = await cliJson(['ledger', 'resolve-all', '--config', config, '--resume'], dir);
    sandbox.onRequest(null);
    expect(r.code).toBe(1);
    const rows = rowsOf(r.body);
    expect(rows[seen.first].result).toMatchObject({ status: 'done' });
    expect(rows[seen.other]).toMatchObject({ result: null, error: expect.stringMatching(/encrypted with key 'gone'/) });
    expect(sandbox.proxy.requests.length - before).toBe(1);
  });

  it('--resume reads the config file once: edited while the first is re-sent, the others go through what was read', async () => {
    const { dir, config, ids } = await handoffs('config-once', 'lose', 2);
    sandbox.onRequest(() => {
      sandbox.onRequest(null);
      writeFileSync(config, '{ not json');
    });
    const r = await cliJson(['ledger', 'resolve-all', '--config', config, '--resume'], dir);
    sandbox.onRequest(null);
    expect(r.body).toMatchObject({ ok: true, matched: 2 });
    for (const id of ids) expect(rowsOf(r.body)[id].result).toMatchObject({ status: 'done' });
  });

  it('an operation handed off again meanwhile with resume marked not safe is refused, not forced (nothing sent for it)', async () => {
    const { dir, db, config, ids } = await handoffs('re-handed', 'lose', 2);
    // While the first is resumed, someone else resumed the other one, and it came back as not safe to resume.
    const seen = editOtherOnFirstSend(db, ids, (l) => {
      const record = JSON.parse(l.record);
      for (const a of record.handoff.safeNextActions)
        if (a.action === 'resume') Object.assign(a, { safe: false, why: 'the outcome is unknown now' });
      return { ...l, record: JSON.stringify(record) };
    });
    const before = sandbox.proxy.requests.length;
    const r = await cliJson(['ledger', 'resolve-all', '--config', config, '--resume'], dir);
    sandbox.onRequest(null);
    const { first, other } = seen;
    const rows = rowsOf(r.body);
    expect(rows[first].result).toMatchObject({ status: 'done' });
    expect(sandbox.proxy.requests.length - before).toBe(1); // the first one's resend only
    expect(rows[other].result).toBeNull();
    expect(rows[other].error).toMatch(/not safe/);
    expect(r.code).toBe(1);
    const left = await cliJson(['ledger', 'handoffs', '--db', db], dir);
    expect(left.body.map((x: { businessOperationId: string }) => x.businessOperationId)).toEqual([other]);
  });
});

describe('ledger resolve-all --reason', () => {
  it('a reason that is no handoff reason is a usage error naming the known ones, not "nothing to do"', async () => {
    const { dir, db, ids } = await handoffs('reason-typo', 'reject', 1);
    const r = await cliJson(['ledger', 'resolve-all', '--db', db, '--abandon', '--reason', 'rejectd'], dir);
    expect(r.code).toBe(2);
    expect(r.body).toMatchObject({ ok: false, error: { code: 'USAGE' } });
    expect(r.body.error.message).toMatch(/unknown handoff reason 'rejectd' \(known: rejected, retry-exhausted, /);
    const left = await cliJson(['ledger', 'handoffs', '--db', db], dir);
    expect(left.body.map((x: { businessOperationId: string }) => x.businessOperationId)).toEqual(ids);
    const known = await cliJson(['ledger', 'resolve-all', '--db', db, '--abandon', '--reason', 'rejected'], dir);
    expect(known.body).toMatchObject({ ok: true, matched: 1 });
  });
});

describe('ledger resolve-all --dry-run', () => {
  it('says per row what the real run then does: a broken chain, sealed params, no adapter for the row are refused in both', async () => {
    const { dir, config, db, ids } = await handoffs('dry-per-row', 'lose', 4, [
      undefined,
      undefined,
      undefined,
      'acme',
    ]);
    const [fine, broken, sealed, orphan] = ids as [string, string, string, string];
    const raw = openRawSqlite(db);
    editStored(raw, broken, (l) => ({
      ...l,
      receipts: [JSON.stringify({ ...JSON.parse(l.receipts[0]!), outcome: 'succeeded' }), ...l.receipts.slice(1)],
    }));
    editStored(raw, sealed, sealParams);
    raw.close();
    const args = ['ledger', 'resolve-all', '--config', config, '--resume'];
    const before = sandbox.proxy.requests.length;
    const dry = await cliJson([...args, '--dry-run'], dir);
    const text = await cli([...args, '--dry-run'], { cwd: dir });
    expect(sandbox.proxy.requests.length).toBe(before);
    const real = await cliJson(args, dir);
    const [d, r] = [rowsOf(dry.body), rowsOf(real.body)];
    expect(r[fine].result).toMatchObject({ status: 'done' });
    expect(d[fine]).toMatchObject({ plan: 'resume', result: null });
    expect(d[fine].error).toBeUndefined();
    for (const [id, why] of [
      [broken, /chain is broken/],
      [sealed, /encrypted with key 'gone'/],
      [orphan, /needs the adapter for sandbox\.records\.create/],
    ] as const) {
      expect(r[id], id).toMatchObject({ result: null, error: expect.stringMatching(why) });
      expect(d[id], id).toMatchObject({ result: null, error: r[id].error });
    }
    expect([dry.code, dry.body.ok, real.code]).toEqual([1, false, 1]);
    expect(text.stdout).toMatch(/^Dry run: 1 of 4 handed-off operations would be resumed, 3 refused;/);
    expect(text.stdout).toContain(
      `${broken}  would not be resolved: not resolving ${broken}: its receipt chain is broken`,
    );
  });
});

describe('ledger resolve-all --resume with nothing to resolve and adapters it cannot build', () => {
  it('answers as the real run: adapters the config cannot build are refused by both (exit 2), even with no row to resolve', async () => {
    const { dir } = await handoffs('dry-none', 'lose', 0);
    // The docs' HTTP API example, its ledger this one (./retrysafe.db), its credential variable unset.
    const example = join(REPO, 'packages/config/examples/http-api');
    for (const f of readdirSync(example)) copyFileSync(join(example, f), join(dir, f));
    const args = ['ledger', 'resolve-all', '--config', join(dir, 'retrysafe.yaml'), '--resume'];
    const env = { ACME_AUTH: undefined };
    const real = await cli(args, { cwd: dir, env });
    const dry = await cli([...args, '--dry-run'], { cwd: dir, env });
    expect(real.stderr).toMatch(/environment variable ACME_AUTH is not set/);
    expect([real.code, real.stdout]).toEqual([2, '']);
    expect(dry).toEqual(real);
  });
});

describe('ledger resolve-all --account', () => {
  it('resolves only the operations claimed for the named account, and each row says whose it is', async () => {
    const { dir, db, ids } = await handoffs('accounts', 'reject', 3, ['acme', 'globex', undefined]);
    const [acme, globex, none] = ids as [string, string, string];
    const r = await cliJson(['ledger', 'resolve-all', '--db', db, '--abandon', '--account', 'acme'], dir);
    expect(r.body).toMatchObject({ ok: true, matched: 1 });
    expect(r.body.rows).toEqual([expect.objectContaining({ businessOperationId: acme, account: 'acme' })]);
    const left = await cliJson(['ledger', 'handoffs', '--db', db], dir);
    expect(left.body.map((x: { businessOperationId: string }) => x.businessOperationId).sort()).toEqual(
      [globex, none].sort(),
    );
  });
});

/** Stands for another person's resume that came back handed off again: the stored packet is a later one. */
function handedOffAgain(db: string, id: string, createdAt: string): void {
  const raw = openRawSqlite(db);
  editStored(raw, id, (l) => {
    const record = JSON.parse(l.record);
    return { ...l, record: JSON.stringify({ ...record, handoff: { ...record.handoff, createdAt } }) };
  });
  raw.close();
}

describe('a decision bound to the packet it was shown (--handoff-at)', () => {
  it('ledger show and handoffs print the command bound to the packet; run after a new hand-off it is refused, nothing written', async () => {
    const { dir, db, ids } = await handoffs('bound', 'reject', 1);
    const id = ids[0]!;
    const shown = await cliJson(['ledger', 'show', id, '--db', db], dir);
    const at = shown.body.record.handoff.createdAt as string;
    const bound = `retrysafe ledger resolve ${id} --db ${db} --handoff-at ${at} --resend-with`;
    expect((await cli(['ledger', 'show', id, '--db', db], { cwd: dir })).stdout).toContain(bound);
    expect((await cli(['ledger', 'handoffs', '--db', db], { cwd: dir })).stdout).toContain(bound);
    expect((await cliJson(['ledger', 'handoffs', '--db', db], dir)).body[0]).toMatchObject({ handoffAt: at });
    const later = new Date(Date.parse(at) + 60_000).toISOString();
    handedOffAgain(db, id, later);
    const r = await cliJson(['ledger', 'resolve', id, '--db', db, '--handoff-at', at, '--abandon'], dir);
    expect(r.code).toBe(1);
    expect(r.body.error.message).toMatch(/handed off again .*nothing was sent or written/);
    const after = await cliJson(['ledger', 'show', id, '--db', db], dir);
    expect(after.body.record).toMatchObject({ state: 'handed-off', handoff: { createdAt: later } });
    expect(after.body.receipts).toEqual(shown.body.receipts);
    const now = await cliJson(['ledger', 'resolve', id, '--db', db, '--handoff-at', later, '--abandon'], dir);
    expect(now.body).toMatchObject({ status: 'resolved', state: 'abandoned' });
  });

  it('resolve-all binds each row to the packet it listed: one handed off again meanwhile is not resumed', async () => {
    const { dir, db, config, ids } = await handoffs('bound-all', 'lose', 2);
    // While the first is resumed, someone else resumed the other one, and it came back handed off again (resume
    // still marked safe): not the packet the listing showed.
    let other = '';
    sandbox.onRequest((request) => {
      sandbox.onRequest(null);
      other = ids.find((id) => !String(request.headers['idempotency-key']).endsWith(id.split(':')[1]!))!;
      handedOffAgain(db, other, new Date().toISOString());
    });
    const before = sandbox.proxy.requests.length;
    const r = await cliJson(['ledger', 'resolve-all', '--config', config, '--resume'], dir);
    sandbox.onRequest(null);
    expect(sandbox.proxy.requests.length - before).toBe(1); // the first one's resend only
    expect(rowsOf(r.body)[other]).toMatchObject({ result: null, error: expect.stringMatching(/handed off again/) });
    expect(r.code).toBe(1);
  });
});

/** One hand-off made a day and more ago, its resume marked safe because the provider folds a re-send under the key,
 * which the provider has forgotten since. */
async function agedHandoff(name: string) {
  const DAY = 86_400_000;
  const { dir, config, ids } = await handoffs(name, 'lose', 1, [], DAY + 60 * 60_000);
  const before = sandbox.provider.count();
  sandbox.provider.advance(DAY + 60 * 60_000);
  return { dir, config, id: ids[0] as string, before };
}

/** As agedHandoff, on a provider nothing can look the operation up at: a resume is blind, so refused unforced. */
async function blindHandoff(name: string) {
  const DAY = 86_400_000;
  const forgetful = await startFaultySandbox('lose', undefined, { ...REPLAYING_BEHAVIOUR, lookup: 'none' });
  const dir = tempDir(name);
  const db = join(dir, 'retrysafe.db');
  const config = join(dir, 'retrysafe.json');
  const ledger = createSqliteLedger({ path: db });
  const runner = createRunner({ ledger, clock: createDrillClock(Date.now() - DAY - 60 * 60_000) });
  const r = await runner.run(forgetful.adapter, 'records.create', { params: { ref: `${name}-1`, amount: 5 } });
  await ledger.close();
  expect(r.status === 'handed-off' && r.packet.safeNextActions[0]).toMatchObject({ action: 'resume', safe: true });
  forgetful.setFault('pass');
  forgetful.writeConfig(config, db);
  forgetful.provider.advance(DAY + 60 * 60_000);
  return { forgetful, dir, config, id: r.businessOperationId, before: forgetful.provider.count() };
}

describe('ledger resolve-all --resume --force', () => {
  it('decides each row as ledger resolve --resume --force does: one marked safe by its key with nothing to look it up by is sent, as the person vouched', async () => {
    const { forgetful, dir, config, id, before } = await blindHandoff('forced-all-blind');
    const r = await cliJson(['ledger', 'resolve-all', '--config', config, '--resume', '--force'], dir);
    expect(rowsOf(r.body)[id]).toMatchObject({ plan: 'resume', result: { status: 'done', adopted: false } });
    expect(forgetful.provider.count()).toBe(before + 1);
  });

  it('forces only the rows whose packet marks the resume not safe: one marked safe by its key, now past the key’s retention, is not re-sent blind', async () => {
    const { dir, config, id, before } = await agedHandoff('forced-aged');
    const r = await cliJson(['ledger', 'resolve-all', '--config', config, '--resume', '--force'], dir);
    // Judged again as an unforced resume: past the retention it looks the operation up first and adopts what it finds
    expect(rowsOf(r.body)[id]).toMatchObject({
      plan: 'resume',
      why: expect.stringMatching(/^safe: .*folds/),
      result: { status: 'done', adopted: true },
    });
    expect(sandbox.provider.count()).toBe(before);
  });
});

describe('ledger resolve --resume --force', () => {
  it('of one marked safe by its key, now past the key’s retention: looked up first and adopted, never re-sent blind', async () => {
    const { dir, config, id, before } = await agedHandoff('forced-one');
    const r = await cliJson(['ledger', 'resolve', id, '--config', config, '--resume', '--force'], dir);
    expect(r.body).toMatchObject({ status: 'done', adopted: true });
    expect(sandbox.provider.count()).toBe(before);
  });

  it('of one marked safe by its key, past the retention, with nothing to look it up by: refused unforced, saying resume is no longer safe and what --force risks', async () => {
    const { forgetful, dir, config, id, before } = await blindHandoff('forced-blind');
    const out = await cliJson(['ledger', 'resolve', id, '--config', config, '--resume'], dir);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('resume is no longer safe');
    expect(out.stderr).not.toContain('the handoff packet marks resume as not safe');
    expect(out.stderr).toMatch(
      /--resume --force if you are sure it does not \(it is sent again with nothing looked up first: if the effect exists, it is made twice\)/,
    );
    expect(forgetful.provider.count()).toBe(before);
  });
});

describe('ledger resolve-all opens the ledger once', () => {
  // Per row it would be a new connection pool (PostgreSQL) or client (DynamoDB): strace counts a real process's opens.
  it('for the listing and every row it resolves, as many rows as there are', async () => {
    const { dir, db, ids } = await handoffs('one-open', 'reject', 3);
    const trace = join(dir, 'strace.txt');
    const args = ['-f', '-qq', '-e', 'trace=openat', '-o', trace, process.execPath, BIN];
    const out = execFileSync('strace', [...args, 'ledger', 'resolve-all', '--db', db, '--abandon', '--json'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(rowsOf(JSON.parse(out))[ids[0]!]).toMatchObject({ result: { status: 'resolved', state: 'abandoned' } });
    const opens = readFileSync(trace, 'utf8')
      .split('\n')
      .filter((l) => l.includes(`"${db}"`) && !/= -1 /.test(l));
    expect(opens).toHaveLength(1);
  });
});
