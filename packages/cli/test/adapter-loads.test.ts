import { join } from 'node:path';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { main } from '../src/cli.js';
import { tempDir } from './helpers.js';

// Each built-in adapter module (and with it its vendor's SDK), recorded when a command imports it.
const imported: string[] = [];
const ADAPTERS = ['sandbox', 'stripe', 'msgraph', 'hubspot', 'slack', 'http', 'resend', 'github'];

const missing = join(tempDir('adapter-loads'), 'no-such.db');
const quiet = { out: () => {}, err: () => {}, color: false };

describe('a run that needs no adapter imports none', () => {
  // Each case on a fresh module registry: a module one case imported is imported again (and recorded) by the next.
  beforeEach(() => {
    imported.length = 0;
    vi.resetModules();
    for (const name of ADAPTERS)
      vi.doMock(name === 'sandbox' ? '@retrysafe/sandbox' : `@retrysafe/${name}/sandbox`, async (original) => {
        imported.push(name);
        return original();
      });
  });
  it.each([
    ['ledger prune --help'],
    ['cards --help'],
    ['drill --help'],
    [`ledger prune --older-than 30d --db ${missing}`],
    [`ledger prune --older-than 30d --db ${missing} --schema app`],
    ['ledger prune --older-than 30d --db postgres://u@127.0.0.1:9/x --busy-timeout 5'],
    ['ledger prune --older-than 30d --db mysql://u@127.0.0.1/x'],
    ['cards --dir x'],
    ['drill --json --details'],
  ])('%s', async (line) => {
    await main(line.split(' '), quiet);
    expect(imported).toEqual([]);
  });

  it('one that needs one imports that one only: cards --adapter stripe', async () => {
    await main(['cards', '--adapter', 'stripe'], quiet);
    expect(imported).toEqual(['stripe']);
  });
});
