import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../src/cli.js';
import { ledgerWithOneClaim, tempDir } from './helpers.js';

// Each open of a SQLite ledger and each read of a config, counted as the commands make them.
const count = { opened: 0, closed: 0, configs: 0 };
vi.mock('@retrysafe/ledger-sqlite', async (original) => {
  const real = await original<typeof import('@retrysafe/ledger-sqlite')>();
  return {
    ...real,
    createSqliteLedger: (...args: Parameters<typeof real.createSqliteLedger>) => {
      const ledger = real.createSqliteLedger(...args);
      count.opened++;
      const close = ledger.close.bind(ledger);
      return Object.assign(ledger, { close: () => (count.closed++, close()) });
    },
  };
});
vi.mock('@retrysafe/config', async (original) => {
  const real = await original<typeof import('@retrysafe/config')>();
  return { ...real, loadConfigFile: (file: string) => (count.configs++, real.loadConfigFile(file)) };
});

const dir = tempDir('open-once');
const db = join(dir, 'retrysafe.db');
const config = join(dir, 'retrysafe.json');

beforeAll(async () => {
  await ledgerWithOneClaim(db, 'op-1');
  const module = join(import.meta.dirname, 'fixtures', 'counting-adapter.mjs');
  writeFileSync(
    config,
    JSON.stringify({ ledger: db, adapters: { counted: { module, options: { baseUrl: 'http://127.0.0.1:9' } } } }),
  );
});

const quiet = { out: () => {}, err: () => {}, color: false };

describe('a command opens its ledger and reads its config once, and closes the ledger on every path', () => {
  it.each([
    ['ledger ls', []],
    ['ledger show', ['op-1']],
    ['ledger show', ['no-such-op']],
    ['ledger verify', ['--all']],
    ['ledger export', []],
    ['ledger handoffs', []],
    ['ledger verify', ['no-such-op']],
    ['ledger prune', ['--older-than', '3650d', '--dry-run']],
    ['ledger prune', ['--older-than', '1h']], // refused below the cards' floor, once the ledger is open
    ['ledger resolve', ['op-1', '--abandon']],
    ['ledger resolve', ['no-such-op', '--mark-done', 'r1']],
    ['ledger resolve-all', ['--abandon', '--dry-run']],
  ])('%s %s', async (command, args) => {
    Object.assign(count, { opened: 0, closed: 0, configs: 0 });
    await main([...command.split(' '), ...args, '--config', config], quiet);
    expect(count).toEqual({ opened: 1, closed: 1, configs: 1 });
  });
});
