import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { main } from '../src/cli.js';
import { ledgerWithOneClaim, tempDir } from './helpers.js';

const dir = tempDir('adapters-closed');
const db = join(dir, 'retrysafe.db');
const config = join(dir, 'retrysafe.json');
const params = join(dir, 'params.json');
const count = () => (globalThis as { closingAdapter?: { built: number; closed: number } }).closingAdapter;

beforeEach(() => {
  (globalThis as { closingAdapter?: unknown }).closingAdapter = undefined;
});

// Two adapters, the first one's close rejecting: the second is closed all the same.
const module = join(import.meta.dirname, 'fixtures', 'closing-adapter.mjs');
const baseUrl = 'http://127.0.0.1:9';
writeFileSync(
  config,
  JSON.stringify({
    ledger: db,
    adapters: {
      failing: { module, options: { baseUrl, failClose: true } },
      closing: { module, options: { baseUrl } },
    },
  }),
);
writeFileSync(params, JSON.stringify({ ref: 'y' }));
await ledgerWithOneClaim(db, 'op-1');

describe('a command closes every adapter it built, on every path, even when one close fails', () => {
  it.each([
    ['ledger resolve', ['op-1', '--resume']],
    ['ledger resolve', ['no-such-op', '--resume']],
    ['ledger resolve', ['op-1', '--resume', '--handoff-at', '2020-01-01T00:00:00.000Z']],
    ['ledger resolve', ['op-1', '--resend-with', params]],
    ['ledger resolve', ['op-1', '--resume', '--db', join(dir, 'missing.db')]],
    ['ledger resolve-all', ['--resume']],
    ['ledger resolve-all', ['--resume', '--dry-run']],
    ['ledger resolve-all', ['--resume', '--db', join(dir, 'missing.db')]],
    ['ledger prune', ['--older-than', '3650d', '--dry-run']],
  ])('%s %s', async (command, args) => {
    let err = '';
    await main([...command.split(' '), ...args, '--config', config], { out: () => {}, err: (t) => (err += t) });
    // The command's answer is its own: a failed close is not what it reports.
    expect(err).not.toContain('close failed');
    expect(count()?.built).toBeGreaterThan(0);
    expect(count()?.closed).toBe(count()?.built);
  });
});
