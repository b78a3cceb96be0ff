// A write that fails once its file is open (a full disk: /dev/full) is a file that cannot be written: one line and
// exit 2, as the README promises, never a stack trace; it names the file, though Node's error of such a write has no path.
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { main } from '../src/cli.js';
import { tempDir } from './helpers.js';

async function run(argv: string[]) {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => (out += t), err: (t) => (err += t), color: false });
  return { code, out, err };
}

const full = (path: string) => `retrysafe: cannot write ${path}: no space left on the device (ENOSPC)`;

describe.runIf(process.platform === 'linux')('a full disk while the CLI writes a file', () => {
  it('ledger export --out', async () => {
    const db = join(tempDir('disk-full'), 'retrysafe.db');
    const ledger = createSqliteLedger({ path: db });
    const sandbox = createSandboxAdapter({ provider: createSandboxProvider(REPLAYING_BEHAVIOUR) });
    await createRunner({ ledger }).run(sandbox, 'records.create', { params: { ref: 'order-1' } });
    await ledger.close();
    expect(await run(['ledger', 'export', '--db', db, '--out', '/dev/full'])).toEqual({
      code: 2,
      out: '',
      err: full('/dev/full'),
    });
    const json = await run(['ledger', 'export', '--db', db, '--out', '/dev/full', '--json']);
    expect(JSON.parse(json.out).error.code).toBe('FILE_SYSTEM');
  });

  it('drill --out (its junit.xml)', async () => {
    const out = tempDir('disk-full-drill');
    symlinkSync('/dev/full', join(out, 'junit.xml'));
    const r = await run(['drill', '--adapter', 'sandbox', '--scenario', 'permanent-error', '--out', out]);
    expect(r.code).toBe(2);
    expect(r.err.endsWith(full(join(out, 'junit.xml')))).toBe(true);
    expect(r.err).not.toMatch(/^\s+at /m);
  });
});
